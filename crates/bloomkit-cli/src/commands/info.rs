//! `bloomkit info`: what a filter file holds.

use std::path::Path;

use bloomkit::sizing;

use crate::error::Result;
use crate::{files, human, output};

/// Prints the filter's parameters and statistics, one `name: value` per line.
///
/// # Errors
///
/// An unreadable filter, or a failed write to stdout.
pub fn run(path: &Path) -> Result<()> {
    let loaded = files::load_filter(path)?;
    let f = &loaded.filter;
    let memory = f.memory_bytes() as u64;
    let mut fields: Vec<(&str, String)> = vec![
        ("file", path.display().to_string()),
        ("kind", f.kind().to_string()),
        (
            "format version",
            format!(
                "{} (this build writes {})",
                loaded.format_version,
                bloomkit::format::FORMAT_VERSION
            ),
        ),
        // The format has one hash algorithm so far; a file naming another fails to load.
        (
            "hash",
            format!(
                "XXH3-64, seed {:#018x}{}",
                f.seed(),
                if f.seed() == bloomkit::DEFAULT_SEED {
                    " (the default)"
                } else {
                    ""
                }
            ),
        ),
        (
            "bytes on disk",
            format!(
                "{} ({} bytes)",
                human::bytes(loaded.file_bytes),
                human::count(loaded.file_bytes)
            ),
        ),
        (
            "bytes in memory",
            format!("{} ({} bytes)", human::bytes(memory), human::count(memory)),
        ),
        (
            "keys",
            format!("{} (by the filter's own count)", human::count(f.len())),
        ),
        (
            "bits per key",
            if f.is_empty() {
                "- (the filter is empty)".to_string()
            } else {
                format!("{:.2}", sizing::bits_per_key(memory * 8, f.len()))
            },
        ),
        (
            "estimated false-positive rate",
            human::percent_sig(f.estimated_fp_rate()),
        ),
    ];
    // Then what only this kind has: bits and hashes, layers, buckets, generations...
    fields.extend(f.parameters());
    let width = fields.iter().map(|(name, _)| name.len()).max().unwrap_or(0) + 1;
    let mut text = String::new();
    for (name, value) in fields {
        text.push_str(&format!("{:<width$} {value}\n", format!("{name}:")));
    }
    output::print(&text)
}
