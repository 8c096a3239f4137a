//! [`Kind`]: the kinds of filter an experiment builds, by the names the page and CLI use.

use std::fmt;

use bloomkit::FilterKind;

/// The kinds of filter an experiment can build: every kind the library has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// [`bloomkit::BloomFilter`].
    Classic,
    /// [`bloomkit::BlockedBloomFilter`].
    Blocked,
    /// [`bloomkit::SectorBloomFilter`].
    Sector,
    /// [`bloomkit::AtomicBloomFilter`].
    Atomic,
    /// [`bloomkit::CountingBloomFilter`].
    Counting,
    /// [`bloomkit::ScalableBloomFilter`].
    Scalable,
    /// [`bloomkit::CuckooFilter`].
    Cuckoo,
    /// [`bloomkit::RibbonFilter`].
    Ribbon,
    /// [`bloomkit::BinaryFuseFilter`].
    Fuse,
    /// [`bloomkit::AgingBloomFilter`].
    Aging,
}

impl Kind {
    /// Every kind, in the order the page and the CLI list them.
    pub const ALL: [Kind; 10] = [
        Kind::Blocked,
        Kind::Sector,
        Kind::Classic,
        Kind::Atomic,
        Kind::Counting,
        Kind::Scalable,
        Kind::Cuckoo,
        Kind::Ribbon,
        Kind::Fuse,
        Kind::Aging,
    ];

    /// The kind's name, as the CLI's `--kind` and the page spell it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Classic => "classic",
            Kind::Blocked => "blocked",
            Kind::Sector => "sector",
            Kind::Atomic => "atomic",
            Kind::Counting => "counting",
            Kind::Scalable => "scalable",
            Kind::Cuckoo => "cuckoo",
            Kind::Ribbon => "ribbon",
            Kind::Fuse => "fuse",
            Kind::Aging => "aging",
        }
    }

    /// The kind named `name`, if any.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// What the kind is, in one line.
    pub fn summary(self) -> &'static str {
        match self {
            Kind::Classic => "probes anywhere in one bit array: the fewest bits for a Bloom filter",
            Kind::Blocked => "all probes of a key in one 512-bit line: one cache miss per query",
            Kind::Sector => "blocked, with the same bits in each 64-bit word: the cheapest inserts",
            Kind::Atomic => "blocked, with atomic words: many threads insert at once",
            Kind::Counting => "4-bit counters instead of bits: keys can be removed",
            Kind::Scalable => "a chain of layers that grows past the planned keys",
            Kind::Cuckoo => "fingerprints in buckets: removable; refuses keys once full",
            Kind::Ribbon => "static, solved from all its keys at once: the smallest",
            Kind::Fuse => "static, built from all its keys at once: the fastest queries",
            Kind::Aging => "two generations of blocked filters; the older rotates out",
        }
    }

    /// The kind as stored in a filter file's header (an atomic filter is stored as blocked).
    pub fn file_kind(self) -> FilterKind {
        match self {
            Kind::Classic => FilterKind::Classic,
            Kind::Blocked | Kind::Atomic => FilterKind::Blocked,
            Kind::Sector => FilterKind::Sector,
            Kind::Counting => FilterKind::Counting,
            Kind::Scalable => FilterKind::Scalable,
            Kind::Cuckoo => FilterKind::Cuckoo,
            Kind::Ribbon => FilterKind::Ribbon,
            Kind::Fuse => FilterKind::Fuse,
            Kind::Aging => FilterKind::Aging,
        }
    }

    /// `true` for a kind built once from all its keys (ribbon, fuse), which cannot be
    /// overfilled.
    pub fn is_static(self) -> bool {
        matches!(self, Kind::Ribbon | Kind::Fuse)
    }

    /// What [`Measurement::fill`](super::Measurement::fill) measures for this kind.
    pub fn fill_meaning(self) -> &'static str {
        match self {
            Kind::Classic | Kind::Blocked | Kind::Sector | Kind::Atomic => "bits set",
            Kind::Counting => "counters not zero",
            Kind::Scalable => "keys held / capacity of its layers",
            Kind::Cuckoo => "slots in use",
            Kind::Ribbon | Kind::Fuse => "keys / slots",
            Kind::Aging => "bits set in the newest generation",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_kind_has_a_kind() {
        for code in 0..=u16::from(u8::MAX) {
            // RedisBloom's kinds are imported from RedisBloom, never built in the lab.
            let file_kind = FilterKind::from_code(code)
                .filter(|k| !matches!(k, FilterKind::RedisBloomChain | FilterKind::RedisCuckoo));
            if let Some(file_kind) = file_kind {
                assert!(
                    Kind::ALL.iter().any(|k| k.file_kind() == file_kind),
                    "{file_kind:?} has no lab::Kind"
                );
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.name()), Some(k));
        }
        assert_eq!(Kind::from_name("bloom"), None);
    }
}
