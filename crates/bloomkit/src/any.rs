//! [`AnyFilter`]: a filter of whatever kind a file holds.

use std::io::{Read, Write};

use crate::error::{Error, Result};
use crate::format::{self, FilterKind, FormatReader, Persist};
use crate::key::{Key, KeyHasher};
use crate::sizing;
use crate::{
    AgingBloomFilter, BinaryFuseFilter, BlockedBloomFilter, BloomFilter, CountingBloomFilter,
    CuckooFilter, Filter, RibbonFilter, ScalableBloomFilter, SectorBloomFilter,
};

/// A filter of any kind, for code that opens files without knowing what they hold (the
/// `bloomkit` CLI, a storage engine reading filters written by several versions), or that
/// picks the kind at run time.
///
/// It answers what every kind answers (`contains`, `insert` where the kind allows it, sizes,
/// rates, the file format) and refuses, with [`Error::Unsupported`], what a kind cannot do
/// (inserting into a static ribbon or binary fuse filter, merging cuckoo filters).
///
/// # Examples
///
/// ```
/// use bloomkit::{AnyFilter, BlockedBloomFilter, FilterKind};
///
/// let mut f = BlockedBloomFilter::new(1000, 0.01)?;
/// f.insert("apple");
/// let any = AnyFilter::from_bytes(&f.to_bytes())?;
/// assert_eq!(any.kind(), FilterKind::Blocked);
/// assert!(any.contains("apple"));
///
/// // Chosen at run time; `insert` is the kind's own (a cuckoo filter holds copies):
/// let mut g = AnyFilter::new(FilterKind::Cuckoo, 1000, 0.01)?;
/// assert!(g.insert("pear")?);
/// assert!(!g.insert("pear")?); // it was there already, and now holds two copies
/// assert_eq!(g.len(), 2);
/// assert!(AnyFilter::new(FilterKind::Ribbon, 1000, 0.01).is_err()); // built from all keys
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AnyFilter {
    /// A [`BloomFilter`].
    Classic(BloomFilter),
    /// A [`BlockedBloomFilter`] (also what an [`crate::AtomicBloomFilter`] is stored as).
    Blocked(BlockedBloomFilter),
    /// A [`CountingBloomFilter`].
    Counting(CountingBloomFilter),
    /// A [`ScalableBloomFilter`].
    Scalable(ScalableBloomFilter),
    /// A [`CuckooFilter`].
    Cuckoo(CuckooFilter),
    /// A [`RibbonFilter`].
    Ribbon(RibbonFilter),
    /// An [`AgingBloomFilter`].
    Aging(AgingBloomFilter),
    /// A [`BinaryFuseFilter`].
    Fuse(BinaryFuseFilter),
    /// A [`SectorBloomFilter`].
    Sector(SectorBloomFilter),
}

/// Runs the same expression on whichever filter `self` holds.
macro_rules! each {
    ($self:expr, $f:ident => $e:expr) => {
        match $self {
            AnyFilter::Classic($f) => $e,
            AnyFilter::Blocked($f) => $e,
            AnyFilter::Counting($f) => $e,
            AnyFilter::Scalable($f) => $e,
            AnyFilter::Cuckoo($f) => $e,
            AnyFilter::Ribbon($f) => $e,
            AnyFilter::Aging($f) => $e,
            AnyFilter::Fuse($f) => $e,
            AnyFilter::Sector($f) => $e,
        }
    };
}

impl AnyFilter {
    /// An empty filter of `kind` for `items` keys at `fp_rate`, as that kind's `new` builds
    /// it. An aging filter gets [`AgingBloomFilter::DEFAULT_GENERATIONS`] generations of
    /// `items` keys each; a scalable one starts at `items` and grows.
    ///
    /// # Errors
    ///
    /// The kind's own errors, and [`Error::Unsupported`] for a ribbon or binary fuse filter,
    /// which is built from all its keys at once ([`RibbonFilter::build`],
    /// [`BinaryFuseFilter::build`]).
    pub fn new(kind: FilterKind, items: u64, fp_rate: f64) -> Result<Self> {
        Ok(match kind {
            FilterKind::Classic => AnyFilter::Classic(BloomFilter::new(items, fp_rate)?),
            FilterKind::Blocked => AnyFilter::Blocked(BlockedBloomFilter::new(items, fp_rate)?),
            FilterKind::Counting => AnyFilter::Counting(CountingBloomFilter::new(items, fp_rate)?),
            FilterKind::Scalable => AnyFilter::Scalable(ScalableBloomFilter::new(items, fp_rate)?),
            FilterKind::Cuckoo => AnyFilter::Cuckoo(CuckooFilter::new(items, fp_rate)?),
            FilterKind::Aging => AnyFilter::Aging(AgingBloomFilter::new(items, fp_rate)?),
            FilterKind::Sector => AnyFilter::Sector(SectorBloomFilter::new(items, fp_rate)?),
            FilterKind::Ribbon | FilterKind::Fuse => {
                return Err(Error::Unsupported {
                    kind,
                    operation: "building empty (it is built from all its keys at once)",
                })
            }
            FilterKind::RedisBloomChain | FilterKind::RedisCuckoo => {
                return Err(Error::Unsupported {
                    kind,
                    operation: "a place in AnyFilter (it probes with two hashes of the item's \
                                bytes; use bloomkit::redisbloom)",
                })
            }
        })
    }

    /// Reads a filter of any kind from `bytes`, which must hold exactly one.
    ///
    /// # Errors
    ///
    /// As [`BloomFilter::from_bytes`], and [`Error::UnknownKind`] for a kind this build does
    /// not know.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let (filter, rest) = Self::decode(FormatReader::new(bytes, Some(bytes.len() as u64)))?;
        format::expect_end(rest)?;
        Ok(filter)
    }

    /// Reads one filter of any kind from `reader`, consuming exactly its bytes.
    ///
    /// # Errors
    ///
    /// As [`from_bytes`](Self::from_bytes), plus [`Error::Io`] from the reader.
    pub fn read_from<R: Read>(reader: R) -> Result<Self> {
        Self::decode(FormatReader::new(reader, None)).map(|(filter, _)| filter)
    }

    fn decode<R: Read>(mut r: FormatReader<R>) -> Result<(Self, Option<u64>)> {
        let header = r.header()?;
        let h = &header;
        let filter = match FilterKind::from_code(header.kind) {
            Some(FilterKind::Classic) => AnyFilter::Classic(BloomFilter::decode(h, &mut r)?),
            Some(FilterKind::Blocked) => AnyFilter::Blocked(BlockedBloomFilter::decode(h, &mut r)?),
            Some(FilterKind::Counting) => {
                AnyFilter::Counting(CountingBloomFilter::decode(h, &mut r)?)
            }
            Some(FilterKind::Scalable) => {
                AnyFilter::Scalable(ScalableBloomFilter::decode(h, &mut r)?)
            }
            Some(FilterKind::Cuckoo) => AnyFilter::Cuckoo(CuckooFilter::decode(h, &mut r)?),
            Some(FilterKind::Ribbon) => AnyFilter::Ribbon(RibbonFilter::decode(h, &mut r)?),
            Some(FilterKind::Aging) => AnyFilter::Aging(AgingBloomFilter::decode(h, &mut r)?),
            Some(FilterKind::Fuse) => AnyFilter::Fuse(BinaryFuseFilter::decode(h, &mut r)?),
            Some(FilterKind::Sector) => AnyFilter::Sector(SectorBloomFilter::decode(h, &mut r)?),
            Some(kind @ (FilterKind::RedisBloomChain | FilterKind::RedisCuckoo)) => {
                return Err(Error::Unsupported {
                    kind,
                    operation: "a place in AnyFilter (it probes with two hashes of the item's \
                                bytes; read it with bloomkit::redisbloom)",
                })
            }
            None => return Err(Error::UnknownKind { found: header.kind }),
        };
        let rest = r.finish()?;
        Ok((filter, rest))
    }

    /// The kind of filter held.
    pub fn kind(&self) -> FilterKind {
        match self {
            AnyFilter::Classic(_) => FilterKind::Classic,
            AnyFilter::Blocked(_) => FilterKind::Blocked,
            AnyFilter::Counting(_) => FilterKind::Counting,
            AnyFilter::Scalable(_) => FilterKind::Scalable,
            AnyFilter::Cuckoo(_) => FilterKind::Cuckoo,
            AnyFilter::Ribbon(_) => FilterKind::Ribbon,
            AnyFilter::Aging(_) => FilterKind::Aging,
            AnyFilter::Fuse(_) => FilterKind::Fuse,
            AnyFilter::Sector(_) => FilterKind::Sector,
        }
    }

    /// Adds `key` as the kind's own `insert` does, so that code written against `AnyFilter`
    /// and code written against the concrete type leave the same filter behind. Returns
    /// `Ok(true)` if the key was definitely not there before, `Ok(false)` if it may have been.
    ///
    /// What "adds" means differs by kind, exactly as their own `insert`s do:
    ///
    /// | kind | a key inserted twice |
    /// |---|---|
    /// | classic, blocked | sets bits already set: nothing changes, and [`len`](Self::len) counts it once |
    /// | counting | counts two copies ([`CountingBloomFilter::insert`]): it takes two removals to go |
    /// | cuckoo | stores two copies ([`CuckooFilter::insert`]): it takes two removals to go |
    /// | scalable | is skipped the second time ([`ScalableBloomFilter::insert`]): a set |
    /// | aging | sets its bits in the newest generation ([`AgingBloomFilter::insert`]): nothing changes if it is there, and a key only an older generation holds is refreshed |
    /// | ribbon | refused: the filter is static |
    ///
    /// Counting and cuckoo filters are multisets because they support removal: were a key
    /// that only looks present (a false positive, or a copy already there) skipped, a later
    /// removal of the key it collides with would take away the only copy both relied on, and
    /// the skipped key would read as absent, a false negative.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] for a ribbon or binary fuse filter (static); [`Error::Full`] from a full
    /// cuckoo or non-scaling scalable filter; [`Error::OutOfMemory`] when a scalable filter
    /// cannot grow. The filter is unchanged after an error.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) -> Result<bool> {
        self.insert_hash(self.key_hasher().hash(key))
    }

    /// [`insert`](Self::insert) by a precomputed hash.
    ///
    /// # Errors
    ///
    /// As [`insert`](Self::insert).
    pub fn insert_hash(&mut self, hash: u64) -> Result<bool> {
        match self {
            AnyFilter::Classic(f) => Ok(f.insert_hash(hash)),
            AnyFilter::Blocked(f) => Ok(f.insert_hash(hash)),
            AnyFilter::Sector(f) => Ok(f.insert_hash(hash)),
            AnyFilter::Counting(f) => Ok(f.insert_hash(hash)),
            AnyFilter::Scalable(f) => f.insert_hash(hash),
            AnyFilter::Cuckoo(f) => {
                // The kind's own insert answers nothing; the lookup gives the same answer the
                // other kinds give.
                let was_absent = !f.contains_hash(hash);
                f.insert_hash(hash).map(|()| was_absent)
            }
            AnyFilter::Aging(f) => Ok(f.insert_hash(hash)),
            AnyFilter::Ribbon(_) | AnyFilter::Fuse(_) => Err(Error::Unsupported {
                kind: self.kind(),
                operation: "insert (it is static: rebuild it from all its keys)",
            }),
        }
    }

    /// `false` if `key` is definitely absent; `true` if it may be present.
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.key_hasher().hash(key))
    }

    /// [`contains`](Self::contains) by a precomputed hash.
    pub fn contains_hash(&self, hash: u64) -> bool {
        each!(self, f => f.contains_hash(hash))
    }

    /// The hash seed keys are hashed with.
    pub fn seed(&self) -> u64 {
        each!(self, f => f.seed())
    }

    /// How keys are hashed: the seed, and whether as today or as bloomkit 0.1 did (a filter
    /// read from a 0.1 file). Hash a key with it to probe by hash.
    pub fn key_hasher(&self) -> KeyHasher {
        each!(self, f => f.key_hasher())
    }

    /// How many keys the filter has taken in, by its own count: inserts that changed a Bloom
    /// filter, keys held by a scalable, cuckoo or counting filter, keys a ribbon or binary
    /// fuse filter was built from, keys inserted into an aging filter's live generations.
    pub fn len(&self) -> u64 {
        each!(self, f => f.len())
    }

    /// Whether [`len`](Self::len) is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The false-positive rate a query for an absent key risks now, estimated from the
    /// filter's contents (its fill or load; exactly 2^−r for a ribbon filter, 2^−bits for a
    /// binary fuse filter).
    pub fn estimated_fp_rate(&self) -> f64 {
        each!(self, f => f.estimated_fp_rate())
    }

    /// The false-positive rate the sizing math predicts for the filter's shape holding its
    /// [`len`](Self::len) keys (for a scalable or aging filter, combined over its layers or
    /// generations by their own counts): what a correct filter should measure.
    ///
    /// The Bloom kinds that count only the inserts that changed them (classic, blocked,
    /// sector, a scalable filter's layers, an aging filter's generations) leave out the keys
    /// that were false positives when inserted, which at high rates are many (15% of the keys
    /// at 50%): their rate is predicted for the keys such a count implies
    /// ([`sizing::fp_rate_from_changed_count`]). A counting filter counts every insert. A
    /// count estimated from the fill (after `union` or `intersect`, or in a blocked filter
    /// made by [`AtomicBloomFilter::to_blocked`](crate::AtomicBloomFilter::to_blocked)) already
    /// includes those keys, and the prediction then runs high by the same margin at such rates
    /// (about 2% high at a 1% target, 40% at 50%).
    pub fn predicted_fp_rate(&self) -> f64 {
        use sizing::fp_rate_from_changed_count as from_changes;
        let any_of = |rates: &mut dyn Iterator<Item = f64>| {
            1.0 - rates.fold(1.0, |none, rate| none * (1.0 - rate))
        };
        match self {
            AnyFilter::Classic(f) => from_changes(f.len(), |n| {
                sizing::classic_fp_rate(n, f.num_bits(), f.num_hashes())
            }),
            AnyFilter::Blocked(f) => from_changes(f.len(), |n| {
                sizing::blocked_fp_rate_for(n, f.num_bits(), f.num_hashes(), f.probes())
            }),
            AnyFilter::Counting(f) => {
                sizing::classic_fp_rate(f.len(), f.num_counters(), f.num_hashes())
            }
            AnyFilter::Scalable(f) => {
                // Each layer is a filter of its layout, and the two layouts' rates differ.
                let probes = f.blocked_probes();
                let layer_rate = |n, m, k| match f.layout() {
                    crate::LayerLayout::Classic => sizing::classic_fp_rate(n, m, k),
                    crate::LayerLayout::Blocked => sizing::blocked_fp_rate_for(n, m, k, probes),
                };
                any_of(
                    &mut f.layers().map(|l| {
                        from_changes(l.inserted, |n| layer_rate(n, l.num_bits, l.num_hashes))
                    }),
                )
            }
            // Its estimate is the model: each of the 2·b slots probed holds a matching
            // fingerprint with probability 1/(2^f − 1) times the load.
            AnyFilter::Cuckoo(f) => f.estimated_fp_rate(),
            AnyFilter::Ribbon(f) => f.fp_rate(),
            AnyFilter::Aging(f) => any_of(
                &mut (0..f.num_generations() as usize)
                    .filter_map(|age| f.generation(age))
                    .map(|g| {
                        from_changes(g.len(), |n| {
                            sizing::blocked_fp_rate_for(n, g.num_bits(), g.num_hashes(), g.probes())
                        })
                    }),
            ),
            AnyFilter::Fuse(f) => f.fp_rate(),
            AnyFilter::Sector(f) => from_changes(f.len(), |n| {
                sizing::sector_fp_rate(n, f.num_bits(), f.bits_per_word())
            }),
        }
    }

    /// Bytes of memory the filter holds.
    pub fn memory_bytes(&self) -> usize {
        each!(self, f => f.memory_bytes())
    }

    /// The kind's parameters and statistics as `(name, value)` pairs, for display (the CLI's
    /// `info`): bits and probes for the Bloom kinds, layers for a scalable filter, buckets and
    /// fingerprints for a cuckoo filter, and so on.
    pub fn parameters(&self) -> Vec<(&'static str, String)> {
        let percent = |x: f64| format!("{:.2}%", x * 100.0);
        match self {
            AnyFilter::Classic(f) => vec![
                ("bits", f.num_bits().to_string()),
                ("hashes", f.num_hashes().to_string()),
                ("fill", percent(f.fill_ratio())),
                ("estimated count", f.estimated_count().to_string()),
            ],
            AnyFilter::Blocked(f) => vec![
                ("bits", f.num_bits().to_string()),
                ("hashes", f.num_hashes().to_string()),
                ("fill", percent(f.fill_ratio())),
                ("estimated count", f.estimated_count().to_string()),
            ],
            AnyFilter::Sector(f) => vec![
                ("bits", f.num_bits().to_string()),
                (
                    "hashes",
                    format!("{} ({} in each word)", f.num_hashes(), f.bits_per_word()),
                ),
                ("fill", percent(f.fill_ratio())),
                ("estimated count", f.estimated_count().to_string()),
            ],
            AnyFilter::Counting(f) => vec![
                ("counters", format!("{} (4 bits each)", f.num_counters())),
                ("hashes", f.num_hashes().to_string()),
                (
                    "nonzero counters",
                    percent(f.count_nonzero() as f64 / f.num_counters() as f64),
                ),
                ("saturated counters", f.count_saturated().to_string()),
            ],
            AnyFilter::Scalable(f) => {
                let mut v = vec![
                    ("capacity", f.capacity().to_string()),
                    ("initial capacity", f.initial_capacity().to_string()),
                    ("target rate", percent(f.fp_rate())),
                    (
                        "expansion",
                        if f.is_scaling() {
                            format!("×{} (tightening {})", f.expansion(), f.tightening())
                        } else {
                            "none (non-scaling)".to_string()
                        },
                    ),
                    ("layers", f.num_layers().to_string()),
                    (
                        "layout",
                        match f.layout() {
                            crate::LayerLayout::Classic => "classic layers".to_string(),
                            crate::LayerLayout::Blocked => "blocked layers".to_string(),
                        },
                    ),
                ];
                for l in f.layers() {
                    v.push((
                        "layer",
                        format!(
                            "{} of {} keys, {} bits, {} hashes, planned rate {}",
                            l.inserted,
                            l.capacity,
                            l.num_bits,
                            l.num_hashes,
                            percent(l.fp_rate)
                        ),
                    ));
                }
                v
            }
            AnyFilter::Cuckoo(f) => vec![
                ("capacity", f.capacity().to_string()),
                ("buckets", f.num_buckets().to_string()),
                ("bucket size", f.bucket_size().to_string()),
                ("fingerprint bits", f.fingerprint_bits().to_string()),
                (
                    "sub-filters",
                    format!("{} of {}", f.num_filters(), f.max_filters()),
                ),
                ("expansion", f.expansion().to_string()),
                ("max kicks", f.max_kicks().to_string()),
                ("load", percent(f.load_factor())),
                ("deletes", f.num_deletes().to_string()),
            ],
            AnyFilter::Ribbon(f) => vec![
                ("slots", f.num_slots().to_string()),
                ("result bits", f.result_bits().to_string()),
                ("bits", f.num_bits().to_string()),
                ("bits per key", format!("{:.2}", f.bits_per_key())),
            ],
            AnyFilter::Aging(f) => {
                let mut v = vec![
                    ("generations", f.num_generations().to_string()),
                    (
                        "bits per generation",
                        f.num_bits_per_generation().to_string(),
                    ),
                    ("hashes", f.num_hashes().to_string()),
                ];
                for age in 0..f.num_generations() as usize {
                    if let Some(g) = f.generation(age) {
                        v.push((
                            "generation",
                            format!(
                                "age {age}: {} keys, fill {}",
                                g.len(),
                                percent(g.fill_ratio())
                            ),
                        ));
                    }
                }
                v
            }
            AnyFilter::Fuse(f) => vec![
                ("slots", f.num_slots().to_string()),
                ("fingerprint bits", f.fingerprint_bits().to_string()),
                (
                    "segments",
                    format!("{} of {} slots", f.segment_count(), f.segment_length()),
                ),
                ("fuse seed", f.fuse_seed().to_string()),
                ("bits", f.num_bits().to_string()),
                ("bits per key", format!("{:.2}", f.bits_per_key())),
            ],
        }
    }

    /// Adds every key of `other`.
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] if the kinds or parameters differ; [`Error::Unsupported`] for
    /// kinds that cannot be merged (scalable, cuckoo, ribbon, aging, fuse).
    pub fn union(&mut self, other: &Self) -> Result<()> {
        match (self, other) {
            (AnyFilter::Classic(a), AnyFilter::Classic(b)) => a.union(b),
            (AnyFilter::Blocked(a), AnyFilter::Blocked(b)) => a.union(b),
            (AnyFilter::Sector(a), AnyFilter::Sector(b)) => a.union(b),
            (AnyFilter::Counting(a), AnyFilter::Counting(b)) => a.union(b),
            (a, b) if a.kind() != b.kind() => Error::check_same("kind", a.kind(), b.kind()),
            (a, _) => Err(Error::Unsupported {
                kind: a.kind(),
                operation: "union",
            }),
        }
    }

    /// Keeps only the bits both filters set.
    ///
    /// # Errors
    ///
    /// As [`union`](Self::union); only the classic and blocked kinds intersect.
    pub fn intersect(&mut self, other: &Self) -> Result<()> {
        match (self, other) {
            (AnyFilter::Classic(a), AnyFilter::Classic(b)) => a.intersect(b),
            (AnyFilter::Blocked(a), AnyFilter::Blocked(b)) => a.intersect(b),
            (AnyFilter::Sector(a), AnyFilter::Sector(b)) => a.intersect(b),
            (a, b) if a.kind() != b.kind() => Error::check_same("kind", a.kind(), b.kind()),
            (a, _) => Err(Error::Unsupported {
                kind: a.kind(),
                operation: "intersection",
            }),
        }
    }

    /// The filter in bloomkit's file format.
    pub fn to_bytes(&self) -> Vec<u8> {
        each!(self, f => f.to_bytes())
    }

    /// The length of [`to_bytes`](Self::to_bytes), computed without encoding.
    pub fn encoded_len(&self) -> usize {
        each!(self, f => f.encoded_len())
    }

    /// Writes the filter in bloomkit's file format.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] from the writer.
    pub fn write_to<W: Write>(&self, writer: W) -> Result<()> {
        each!(self, f => f.write_to(writer))
    }
}

macro_rules! from_kind {
    ($($ty:ident => $variant:ident),* $(,)?) => {
        $(
            impl From<$ty> for AnyFilter {
                fn from(f: $ty) -> Self {
                    AnyFilter::$variant(f)
                }
            }
        )*
    };
}

from_kind! {
    BloomFilter => Classic,
    BlockedBloomFilter => Blocked,
    CountingBloomFilter => Counting,
    ScalableBloomFilter => Scalable,
    CuckooFilter => Cuckoo,
    RibbonFilter => Ribbon,
    AgingBloomFilter => Aging,
    BinaryFuseFilter => Fuse,
    SectorBloomFilter => Sector,
}

impl Filter for AnyFilter {
    fn contains_hash(&self, hash: u64) -> bool {
        AnyFilter::contains_hash(self, hash)
    }
    fn key_hasher(&self) -> KeyHasher {
        AnyFilter::key_hasher(self)
    }
    fn kind(&self) -> FilterKind {
        AnyFilter::kind(self)
    }
    fn memory_bytes(&self) -> usize {
        AnyFilter::memory_bytes(self)
    }
    fn len(&self) -> u64 {
        AnyFilter::len(self)
    }
    fn estimated_fp_rate(&self) -> f64 {
        AnyFilter::estimated_fp_rate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind, made through AnyFilter where it can be, with the same keys.
    fn one_of_each() -> Vec<AnyFilter> {
        let mut filters: Vec<AnyFilter> = [
            FilterKind::Classic,
            FilterKind::Blocked,
            FilterKind::Counting,
            FilterKind::Scalable,
            FilterKind::Cuckoo,
            FilterKind::Aging,
            FilterKind::Sector,
        ]
        .into_iter()
        .map(|kind| AnyFilter::new(kind, 500, 0.01).unwrap())
        .collect();
        for f in &mut filters {
            for i in 0..300u32 {
                f.insert(&i).unwrap();
            }
        }
        filters.push(RibbonFilter::build(0..300u32, 0.01).unwrap().into());
        filters.push(BinaryFuseFilter::build(0..300u32, 0.01).unwrap().into());
        filters
    }

    #[test]
    fn every_kind_round_trips_and_answers() {
        for f in one_of_each() {
            let kind = f.kind();
            let loaded = AnyFilter::from_bytes(&f.to_bytes()).unwrap();
            assert_eq!(loaded, f, "{kind}");
            let streamed = AnyFilter::read_from(&f.to_bytes()[..]).unwrap();
            assert_eq!(streamed, f, "{kind}");
            assert!((0..300u32).all(|i| loaded.contains(&i)), "{kind}");
            // The Bloom kinds count inserts that changed them, so a key that was already a
            // false positive is not counted (at 1%: about 1 in 100); the multisets count
            // every insert.
            match kind {
                FilterKind::Counting | FilterKind::Cuckoo | FilterKind::Ribbon => {
                    assert_eq!(loaded.len(), 300, "{kind}")
                }
                _ => assert!(
                    (290..=300).contains(&loaded.len()),
                    "{kind}: {}",
                    loaded.len()
                ),
            }
            assert!(!loaded.parameters().is_empty());
            let predicted = loaded.predicted_fp_rate();
            assert!(predicted > 0.0 && predicted <= 0.011, "{kind}: {predicted}");
        }
    }

    #[test]
    fn insert_is_the_kinds_own() {
        for mut f in one_of_each() {
            let kind = f.kind();
            if matches!(kind, FilterKind::Ribbon | FilterKind::Fuse) {
                assert!(matches!(f.insert("x"), Err(Error::Unsupported { .. })));
                continue;
            }
            let before = f.len();
            assert!(!f.insert(&7u32).unwrap(), "{kind}");
            let copies = match kind {
                FilterKind::Counting | FilterKind::Cuckoo => 1,
                _ => 0,
            };
            assert_eq!(f.len(), before + copies, "{kind}");
        }
    }

    /// Removing half the keys of a counting or cuckoo filter filled through `AnyFilter`
    /// leaves every other key: no key was skipped as "already there" and then lost with the
    /// copy it relied on.
    #[test]
    fn removing_keys_inserted_through_any_filter_loses_no_other_key() {
        for kind in [FilterKind::Counting, FilterKind::Cuckoo] {
            let n = 20_000u64;
            let mut f = AnyFilter::new(kind, n, 0.05).unwrap();
            for i in 0..n {
                f.insert(&i).unwrap();
            }
            assert_eq!(f.len(), n, "{kind}");
            for i in (0..n).step_by(2) {
                let removed = match &mut f {
                    AnyFilter::Counting(c) => c.remove(&i),
                    AnyFilter::Cuckoo(c) => c.remove(&i),
                    other => unreachable!("{}", other.kind()),
                };
                assert!(removed, "{kind}: {i}");
            }
            let lost = (1..n).step_by(2).filter(|i| !f.contains(i)).count();
            assert_eq!(lost, 0, "{kind}: false negatives");
        }
    }

    /// A scalable filter's prediction uses its layers' own formula, and matches what it
    /// measures in either layout.
    #[test]
    fn scalable_prediction_follows_the_layer_layout() {
        for layout in [crate::LayerLayout::Classic, crate::LayerLayout::Blocked] {
            let mut f = ScalableBloomFilter::builder(20_000, 0.01)
                .layout(layout)
                .build()
                .unwrap();
            for i in 0..50_000u32 {
                f.insert(&i).unwrap();
            }
            let predicted = AnyFilter::Scalable(f.clone()).predicted_fp_rate();
            // About 5,500 false positives are expected among 1,000,000 probes, so 10% is seven
            // standard deviations; the blocked formula for classic layers is 30% high.
            let measured = (1_000_000..2_000_000u32).filter(|i| f.contains(i)).count() as f64 / 1e6;
            assert!(
                (measured - predicted).abs() < 0.1 * predicted,
                "{layout:?}: measured {measured}, predicted {predicted}"
            );
        }
    }

    #[test]
    fn kinds_do_not_mix_and_some_do_not_merge() {
        let filters = one_of_each();
        let mut a = filters[0].clone();
        assert!(matches!(
            a.union(&filters[1]),
            Err(Error::Incompatible {
                parameter: "kind",
                ..
            })
        ));
        for f in &filters {
            let mut g = f.clone();
            let merged = g.union(f);
            match f.kind() {
                FilterKind::Classic
                | FilterKind::Blocked
                | FilterKind::Counting
                | FilterKind::Sector => merged.unwrap(),
                _ => assert!(
                    matches!(merged, Err(Error::Unsupported { .. })),
                    "{}",
                    f.kind()
                ),
            }
        }
    }

    #[test]
    fn unknown_kind_is_named() {
        let mut bytes = BloomFilter::new(10, 0.1).unwrap().to_bytes();
        bytes[10] = 77;
        // Fix the checksum so the kind is what fails.
        let n = bytes.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..n]);
        bytes[n..].copy_from_slice(&sum.to_le_bytes());
        assert!(matches!(
            AnyFilter::from_bytes(&bytes),
            Err(Error::UnknownKind { found: 77 })
        ));
    }
}
