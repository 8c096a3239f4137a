//! `bloomkit info`: what a filter file holds, as `name: value` lines or one JSON object.

use std::path::Path;

use bloomkit::{AnyFilter, FilterKind, LayerLayout};

use crate::error::Result;
use crate::{files, human, output};
use bloomkit_lab::json::Json;

/// Prints the filter's parameters and statistics: one `name: value` per line, or with
/// `json` one JSON object on one line.
///
/// # Errors
///
/// An unreadable filter, or a failed write to stdout.
pub fn run(path: &Path, json: bool) -> Result<()> {
    let fields = match files::load_readable(path)? {
        files::Readable::Library(loaded) => {
            let mut fields = common_fields(path, &loaded);
            // Then what only this kind has: bits and hashes, layers, buckets, generations...
            fields.extend(kind_fields(&loaded.filter));
            fields
        }
        files::Readable::Imported {
            filter,
            format_version,
            file_bytes,
        } => imported_fields(path, &filter, format_version, file_bytes),
    };
    if json {
        output::print(&format!("{}\n", to_json(&fields).to_text()))
    } else {
        output::print(&to_text(&fields))
    }
}

/// One line of `info`, and one member of its JSON object.
struct Field {
    /// Its name in the text: `bytes on disk`.
    label: &'static str,
    /// Its name in JSON: `bytes_on_disk`.
    key: &'static str,
    value: Value,
    /// What the text adds in parentheses (JSON leaves it out: it has the fields).
    note: Option<String>,
}

/// A field's value, which decides how it reads in each form.
enum Value {
    Text(String),
    /// A count, with separators in the text.
    Count(u64),
    /// A size in bytes: `3.80 KiB (3,892 bytes)` in the text.
    Bytes(u64),
    /// A fraction shown as a percentage in the text (a rate, a fill); the fraction in JSON.
    Fraction(f64),
    /// A number with two decimals in the text.
    Number(f64),
    /// A 64-bit value in hexadecimal, a string in JSON (JSON numbers lose precision past
    /// 2^53).
    Hex(u64),
    /// No value, and why: `-` in the text, `null` in JSON.
    Missing(&'static str),
    /// A list of records (a scalable filter's layers): one line each in the text, named by
    /// the field's label; an array of objects in JSON.
    Rows(Vec<Vec<Field>>),
}

fn field(label: &'static str, key: &'static str, value: Value) -> Field {
    Field {
        label,
        key,
        value,
        note: None,
    }
}

impl Field {
    fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }
}

/// The first fields of every file: file, kind, format version.
fn file_fields(path: &Path, kind: FilterKind, format_version: u16) -> Vec<Field> {
    let stdin_note = files::is_dash(path).then(|| "standard input".to_string());
    vec![
        Field {
            note: stdin_note,
            ..field("file", "file", Value::Text(path.display().to_string()))
        },
        field("kind", "kind", Value::Text(kind.to_string())),
        field(
            "format version",
            "format_version",
            Value::Count(u64::from(format_version)),
        )
        .note(format!(
            "this build writes {}",
            bloomkit::format::FORMAT_VERSION
        )),
    ]
}

/// Sizes and the key count, after the hash.
fn size_fields(file_bytes: u64, memory: u64, keys: u64) -> Vec<Field> {
    vec![
        field("bytes on disk", "bytes_on_disk", Value::Bytes(file_bytes)),
        field("bytes in memory", "bytes_in_memory", Value::Bytes(memory)),
        field("keys", "keys", Value::Count(keys)).note("by the filter's own count"),
    ]
}

/// What a filter imported from RedisBloom (`bloomkit copy` of a RedisBloom key) shows: its
/// parameters as RedisBloom's `BF.INFO`/`CF.INFO` name them.
fn imported_fields(
    path: &Path,
    filter: &files::Imported,
    format_version: u16,
    file_bytes: u64,
) -> Vec<Field> {
    use Value::{Count, Fraction, Rows, Text};
    let mut fields = file_fields(path, filter.kind(), format_version);
    fields.push(field(
        "hash",
        "hash",
        Text("MurmurHash64A (RedisBloom's)".to_string()),
    ));
    match filter {
        files::Imported::Chain(f) => {
            fields.extend(size_fields(file_bytes, f.memory_bytes() as u64, f.len()));
            let layers = f
                .links()
                .iter()
                .map(|l| {
                    vec![
                        field("keys", "keys", Count(l.len())),
                        field("capacity", "capacity", Count(l.entries())),
                        field("bits", "bits", Count(l.bits())),
                        field("hashes", "hashes", Count(l.num_hashes().into())),
                        field("planned rate", "planned_fp_rate", Fraction(l.error())),
                    ]
                })
                .collect();
            fields.push(field("capacity", "capacity", Count(f.capacity())));
            fields.push(if f.is_scaling() {
                field("expansion", "expansion", Count(f.expansion().into()))
            } else {
                field("expansion", "expansion", Value::Missing("non-scaling"))
            });
            fields.push(field("layer", "layers", Rows(layers)));
        }
        files::Imported::Cuckoo(f) => {
            fields.extend(size_fields(file_bytes, f.memory_bytes() as u64, f.len()));
            fields.extend([
                field("buckets", "buckets", Count(f.num_buckets())),
                field("bucket size", "bucket_size", Count(f.bucket_size().into())),
                field("sub-filters", "sub_filters", Count(f.num_filters() as u64)),
                field("deleted", "deleted", Count(f.num_deletes())),
                field("expansion", "expansion", Count(f.expansion().into())),
                field(
                    "max iterations",
                    "max_iterations",
                    Count(f.max_iterations().into()),
                ),
            ]);
        }
    }
    fields
}

/// What every filter file has.
fn common_fields(path: &Path, loaded: &files::LoadedFilter) -> Vec<Field> {
    let f = &loaded.filter;
    let memory = f.memory_bytes() as u64;
    let seed_note = (f.seed() == bloomkit::DEFAULT_SEED).then(|| "the default".to_string());
    let mut fields = file_fields(path, f.kind(), loaded.format_version);
    fields.extend([
        // The library's kinds hash with XXH3-64; a file naming another fails to load.
        field("hash", "hash", Value::Text("XXH3-64".to_string())),
        Field {
            note: seed_note,
            ..field("seed", "seed", Value::Hex(f.seed()))
        },
    ]);
    fields.extend(size_fields(loaded.file_bytes, memory, f.len()));
    fields.extend([
        field(
            "bits per key",
            "bits_per_key",
            if f.is_empty() {
                Value::Missing("the filter is empty")
            } else {
                Value::Number(bloomkit::sizing::bits_per_key(memory * 8, f.len()))
            },
        ),
        field(
            "estimated false-positive rate",
            "estimated_fp_rate",
            Value::Fraction(f.estimated_fp_rate()),
        ),
    ]);
    fields
}

/// What only this kind has.
fn kind_fields(filter: &AnyFilter) -> Vec<Field> {
    use Value::{Count, Fraction, Number, Rows, Text};
    match filter {
        AnyFilter::Classic(f) => bloom_fields(
            f.num_bits(),
            f.num_hashes(),
            f.fill_ratio(),
            f.estimated_count(),
        ),
        AnyFilter::Blocked(f) => bloom_fields(
            f.num_bits(),
            f.num_hashes(),
            f.fill_ratio(),
            f.estimated_count(),
        ),
        AnyFilter::Sector(f) => bloom_fields(
            f.num_bits(),
            f.num_hashes(),
            f.fill_ratio(),
            f.estimated_count(),
        ),
        AnyFilter::Counting(f) => vec![
            field("counters", "counters", Count(f.num_counters())).note("4 bits each"),
            field("hashes", "hashes", Count(f.num_hashes().into())),
            field(
                "nonzero counters",
                "nonzero_counters",
                Count(f.count_nonzero()),
            ),
            field(
                "saturated counters",
                "saturated_counters",
                Count(f.count_saturated()),
            ),
        ],
        AnyFilter::Scalable(f) => {
            let layers = f
                .layers()
                .map(|l| {
                    vec![
                        field("keys", "keys", Count(l.inserted)),
                        field("capacity", "capacity", Count(l.capacity)),
                        field("bits", "bits", Count(l.num_bits)),
                        field("hashes", "hashes", Count(l.num_hashes.into())),
                        field("planned rate", "planned_fp_rate", Fraction(l.fp_rate)),
                    ]
                })
                .collect();
            vec![
                field("capacity", "capacity", Count(f.capacity())),
                field(
                    "initial capacity",
                    "initial_capacity",
                    Count(f.initial_capacity()),
                ),
                field("target rate", "target_fp_rate", Fraction(f.fp_rate())),
                if f.is_scaling() {
                    field("expansion", "expansion", Count(f.expansion().into()))
                        .note("each layer's capacity over the last's")
                } else {
                    field("expansion", "expansion", Value::Missing("non-scaling"))
                },
                field("tightening", "tightening", Number(f.tightening()))
                    .note("each layer's rate over the last's"),
                field(
                    "layer layout",
                    "layer_layout",
                    Text(
                        match f.layout() {
                            LayerLayout::Classic => "classic",
                            LayerLayout::Blocked => "blocked",
                            _ => "one newer than this build",
                        }
                        .to_string(),
                    ),
                ),
                field("layers", "num_layers", Count(f.num_layers() as u64)),
                field("layer", "layers", Rows(layers)),
            ]
        }
        AnyFilter::Cuckoo(f) => vec![
            field("capacity", "capacity", Count(f.capacity())),
            field("buckets", "buckets", Count(f.num_buckets())),
            field("bucket size", "bucket_size", Count(f.bucket_size().into())),
            field(
                "fingerprint bits",
                "fingerprint_bits",
                Count(f.fingerprint_bits().into()),
            ),
            field("sub-filters", "sub_filters", Count(f.num_filters() as u64)),
            field(
                "max sub-filters",
                "max_sub_filters",
                Count(f.max_filters().into()),
            ),
            field("expansion", "expansion", Count(f.expansion().into())),
            field("max kicks", "max_kicks", Count(f.max_kicks().into())),
            field("load", "load", Fraction(f.load_factor())),
            field("deletes", "deletes", Count(f.num_deletes())),
        ],
        // Its bits per key beside the common field's would only differ by the few bytes of
        // bookkeeping, so the solution's size is given in bits instead.
        AnyFilter::Ribbon(f) => vec![
            field("slots", "slots", Count(f.num_slots())),
            field("result bits", "result_bits", Count(f.result_bits().into())),
            field("bits", "bits", Count(f.num_bits())),
        ],
        AnyFilter::Fuse(f) => vec![
            field("slots", "slots", Count(f.num_slots())),
            field(
                "fingerprint bits",
                "fingerprint_bits",
                Count(f.fingerprint_bits().into()),
            ),
            field(
                "segment length",
                "segment_length",
                Count(f.segment_length().into()),
            ),
            field("segments", "segments", Count(f.segment_count().into())),
            field("fuse seed", "fuse_seed", Count(f.fuse_seed().into())),
        ],
        AnyFilter::Aging(f) => {
            let generations = (0..f.num_generations() as usize)
                .filter_map(|age| f.generation(age).map(|g| (age, g)))
                .map(|(age, g)| {
                    vec![
                        field("age", "age", Count(age as u64)),
                        field("keys", "keys", Count(g.len())),
                        field("fill", "fill", Fraction(g.fill_ratio())),
                    ]
                })
                .collect();
            vec![
                field(
                    "generations",
                    "num_generations",
                    Count(f.num_generations().into()),
                )
                .note("age 0 is the newest, which takes the inserts"),
                field(
                    "bits per generation",
                    "bits_per_generation",
                    Count(f.num_bits_per_generation()),
                ),
                field("hashes", "hashes", Count(f.num_hashes().into())),
                field("generation", "generations", Rows(generations)),
            ]
        }
        // A kind newer than this command: the common fields describe it.
        _ => Vec::new(),
    }
}

/// A classic or blocked filter's own fields.
fn bloom_fields(num_bits: u64, num_hashes: u32, fill: f64, estimated_count: u64) -> Vec<Field> {
    vec![
        field("bits", "bits", Value::Count(num_bits)),
        field("hashes", "hashes", Value::Count(num_hashes.into())),
        field("fill", "fill", Value::Fraction(fill)),
        field(
            "estimated count",
            "estimated_count",
            Value::Count(estimated_count),
        ),
    ]
}

/// The fields as `name: value` lines, the values aligned.
fn to_text(fields: &[Field]) -> String {
    let width = fields.iter().map(|f| f.label.len()).max().unwrap_or(0) + 1;
    let mut text = String::new();
    for f in fields {
        let label = format!("{}:", f.label);
        let note = f
            .note
            .as_ref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        match &f.value {
            Value::Rows(rows) => {
                for row in rows {
                    let cells: Vec<String> = row
                        .iter()
                        .map(|cell| format!("{} {}", cell.label, text_value(&cell.value)))
                        .collect();
                    text.push_str(&format!("{label:<width$} {}{note}\n", cells.join(", ")));
                }
            }
            value => text.push_str(&format!("{label:<width$} {}{note}\n", text_value(value))),
        }
    }
    text
}

fn text_value(value: &Value) -> String {
    match value {
        Value::Text(s) => s.clone(),
        Value::Count(n) => human::count(*n),
        Value::Bytes(n) => format!("{} ({} bytes)", human::bytes(*n), human::count(*n)),
        Value::Fraction(x) => human::percent_sig(*x),
        Value::Number(x) => format!("{x:.2}"),
        Value::Hex(n) => format!("{n:#018x}"),
        Value::Missing(why) => format!("- ({why})"),
        Value::Rows(rows) => format!("{} rows", rows.len()),
    }
}

/// The fields as one JSON object.
fn to_json(fields: &[Field]) -> Json {
    Json::Object(
        fields
            .iter()
            .map(|f| (f.key.to_string(), json_value(&f.value)))
            .collect(),
    )
}

fn json_value(value: &Value) -> Json {
    match value {
        Value::Text(s) => Json::Str(s.clone()),
        Value::Count(n) | Value::Bytes(n) => Json::Int(*n),
        Value::Fraction(x) | Value::Number(x) => Json::Float(*x),
        Value::Hex(n) => Json::Str(format!("{n:#018x}")),
        Value::Missing(_) => Json::Null,
        Value::Rows(rows) => Json::Array(rows.iter().map(|row| to_json(row)).collect()),
    }
}
