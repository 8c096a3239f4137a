//! The chain's parameters and [`ScalableBuilder`], which checks them.

use super::layer::{Layer, LayerLayout};
use super::ScalableBloomFilter;
use crate::blocked::BlockedProbes;
use crate::classic::ClassicProbes;
use crate::error::{Error, Result};
use crate::hash::DEFAULT_SEED;
use crate::key::KeyHasher;
use crate::sizing;

/// The parameters a chain is built from; every layer follows from them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Params {
    /// The first layer's capacity (at least 1).
    pub(super) initial_capacity: u64,
    /// The target rate of the whole chain.
    pub(super) fp_rate: f64,
    pub(super) expansion: u32,
    pub(super) tightening: f64,
    pub(super) non_scaling: bool,
    pub(super) layout: LayerLayout,
    /// How classic layers derive their probes; blocked chains keep
    /// [`ClassicProbes::Rotating`] here so that equal chains compare equal.
    pub(super) probes: ClassicProbes,
    /// How blocked layers derive their probes, every layer of a chain alike; classic chains
    /// keep [`BlockedProbes::TwoSeeds`] here so that equal chains compare equal.
    pub(super) blocked_probes: BlockedProbes,
}

impl Params {
    /// Checks every parameter, in the order the errors are most useful: the rate, then the
    /// expansion, then the tightening.
    pub(super) fn validate(&self) -> Result<()> {
        sizing::check_fp_rate(self.fp_rate)?;
        if !(1..=ScalableBloomFilter::MAX_EXPANSION).contains(&self.expansion) {
            return Err(Error::InvalidParameter {
                name: "expansion",
                value: self.expansion.to_string(),
                expected: "an integer from 1 to 32768, as RedisBloom's EXPANSION (for \
                           EXPANSION 0, build a non-scaling filter)",
            });
        }
        // Written so that NaN fails too.
        if !(self.tightening > 0.0 && self.tightening < 1.0) {
            return Err(Error::InvalidParameter {
                name: "tightening",
                value: self.tightening.to_string(),
                expected: "a number strictly between 0 and 1, such as 0.5",
            });
        }
        if self.initial_capacity == 0 {
            return Err(Error::InvalidParameter {
                name: "initial_capacity",
                value: "0".into(),
                expected: "at least 1",
            });
        }
        Ok(())
    }

    /// The first layer's rate: p·(1 − t), so that the series p·(1 − t)·Σ tⁱ sums to p. At the
    /// default t = 0.5 this is RedisBloom's p·0.5 exactly (1 − 0.5 is exact in binary). A
    /// non-scaling chain has one layer, which may spend the whole budget, as RedisBloom's does.
    pub(super) fn first_rate(&self) -> f64 {
        if self.non_scaling {
            self.fp_rate
        } else {
            self.fp_rate * (1.0 - self.tightening)
        }
    }

    /// The rate of the layer after one of rate `rate`, whose capacity will be `capacity`:
    /// `rate · tightening`, or, where 64 probes cannot reach that
    /// ([`sizing::check_reachable`]: below about 2^−64.5), the floor
    /// [`ScalableBloomFilter::MIN_LAYER_FP_RATE`] (2^−64), which they reach for any
    /// capacity. Every rate a chain held before the floor existed was reachable, so old
    /// files follow the same rule. Past the floor each layer adds at most 2^−64 to the
    /// chain's rate: it stays below p + (layers at the floor) · 2^−64.
    pub(super) fn next_rate(&self, rate: f64, capacity: u64) -> f64 {
        next_layer_rate(rate, self.tightening, capacity)
    }
}

/// The rule of [`Params::next_rate`], for a chain of any tightening: the one place that
/// plans a next layer's rate, which [`sizing::scalable_layers`] follows too.
pub(crate) fn next_layer_rate(rate: f64, tightening: f64, capacity: u64) -> f64 {
    let next = rate * tightening;
    if next > 0.0 && sizing::check_reachable(capacity, next).is_ok() {
        next
    } else {
        ScalableBloomFilter::MIN_LAYER_FP_RATE
    }
}

/// How to build a [`ScalableBloomFilter`]: [`ScalableBloomFilter::new`]'s plan, with any of
/// its settings changed, checked by [`build`](Self::build). Made by
/// [`ScalableBloomFilter::builder`].
///
/// # Examples
///
/// ```
/// use bloomkit::ScalableBloomFilter;
///
/// // RedisBloom's `BF.RESERVE k 0.001 500 EXPANSION 4`.
/// let f = ScalableBloomFilter::builder(500, 0.001).expansion(4).build()?;
/// assert_eq!(f.expansion(), 4);
/// // Bad options are errors, not panics.
/// assert!(ScalableBloomFilter::builder(500, 0.001).expansion(0).build().is_err());
/// assert!(ScalableBloomFilter::builder(500, 0.001).tightening(1.0).build().is_err());
/// # Ok::<(), bloomkit::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ScalableBuilder {
    params: Params,
    seed: u64,
}

impl ScalableBuilder {
    /// The defaults of [`ScalableBloomFilter::new`], for `initial_capacity` (0 is 1) and
    /// `fp_rate` (checked by [`build`](Self::build)).
    pub(super) fn new(initial_capacity: u64, fp_rate: f64) -> Self {
        ScalableBuilder {
            params: Params {
                initial_capacity: initial_capacity.max(1),
                fp_rate,
                expansion: ScalableBloomFilter::DEFAULT_EXPANSION,
                tightening: ScalableBloomFilter::DEFAULT_TIGHTENING,
                non_scaling: false,
                layout: LayerLayout::Blocked,
                probes: ClassicProbes::Rotating,
                blocked_probes: BlockedProbes::TwoSeeds,
            },
            seed: DEFAULT_SEED,
        }
    }

    /// Each new layer's capacity is the previous one's times `expansion` (RedisBloom's
    /// `EXPANSION`; default 2). 1 adds layers of equal size; larger values add fewer, bigger
    /// layers. Checked by [`build`](Self::build): 1 to [`ScalableBloomFilter::MAX_EXPANSION`].
    pub fn expansion(mut self, expansion: u32) -> Self {
        self.params.expansion = expansion;
        self
    }

    /// Each new layer's rate is the previous one's times `tightening` (default 0.5, as
    /// RedisBloom). The first layer gets p·(1 − tightening), so the chain's rate stays below
    /// p. Values near 1 (Almeida et al. suggest 0.8–0.9) spend fewer bits on the first layers
    /// and more on later ones. Checked by [`build`](Self::build): strictly between 0 and 1.
    pub fn tightening(mut self, tightening: f64) -> Self {
        self.params.tightening = tightening;
        self
    }

    /// A non-scaling filter never adds a layer: its one layer gets the whole rate p, and once
    /// it holds its capacity, inserts of new keys fail with [`Error::Full`] (RedisBloom's
    /// `NONSCALING`).
    pub fn non_scaling(mut self, non_scaling: bool) -> Self {
        self.params.non_scaling = non_scaling;
        self
    }

    /// How the layers lay out their bits: [`LayerLayout::Blocked`] (the default, one cache
    /// line per layer per query) or [`LayerLayout::Classic`] (the fewest bits for the rate,
    /// as RedisBloom's layers).
    pub fn layout(mut self, layout: LayerLayout) -> Self {
        self.params.layout = layout;
        self
    }

    /// Classic layers derive their probes by `probes` instead of
    /// [`ClassicProbes::Rotating`]: only to rebuild a chain that must answer as one stored
    /// with [`ClassicProbes::DoubleHashing`] does (a server replaying a log written before
    /// the rotating derivation existed). Blocked layers ignore it.
    pub fn classic_probes(mut self, probes: ClassicProbes) -> Self {
        self.params.probes = probes;
        self
    }

    /// Blocked layers derive their probes by `probes` instead of
    /// [`BlockedProbes::TwoSeeds`]: only to rebuild a chain that must answer as one stored
    /// with [`BlockedProbes::OneSeed`] does. Classic layers ignore it.
    pub fn blocked_probes(mut self, probes: BlockedProbes) -> Self {
        self.params.blocked_probes = probes;
        self
    }

    /// Hash keys with `seed` instead of [`DEFAULT_SEED`].
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The bytes [`build`](Self::build) would allocate, computed without allocating: what
    /// [`ScalableBloomFilter::memory_bytes`] reports for the new filter. A server checks it
    /// against its memory limit before `BF.RESERVE` builds anything, so that a request for a
    /// filter of several gigabytes is refused rather than attempted.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build), but for the allocation itself.
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::ScalableBloomFilter;
    /// let builder = ScalableBloomFilter::builder(100_000, 0.001).expansion(4);
    /// assert_eq!(builder.planned_memory_bytes()?, builder.build()?.memory_bytes());
    /// // RedisBloom's `BF.RESERVE k 0.0000001 1073741824`: planned, not allocated.
    /// let huge = ScalableBloomFilter::builder(1 << 30, 1e-7).planned_memory_bytes()?;
    /// assert!(huge > 4_000_000_000, "{huge}");
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn planned_memory_bytes(&self) -> Result<usize> {
        self.params.validate()?;
        let layer = Layer::planned_heap_bytes(
            self.params.layout,
            self.params.probes,
            self.params.initial_capacity,
            self.params.first_rate(),
        )?;
        Ok(std::mem::size_of::<ScalableBloomFilter>() + std::mem::size_of::<Layer>() + layer)
    }

    /// Builds the filter, with its first layer allocated.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`] unless `0 < fp_rate < 1`; [`Error::InvalidParameter`] for a
    /// expansion outside 1 to [`ScalableBloomFilter::MAX_EXPANSION`] or a tightening outside (0, 1);
    /// [`Error::FpRateTooSmall`] if the first layer's rate needs more than 64 probes;
    /// [`Error::TooLarge`] or [`Error::OutOfMemory`] if the first layer does not fit.
    pub fn build(&self) -> Result<ScalableBloomFilter> {
        let mut params = self.params;
        params.validate()?;
        match params.layout {
            LayerLayout::Blocked => params.probes = ClassicProbes::Rotating,
            LayerLayout::Classic => params.blocked_probes = BlockedProbes::TwoSeeds,
        }
        let first = Layer::new(
            params.layout,
            params.probes,
            params.blocked_probes,
            params.initial_capacity,
            params.first_rate(),
            KeyHasher::new(self.seed),
        )?;
        let mut layers = Vec::new();
        layers
            .try_reserve_exact(1)
            .map_err(|_| Error::OutOfMemory {
                bytes: std::mem::size_of::<Layer>() as u64,
            })?;
        layers.push(first);
        Ok(ScalableBloomFilter {
            params,
            hasher: KeyHasher::new(self.seed),
            layers,
        })
    }
}
