//! The peer crates as [`Contender`]s (feature `peers`).
//!
//! Each crate is built by its own constructor for the target rate, or its closest knob, and
//! measured with its own default hasher: what its users get. Where a crate accepts a
//! precomputed hash, it is also measured with [`bloomkit::hash`]: what its data structure
//! costs, on the same terms as bloomkit's. Each adapter's doc says which constructor and
//! which hash it uses, and what it cannot do.
//!
//! * [`bloom`]: fastbloom 0.17 (`BloomFilter`, `AtomicBloomFilter`), bloomfilter 3,
//!   sbbf-rs 0.2, growable-bloom-filter 2.
//! * [`fingerprint`]: xorf 0.13 (`BinaryFuse8`, `Xor8`), cuckoofilter 0.5, qfilter 0.3.
//! * [`targets`]: bloomkit's speed, rate and memory targets, checked against a run's rows.

pub mod bloom;
pub mod fingerprint;
pub mod targets;

use std::hash::{Hash, Hasher};

use crate::keys::Key;
use crate::subject::Contender;

/// A key type the peers are measured with: it knows how xorf's users hash it.
pub trait PeerKey: Key {
    /// xorf filters hold `u64`s. An integer key is one already, so its users insert it as
    /// it is; other keys go through `xorf::HashProxy` with std's `DefaultHasher`, as xorf's
    /// docs show (SipHash-1-3 with zero keys).
    fn xorf_hash(key: &Self) -> u64;

    /// How the report names that hash.
    const XORF_HASH: &'static str;
}

impl PeerKey for u64 {
    const XORF_HASH: &'static str = "the key itself";

    #[inline]
    fn xorf_hash(key: &u64) -> u64 {
        *key
    }
}

impl PeerKey for str {
    const XORF_HASH: &'static str = "std DefaultHasher (SipHash-1-3)";

    #[inline]
    fn xorf_hash(key: &str) -> u64 {
        #[allow(deprecated)] // what xorf's HashProxy docs use
        let mut hasher = std::collections::hash_map::DefaultHasher::default();
        key.hash(&mut hasher);
        hasher.finish()
    }
}

/// Every peer contender, in report order.
pub fn contenders<K: PeerKey + ?Sized>() -> Vec<Box<dyn Contender<K>>> {
    let mut all = bloom::contenders::<K>();
    all.extend(fingerprint::contenders::<K>());
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{measure, Config, Regime};

    fn every_peer_runs<K: PeerKey + ?Sized>() {
        let config = Config::tiny();
        for c in contenders::<K>() {
            let name = format!("{} ({})", c.info().name, c.info().hashing.label());
            // The memory formula must agree with what is built, or the sizing is wrong.
            for n in [1000u64, 5000] {
                let mut f = c.build(n, 0.01).unwrap();
                let mut pool = <K::Pool as Default>::default();
                crate::keys::KeyPool::fill(&mut pool, 0..n);
                f.insert_pool(&pool);
                f.finish().unwrap();
                let formula = c.memory_for(n, 0.01).unwrap();
                assert_eq!(formula, f.memory_bytes() as u64, "{name} n={n}");
            }
            let outcome = measure(c.as_ref(), Regime::Cache, &config);
            let row = outcome
                .row()
                .unwrap_or_else(|| panic!("{name}: {outcome:?}"));
            assert_eq!(row.missed_present, 0, "{name}");
            assert!(row.fp_rate() < 0.05, "{name}: {}", row.fp_rate());
            // A struct header may come on top of a power-of-two array.
            assert!(row.memory_bytes <= config.cache_bytes + 64, "{name}");
        }
    }

    #[test]
    fn every_peer_runs_on_int_keys() {
        every_peer_runs::<u64>();
    }

    #[test]
    fn every_peer_runs_on_string_keys() {
        every_peer_runs::<str>();
    }
}
