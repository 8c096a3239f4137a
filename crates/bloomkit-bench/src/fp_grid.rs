//! The false-positive grid: every kind's mean measured rate against its target, over sizes
//! from one key to 10^7 and targets from 50% to 10^−7.
//!
//! One cell is a kind, a number of keys `n` and a target `p`. It builds many independently
//! seeded filters of the kind for `n` keys at `p` (each from its own random key hashes, which
//! is what independently keyed filters of distinct keys are), queries each with fresh random
//! hashes through `contains_hash` (a random 64-bit value is what an absent key's hash is), and
//! reports the mean rate over all of them: one small filter's rate depends on its keys, and the
//! promise is about the expectation. Filters are split over threads; everything is seeded, so
//! a cell's figures are the same on every run.
//!
//! The number of queries is chosen from the target: `expected` false positives at the target
//! rate, so a cell whose true rate were 1.25× the target would lie √expected·0.25 standard
//! deviations above it (with 1,600 expected, 10 of them). The test
//! (`tests/it/fp_grid.rs`) runs the cells it can afford; the `fp_grid` binary runs them all.

use bloomkit::{
    AgingBloomFilter, AnyFilter, AtomicBloomFilter, BinaryFuseFilter, BlockedBloomFilter,
    BloomFilter, CountingBloomFilter, CuckooFilter, Error, Filter, LayerLayout, RibbonFilter,
    ScalableBloomFilter, SectorBloomFilter,
};

/// A filter kind as the grid builds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridKind {
    /// [`BloomFilter::new`].
    Classic,
    /// [`BlockedBloomFilter::new`].
    Blocked,
    /// [`AtomicBloomFilter::new`].
    Atomic,
    /// [`CountingBloomFilter::new`].
    Counting,
    /// [`SectorBloomFilter::new`].
    Sector,
    /// [`ScalableBloomFilter`] in blocked layers, from an initial capacity of `n / 64`
    /// (at least 1) with expansion 2, so that `n` keys make about seven layers.
    ScalableBlocked,
    /// The same in classic layers.
    ScalableClassic,
    /// [`CuckooFilter::new`], filled to its capacity.
    Cuckoo,
    /// [`RibbonFilter::build_from_hashes`].
    Ribbon,
    /// [`BinaryFuseFilter::build_from_hashes`].
    Fuse,
    /// [`AgingBloomFilter::new`] with its two generations, each holding its `n` planned keys
    /// (the worst the plan allows).
    Aging,
}

impl GridKind {
    /// Every kind, in the order of the reports.
    pub const ALL: [GridKind; 11] = [
        GridKind::Classic,
        GridKind::Blocked,
        GridKind::Atomic,
        GridKind::Counting,
        GridKind::Sector,
        GridKind::ScalableBlocked,
        GridKind::ScalableClassic,
        GridKind::Cuckoo,
        GridKind::Ribbon,
        GridKind::Fuse,
        GridKind::Aging,
    ];

    /// The kind's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            GridKind::Classic => "classic",
            GridKind::Blocked => "blocked",
            GridKind::Atomic => "atomic",
            GridKind::Counting => "counting",
            GridKind::Sector => "sector",
            GridKind::ScalableBlocked => "scalable",
            GridKind::ScalableClassic => "scalable-classic",
            GridKind::Cuckoo => "cuckoo",
            GridKind::Ribbon => "ribbon",
            GridKind::Fuse => "fuse",
            GridKind::Aging => "aging",
        }
    }

    /// Builds a filter of this kind for `hashes.len()` keys at `fp_rate`, seeded with
    /// `seed`, holding every hash of `hashes` (the aging filter: the first half in its older
    /// generation, the second in its newer one, each generation planned for half), with the
    /// rate [`AnyFilter::predicted_fp_rate`] predicts for it (the atomic filter, which has no
    /// [`AnyFilter`] of its own: `sizing::blocked_fp_rate` at its estimated count).
    pub fn build(self, hashes: &[u64], fp_rate: f64, seed: u64) -> Result<Built, Error> {
        if self == GridKind::Atomic {
            // Queried as itself, predicted by the blocked model at its count: it keeps no
            // counter, and its `len` estimates from the fill the keys it was offered, false
            // positives included, so no correction applies.
            let n = hashes.len() as u64;
            let f = AtomicBloomFilter::builder(n, fp_rate).seed(seed).build()?;
            hashes.iter().for_each(|&h| _ = f.insert_hash(h));
            let predicted =
                bloomkit::sizing::blocked_fp_rate(f.len(), f.num_bits(), f.num_hashes());
            return Ok(Built {
                filter: Box::new(f),
                predicted,
            });
        }
        let any = self.build_any(hashes, fp_rate, seed)?;
        Ok(Built {
            predicted: any.predicted_fp_rate(),
            filter: Box::new(any),
        })
    }

    fn build_any(self, hashes: &[u64], fp_rate: f64, seed: u64) -> Result<AnyFilter, Error> {
        let n = hashes.len() as u64;
        Ok(match self {
            GridKind::Classic => {
                let mut f = BloomFilter::builder(n, fp_rate).seed(seed).build()?;
                hashes.iter().for_each(|&h| _ = f.insert_hash(h));
                f.into()
            }
            GridKind::Blocked => {
                let mut f = BlockedBloomFilter::builder(n, fp_rate).seed(seed).build()?;
                hashes.iter().for_each(|&h| _ = f.insert_hash(h));
                f.into()
            }
            GridKind::Atomic => {
                let f = AtomicBloomFilter::builder(n, fp_rate).seed(seed).build()?;
                hashes.iter().for_each(|&h| _ = f.insert_hash(h));
                f.to_blocked()?.into()
            }
            GridKind::Counting => {
                let mut f = CountingBloomFilter::builder(n, fp_rate)
                    .seed(seed)
                    .build()?;
                hashes.iter().for_each(|&h| _ = f.insert_hash(h));
                f.into()
            }
            GridKind::Sector => {
                let mut f = SectorBloomFilter::builder(n, fp_rate).seed(seed).build()?;
                hashes.iter().for_each(|&h| _ = f.insert_hash(h));
                f.into()
            }
            GridKind::ScalableBlocked | GridKind::ScalableClassic => {
                let layout = if self == GridKind::ScalableClassic {
                    LayerLayout::Classic
                } else {
                    LayerLayout::Blocked
                };
                let mut f = ScalableBloomFilter::builder((n / 64).max(1), fp_rate)
                    .layout(layout)
                    .seed(seed)
                    .build()?;
                for &h in hashes {
                    f.insert_hash(h)?;
                }
                f.into()
            }
            GridKind::Cuckoo => {
                let mut f = CuckooFilter::builder(n, fp_rate).seed(seed).build()?;
                for &h in hashes {
                    f.insert_hash(h)?;
                }
                f.into()
            }
            GridKind::Ribbon => RibbonFilter::builder(fp_rate)
                .seed(seed)
                .build_from_hashes(hashes)?
                .into(),
            GridKind::Fuse => BinaryFuseFilter::builder(fp_rate)
                .seed(seed)
                .build_from_hashes(hashes)?
                .into(),
            GridKind::Aging => {
                let (older, newer) = hashes.split_at(hashes.len() / 2);
                let per_generation = (older.len().max(newer.len()) as u64).max(1);
                let mut f = AgingBloomFilter::builder(per_generation, fp_rate)
                    .seed(seed)
                    .build()?;
                older.iter().for_each(|&h| _ = f.insert_hash(h));
                f.rotate();
                newer.iter().for_each(|&h| _ = f.insert_hash(h));
                f.into()
            }
        })
    }
}

/// A filter the grid built, and its predicted rate.
pub struct Built {
    /// The filter, queried through [`Filter::contains_hash`].
    pub filter: Box<dyn Filter + Send>,
    /// [`AnyFilter::predicted_fp_rate`] of it.
    pub predicted: f64,
}

/// splitmix64: the grid's random numbers (hashes to insert, hashes to query, seeds).
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64-bit value.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// How a cell is measured: how many filters, how many queries each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effort {
    /// Independently seeded filters.
    pub filters: u64,
    /// Absent-key queries per filter.
    pub queries_per_filter: u64,
}

impl Effort {
    /// The effort for `n` keys at target `fp_rate`, for `expected` false positives at the
    /// target in all: enough filters that their keys' luck averages out (up to 256 for small
    /// filters, where one filter's rate depends most on its keys, down to 2 for the largest,
    /// one per core), each queried at least `n` times so the queries, not the building,
    /// cost the time.
    pub fn for_cell(n: u64, fp_rate: f64, expected: f64) -> Effort {
        let total = (expected / fp_rate).ceil().max(1.0) as u64;
        let most_filters = (4_000_000 / n.max(1)).clamp(2, 256);
        let per_filter = total.div_ceil(most_filters).max(n.min(total)).max(1);
        let filters = total.div_ceil(per_filter).max(2);
        Effort {
            filters,
            queries_per_filter: total.div_ceil(filters),
        }
    }

    /// Queries in all.
    pub fn queries(&self) -> u64 {
        self.filters * self.queries_per_filter
    }

    /// Keys inserted in all, for `n` keys a filter.
    pub fn inserts(&self, n: u64) -> u64 {
        self.filters * n
    }
}

/// What one cell measured.
#[derive(Clone, Debug, PartialEq)]
pub struct CellResult {
    /// Keys per filter.
    pub n: u64,
    /// The target rate.
    pub target: f64,
    /// Queries in all.
    pub queries: u64,
    /// False positives in all.
    pub false_positives: u64,
    /// The mean of the filters' predicted rates ([`AnyFilter::predicted_fp_rate`]).
    pub predicted: f64,
    /// The mean of the filters' estimated rates ([`Filter::estimated_fp_rate`]).
    pub estimated: f64,
    /// Keys that answered "no" after being inserted: must be 0.
    pub false_negatives: u64,
}

impl CellResult {
    /// The measured rate.
    pub fn measured(&self) -> f64 {
        self.false_positives as f64 / self.queries as f64
    }

    /// The measured rate over the target.
    pub fn ratio(&self) -> f64 {
        self.measured() / self.target
    }
}

/// Measures one cell with `effort` on `threads` threads; the filters' seeds and keys derive
/// from `seed`. A kind that refuses the target returns the error it gave.
pub fn measure_cell(
    kind: GridKind,
    n: u64,
    target: f64,
    effort: Effort,
    seed: u64,
    threads: u64,
) -> Result<CellResult, Error> {
    let threads = threads.clamp(1, effort.filters);
    let per_thread: Vec<Result<[f64; 4], Error>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut sums = [0.0f64; 4];
                    let mut hashes = Vec::with_capacity(n as usize);
                    for i in (t..effort.filters).step_by(threads as usize) {
                        let mut rng = SplitMix(seed ^ (i.wrapping_mul(0xa076_1d64_78bd_642f)));
                        let filter_seed = rng.next_u64();
                        hashes.clear();
                        hashes.extend((0..n).map(|_| rng.next_u64()));
                        let Built {
                            filter: f,
                            predicted,
                        } = kind.build(&hashes, target, filter_seed)?;
                        let missed = hashes.iter().filter(|&&h| !f.contains_hash(h)).count();
                        let hits = (0..effort.queries_per_filter)
                            .filter(|_| f.contains_hash(rng.next_u64()))
                            .count();
                        sums[0] += hits as f64;
                        sums[1] += predicted;
                        sums[2] += f.estimated_fp_rate();
                        sums[3] += missed as f64;
                    }
                    Ok(sums)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a grid worker panicked"))
            .collect()
    });
    let mut total = [0.0f64; 4];
    for sums in per_thread {
        let sums = sums?;
        for (t, s) in total.iter_mut().zip(sums) {
            *t += s;
        }
    }
    let filters = effort.filters as f64;
    Ok(CellResult {
        n,
        target,
        queries: effort.queries(),
        false_positives: total[0] as u64,
        predicted: total[1] / filters,
        estimated: total[2] / filters,
        false_negatives: total[3] as u64,
    })
}
