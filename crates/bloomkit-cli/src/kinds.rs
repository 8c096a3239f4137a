//! The filter kinds the CLI knows, one entry each: what `--kind` accepts, what `size` prints,
//! and how `build` makes each kind. A new kind is one more entry in [`KINDS`] (and its fields
//! in `commands/info.rs`).

use bloomkit::sizing::{self, Plan};
use bloomkit::{
    AgingBloomFilter, AnyFilter, BinaryFuseFilter, CuckooFilter, FilterKind, RibbonFilter,
    ScalableBloomFilter,
};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

/// One filter kind, as the command line offers it.
pub struct Kind {
    /// Its name on the command line, and in files (the library's [`FilterKind::name`]) for
    /// the kinds `build` writes.
    pub name: &'static str,
    /// One line on what it is for: `--kind`'s help.
    pub about: &'static str,
    /// How `build` makes it; `None` for a kind `build` does not offer.
    pub build: Option<Build>,
    /// Its size for `items` keys at a target rate, computed without allocating the filter.
    pub size: fn(items: u64, fp_rate: f64) -> bloomkit::Result<Size>,
    /// What `size` says below its table about this kind's row.
    pub size_note: &'static str,
}

/// How `build` fills a kind with keys.
pub enum Build {
    /// Key by key with the kind's own insert ([`AnyFilter::insert_hash`]) into
    /// `new(items, fp_rate)`; `repeats` says what a repeated line does.
    Insert {
        /// An empty filter for `items` keys at `fp_rate`.
        new: fn(items: u64, fp_rate: f64) -> bloomkit::Result<AnyFilter>,
        /// What a repeated line does.
        repeats: Repeats,
    },
    /// Solved from all distinct key hashes at once (sorted), so it needs them all in memory.
    Solve(fn(hashes: &[u64], fp_rate: f64) -> bloomkit::Result<AnyFilter>),
    /// An [`AgingBloomFilter`] of this many generations, filled in input order, oldest
    /// generation first, each holding an equal share of the lines.
    Generations(u32),
}

/// What inserting a key that is already there does to a kind, which decides how `build`
/// sizes it from the keys it read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Repeats {
    /// Nothing: a set (classic, blocked, scalable). Sized for the distinct keys.
    Ignored,
    /// Counted, but in counters the key already has: sized for the distinct keys, and every
    /// line inserted, so each copy takes a removal (counting).
    Counted,
    /// Stored: each copy takes a slot, so sized for every line (cuckoo).
    Stored,
}

/// What `size` prints for a kind.
pub struct Size {
    /// Bits of memory (a cuckoo filter's include its few bytes of bookkeeping).
    pub num_bits: u64,
    /// Hash probes per key, for the Bloom kinds.
    pub num_hashes: Option<u32>,
    /// The false-positive rate predicted with `items` keys.
    pub fp_rate: f64,
}

impl Size {
    fn of_plan(plan: Plan) -> Self {
        Size {
            num_bits: plan.num_bits,
            num_hashes: Some(plan.num_hashes),
            fp_rate: plan.fp_rate,
        }
    }
}

/// The kinds, in the order `size` prints them.
pub static KINDS: [Kind; 10] = [
    Kind {
        name: "classic",
        about: "probes anywhere in the bit array: the smallest Bloom filter for its rate",
        build: Some(Build::Insert {
            new: |n, p| AnyFilter::new(FilterKind::Classic, n, p),
            repeats: Repeats::Ignored,
        }),
        size: |n, p| sizing::classic_plan(n, p).map(Size::of_plan),
        size_note: "",
    },
    Kind {
        name: "blocked",
        about: "all probes of a key in one 64-byte cache line: one cache miss per query",
        build: Some(Build::Insert {
            new: |n, p| AnyFilter::new(FilterKind::Blocked, n, p),
            repeats: Repeats::Ignored,
        }),
        size: |n, p| sizing::blocked_plan(n, p).map(Size::of_plan),
        size_note: "",
    },
    Kind {
        name: "sector",
        about: "blocked, with the same bits in each word of the line: the cheapest inserts",
        build: Some(Build::Insert {
            new: |n, p| AnyFilter::new(FilterKind::Sector, n, p),
            repeats: Repeats::Ignored,
        }),
        size: |n, p| sizing::sector_plan(n, p).map(Size::of_plan),
        size_note: "",
    },
    Kind {
        name: "atomic",
        about: "blocked with atomic words, so that threads insert at once (library only)",
        // Stored as the blocked filter it is: `build --kind blocked` writes the same file.
        build: None,
        size: |n, p| sizing::blocked_plan(n, p).map(Size::of_plan),
        size_note: "blocked with atomic words: threads insert at once (library only)",
    },
    Kind {
        name: "counting",
        about: "4-bit counters instead of bits: keys can be removed (about 4× the memory)",
        build: Some(Build::Insert {
            new: |n, p| AnyFilter::new(FilterKind::Counting, n, p),
            repeats: Repeats::Counted,
        }),
        // The classic filter's bits, each a 4-bit counter.
        size: |n, p| {
            let plan = sizing::classic_plan(n, p)?;
            Ok(Size {
                num_bits: plan.num_bits.saturating_mul(4),
                ..Size::of_plan(plan)
            })
        },
        size_note: "a 4-bit counter for each of classic's bits, so keys can be removed",
    },
    Kind {
        name: "scalable",
        about: "a chain of growing blocked layers: no need to know the number of keys",
        build: Some(Build::Insert {
            new: |n, p| AnyFilter::new(FilterKind::Scalable, n, p),
            repeats: Repeats::Ignored,
        }),
        // Planned for `n`, it holds them in its first layer, at the first layer's rate.
        size: |n, p| {
            let first_rate = ScalableBloomFilter::new(1, p)?
                .layers()
                .next()
                .map_or(p, |layer| layer.fp_rate);
            sizing::blocked_plan(n, first_rate).map(Size::of_plan)
        },
        size_note: "its first layer, at half the rate; layers it adds are ever larger",
    },
    Kind {
        name: "cuckoo",
        about: "fingerprints in buckets: removable and countable, smaller below about 3%",
        build: Some(Build::Insert {
            new: |n, p| AnyFilter::new(FilterKind::Cuckoo, n, p),
            repeats: Repeats::Stored,
        }),
        size: cuckoo_size,
        size_note: "the rate is at most this (a table full to its last slot)",
    },
    Kind {
        name: "ribbon",
        about: "static, solved from all keys at once: the smallest (≈7.3 bits/key for 0.78%)",
        build: Some(Build::Solve(|hashes, p| {
            RibbonFilter::build_from_hashes(hashes, p).map(AnyFilter::from)
        })),
        size: |n, p| {
            Ok(Size {
                num_bits: RibbonFilter::planned_bits(n, p)?,
                num_hashes: None,
                fp_rate: RibbonFilter::build_from_hashes(&[], p)?.fp_rate(),
            })
        },
        size_note: "static, built from all keys at once; its rate is a power of two",
    },
    Kind {
        name: "fuse",
        about: "static, built from all keys at once: the fastest queries (9 bits/key for 0.39%)",
        build: Some(Build::Solve(|hashes, p| {
            BinaryFuseFilter::build_from_hashes(hashes, p).map(AnyFilter::from)
        })),
        size: |n, p| {
            let bits = BinaryFuseFilter::fingerprint_bits_for(p)?;
            Ok(Size {
                num_bits: BinaryFuseFilter::planned_bits(n, bits)?,
                num_hashes: None,
                fp_rate: (-f64::from(bits)).exp2(),
            })
        },
        size_note: "static, built from all keys; 8-bit fingerprints (2^-8) down to 0.39%, else 16",
    },
    Kind {
        name: "aging",
        about: "generations of blocked filters that rotate out: \"seen recently\"",
        build: Some(Build::Generations(AgingBloomFilter::DEFAULT_GENERATIONS)),
        size: aging_size,
        size_note: "2 generations of half the keys each; each rotation forgets the older",
    },
];

/// A cuckoo filter's size: its planned bytes, and the rate of its fingerprints in a full
/// table, the most it can reach (1 − (1 − 1/(2^f − 1))^(2b), the model of
/// [`CuckooFilter::estimated_fp_rate`]).
fn cuckoo_size(items: u64, fp_rate: f64) -> bloomkit::Result<Size> {
    let bytes = CuckooFilter::builder(items, fp_rate).planned_memory_bytes()?;
    // The fingerprint and bucket sizes depend on the rate alone: a one-key filter has them.
    let shape = CuckooFilter::new(1, fp_rate)?;
    let slot_match = 1.0 / ((1u64 << shape.fingerprint_bits()) - 1) as f64;
    let probed = 2.0 * f64::from(shape.bucket_size());
    Ok(Size {
        num_bits: (bytes as u64).saturating_mul(8),
        num_hashes: None,
        fp_rate: 1.0 - (1.0 - slot_match).powf(probed),
    })
}

/// An aging filter's size for a window of `items` keys: each generation sized for its share
/// at the rate that makes the whole meet the target, as `build` makes it.
fn aging_size(items: u64, fp_rate: f64) -> bloomkit::Result<Size> {
    let generations = AgingBloomFilter::DEFAULT_GENERATIONS;
    let plan = sizing::blocked_plan(
        aging_generation_items(items, generations),
        AgingBloomFilter::generation_fp_rate(fp_rate, generations)?,
    )?;
    Ok(Size {
        num_bits: plan.num_bits.saturating_mul(u64::from(generations)),
        num_hashes: Some(plan.num_hashes),
        // A query is a false positive if any generation says "maybe".
        fp_rate: 1.0 - (1.0 - plan.fp_rate).powi(generations as i32),
    })
}

/// The keys each generation of an aging filter holds when the window holds `items`.
pub fn aging_generation_items(items: u64, generations: u32) -> u64 {
    items.div_ceil(u64::from(generations.max(1))).max(1)
}

impl Kind {
    /// The kind named `name`, if there is one.
    pub fn named(name: &str) -> Option<&'static Kind> {
        KINDS.iter().find(|kind| kind.name == name)
    }
}

/// `--kind`'s parser: the kinds `build` offers, with their help.
pub fn build_kind_parser() -> impl TypedValueParser<Value = &'static Kind> {
    PossibleValuesParser::new(
        KINDS
            .iter()
            .filter(|kind| kind.build.is_some())
            .map(|kind| PossibleValue::new(kind.name).help(kind.about)),
    )
    // The parser accepts only the names listed, so the lookup finds one; blocked is the
    // default were it ever not to.
    .map(|name| Kind::named(&name).unwrap_or(&KINDS[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_kinds_are_the_librarys_kinds() {
        for kind in KINDS.iter().filter(|k| k.build.is_some()) {
            let file_kind = (1..=u16::MAX)
                .map_while(FilterKind::from_code)
                .find(|k| k.name() == kind.name);
            assert!(file_kind.is_some(), "{} is not a file kind", kind.name);
        }
        assert_eq!(KINDS[1].name, "blocked");
    }

    #[test]
    fn sizes_match_what_build_makes() {
        let (n, p) = (10_000, 0.01);
        for kind in &KINDS {
            let size = (kind.size)(n, p).unwrap();
            // The classic plan rounds its probes, which may leave it a hair above the target.
            assert!(
                size.fp_rate > 0.0 && size.fp_rate <= p * 1.01,
                "{}: {}",
                kind.name,
                size.fp_rate
            );
            let Some(Build::Insert { new, .. }) = &kind.build else {
                continue;
            };
            let filter = new(n, p).unwrap();
            let bits = match &filter {
                AnyFilter::Classic(f) => f.num_bits(),
                AnyFilter::Blocked(f) => f.num_bits(),
                AnyFilter::Sector(f) => f.num_bits(),
                AnyFilter::Counting(f) => f.num_counters() * 4,
                AnyFilter::Scalable(f) => f.num_bits(),
                AnyFilter::Cuckoo(f) => f.memory_bytes() as u64 * 8,
                other => panic!("{}", other.kind()),
            };
            assert_eq!(size.num_bits, bits, "{}", kind.name);
        }
        let ribbon = (Kind::named("ribbon").unwrap().size)(n, p).unwrap();
        let hashes: Vec<u64> = (0..n).map(|i| bloomkit::hash(&i)).collect();
        assert_eq!(
            ribbon.num_bits,
            RibbonFilter::build_from_hashes(&hashes, p)
                .unwrap()
                .num_bits()
        );
        let fuse = (Kind::named("fuse").unwrap().size)(n, p).unwrap();
        assert_eq!(
            fuse.num_bits,
            BinaryFuseFilter::build_from_hashes(&hashes, 0.01)
                .unwrap()
                .num_slots()
                * 8
        );
        let aging = (Kind::named("aging").unwrap().size)(n, p).unwrap();
        let f = AgingBloomFilter::new(n / 2, p).unwrap();
        assert_eq!(aging.num_bits, f.num_bits());
    }
}
