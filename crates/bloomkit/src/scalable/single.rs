//! A classic or blocked filter as a non-scaling chain of one layer: the filter's own bits,
//! hash and probes, so it answers every key exactly as before. This is how a `bloomkit build`
//! file of either kind becomes a `BF` key of bloomkit's server, whose keys are chains.

use super::builder::Params;
use super::layer::{Layer, LayerBits, LayerLayout};
use super::ScalableBloomFilter;
use crate::blocked::BlockedProbes;
use crate::classic::ClassicProbes;
use crate::error::Result;
use crate::key::KeyHasher;
use crate::{sizing, BlockedBloomFilter, BloomFilter};

impl ScalableBloomFilter {
    /// A non-scaling chain whose one layer is `filter`, bit for bit: every key `filter`
    /// holds is found, every key it answers "no" for is still absent, and keys inserted
    /// later are hashed and probed as `filter` would have.
    ///
    /// The layer's capacity is the keys `filter`'s bits and hashes are planned for
    /// (`num_bits · ln 2 / num_hashes`, as the sizing math gives the hashes for a count), or
    /// its count of keys if it holds more; its rate, and the chain's, is the rate predicted
    /// at that capacity. Past the capacity, inserts of new keys fail with
    /// [`Error::Full`](crate::Error::Full), as RedisBloom's `NONSCALING` filters do.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFpRate`](crate::Error::InvalidFpRate) if the predicted rate is not
    /// strictly between 0 and 1 (a filter too full to predict one).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{BloomFilter, ScalableBloomFilter};
    ///
    /// let mut classic = BloomFilter::new(1000, 0.01)?;
    /// classic.insert("apple");
    /// let chain = ScalableBloomFilter::from_classic(classic.clone())?;
    /// assert!(chain.contains("apple"));
    /// assert_eq!((chain.len(), chain.num_layers(), chain.is_scaling()), (1, 1, false));
    /// assert_eq!(chain.num_bits(), classic.num_bits());
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn from_classic(filter: BloomFilter) -> Result<Self> {
        let (num_bits, num_hashes, len) = (filter.num_bits(), filter.num_hashes(), filter.len());
        let capacity = planned_capacity(num_bits, num_hashes, len);
        let rate = sizing::classic_fp_rate(capacity, num_bits, num_hashes);
        let probes = filter.probes();
        let hasher = filter.key_hasher();
        one_layer(
            LayerLayout::Classic,
            probes,
            BlockedProbes::TwoSeeds,
            hasher,
            LayerBits::Classic(filter),
            capacity,
            rate,
        )
    }

    /// [`from_classic`](Self::from_classic) for a blocked filter: a chain of one blocked
    /// layer, its rate predicted by the blocked filter's own formula. The capacity is found
    /// by the same `num_bits · ln 2 / num_hashes`; a blocked filter is planned with the
    /// fewest probes that meet its rate, fewer than the classic optimum, so this capacity
    /// runs above the keys it was planned for (about 1.4 times at 1%), and the rate reported
    /// is the one predicted there.
    ///
    /// # Errors
    ///
    /// As [`from_classic`](Self::from_classic).
    ///
    /// # Examples
    ///
    /// ```
    /// use bloomkit::{BlockedBloomFilter, ScalableBloomFilter};
    ///
    /// let mut blocked = BlockedBloomFilter::new(1000, 0.01)?;
    /// blocked.insert("apple");
    /// let chain = ScalableBloomFilter::from_blocked(blocked)?;
    /// assert!(chain.contains("apple"));
    /// assert!(chain.capacity() >= 1000);
    /// # Ok::<(), bloomkit::Error>(())
    /// ```
    pub fn from_blocked(filter: BlockedBloomFilter) -> Result<Self> {
        let (num_bits, num_hashes, len) = (filter.num_bits(), filter.num_hashes(), filter.len());
        let capacity = planned_capacity(num_bits, num_hashes, len);
        let blocked_probes = filter.probes();
        let rate = sizing::blocked_fp_rate_for(capacity, num_bits, num_hashes, blocked_probes);
        let hasher = filter.key_hasher();
        one_layer(
            LayerLayout::Blocked,
            ClassicProbes::Rotating,
            blocked_probes,
            hasher,
            LayerBits::Blocked(filter),
            capacity,
            rate,
        )
    }
}

/// The keys `num_hashes` probes into `num_bits` bits are the optimum for
/// (`m · ln 2 / k`), at least one, and at least the `len` keys held.
fn planned_capacity(num_bits: u64, num_hashes: u32, len: u64) -> u64 {
    let planned = (num_bits as f64 * std::f64::consts::LN_2 / f64::from(num_hashes.max(1))) as u64;
    planned.max(1).max(len)
}

/// The chain around one layer.
fn one_layer(
    layout: LayerLayout,
    probes: ClassicProbes,
    blocked_probes: BlockedProbes,
    hasher: KeyHasher,
    bits: LayerBits,
    capacity: u64,
    rate: f64,
) -> Result<ScalableBloomFilter> {
    // A rate too small to represent is still a rate: the floor a chain's layers use.
    let rate = rate.max(ScalableBloomFilter::MIN_LAYER_FP_RATE);
    let params = Params {
        initial_capacity: capacity,
        fp_rate: rate,
        expansion: ScalableBloomFilter::DEFAULT_EXPANSION,
        tightening: ScalableBloomFilter::DEFAULT_TIGHTENING,
        non_scaling: true,
        layout,
        probes,
        blocked_probes,
    };
    params.validate()?;
    Ok(ScalableBloomFilter {
        layers: vec![Layer {
            filter: bits,
            capacity,
            fp_rate: params.first_rate(),
        }],
        params,
        hasher,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AnyFilter, Error};

    fn keys(range: std::ops::Range<u64>) -> Vec<String> {
        range.map(|i| format!("key-{i}")).collect()
    }

    /// A chain made of `filter` answers as `filter` does, for keys in and out; survives its
    /// file; and refuses new keys past its capacity.
    fn answers_as_before(filter: AnyFilter, chain: ScalableBloomFilter) {
        let present = keys(0..2000);
        let absent = keys(1_000_000..1_050_000);
        for key in present.iter().chain(&absent) {
            assert_eq!(
                chain.contains(key.as_str()),
                filter.contains(key.as_str()),
                "{key}"
            );
        }
        assert!(present.iter().all(|k| chain.contains(k.as_str())));
        assert_eq!(chain.len(), filter.len());
        assert!(!chain.is_scaling());
        let read = ScalableBloomFilter::from_bytes(&chain.to_bytes()).unwrap();
        assert_eq!(read.to_bytes(), chain.to_bytes());
        assert!(present.iter().all(|k| read.contains(k.as_str())));
        // Filled to its capacity, it refuses the next new key.
        let mut full = read;
        let mut added = 0u64;
        let mut i = 2_000_000u64;
        while full.len() < full.capacity() {
            full.insert(&i).unwrap();
            i += 1;
            added += 1;
            assert!(added < 10_000_000, "never full");
        }
        let mut refused = false;
        for j in i..i + 1000 {
            match full.insert(&j) {
                Err(Error::Full { .. }) => {
                    refused = true;
                    break;
                }
                Ok(false) => {}
                other => panic!("{other:?}"),
            }
        }
        assert!(refused);
    }

    #[test]
    fn a_classic_filter_answers_as_before() {
        for seed in [crate::DEFAULT_SEED, 42] {
            let mut f = BloomFilter::builder(4000, 0.01).seed(seed).build().unwrap();
            for k in keys(0..2000) {
                f.insert(k.as_str());
            }
            let chain = ScalableBloomFilter::from_classic(f.clone()).unwrap();
            assert_eq!(chain.seed(), seed);
            assert!(
                chain.capacity() >= 3500 && chain.capacity() <= 4500,
                "{}",
                chain.capacity()
            );
            answers_as_before(AnyFilter::Classic(f), chain);
        }
    }

    #[test]
    fn a_blocked_filter_answers_as_before() {
        let mut f = BlockedBloomFilter::new(4000, 0.01).unwrap();
        for k in keys(0..2000) {
            f.insert(k.as_str());
        }
        let chain = ScalableBloomFilter::from_blocked(f.clone()).unwrap();
        assert_eq!(chain.layout(), LayerLayout::Blocked);
        answers_as_before(AnyFilter::Blocked(f), chain);
    }

    #[test]
    fn an_overfilled_filter_keeps_its_keys_as_its_capacity() {
        let mut f = BloomFilter::new(100, 0.01).unwrap();
        for k in keys(0..1000) {
            f.insert(k.as_str());
        }
        let chain = ScalableBloomFilter::from_classic(f.clone()).unwrap();
        assert_eq!(chain.capacity(), f.len());
        assert!(keys(0..1000).iter().all(|k| chain.contains(k.as_str())));
    }
}
