//! "Watch the count": which filters hold more than they were planned for, by their own
//! figures, kept up to date by every write instead of a scan per `INFO`.
//!
//! A filter is *past its capacity* when it holds more items than the capacity it reports
//! (`BF.INFO`/`CF.INFO` "Capacity"), and *above its target rate* when the false-positive
//! rate estimated from its item counts exceeds the rate it was planned for. A scaling Bloom
//! filter grows before it gets there; a non-scaling one refuses the item that would take
//! it past; so in practice the ones that show up are cuckoo filters filled beyond the
//! capacity they were reserved with (they take items until their buckets are full), and
//! filters restored from dumps of overfilled filters.
//!
//! Each shard keeps the flagged keys of its map beside it, under the same lock, changed
//! wherever an entry is stored, changed or removed: a healthy filter costs a few integer
//! comparisons per write and nothing per `INFO`, which reads only the flagged ones.

use bloomkit::sizing::{blocked_fp_rate, classic_fp_rate, fp_rate_from_changed_count};
use bloomkit::{CuckooFilter, LayerLayout, ScalableBloomFilter};
use bloomkit_commands::Value;

use super::shard::read;
use super::Keyspace;
use bytes::Bytes;

/// How far a flagged filter is past what it was planned for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Health {
    /// Items it holds.
    pub items: u64,
    /// Items it was planned for (its reported capacity).
    pub capacity: u64,
    /// The false-positive rate its counts give now.
    pub estimated_rate: f64,
    /// The rate it was planned for.
    pub target_rate: f64,
}

impl Health {
    /// The figures of `value` if it is past its capacity or above its target rate; `None`
    /// for a healthy filter (and for a dump still being restored).
    pub fn of(value: &Value) -> Option<Health> {
        match value {
            Value::Bloom(filter) => bloom(filter),
            Value::Cuckoo(filter) => cuckoo(filter),
            Value::Aging(key) => aging(key),
            // Imported from RedisBloom: its capacity and rate are RedisBloom's to keep.
            Value::Loading(_)
            | Value::Importing(_)
            | Value::RedisBloom(_)
            | Value::RedisCuckoo(_) => None,
        }
    }

    /// Whether it holds more items than planned.
    pub fn past_capacity(&self) -> bool {
        self.items > self.capacity
    }

    /// Whether its estimated rate exceeds its target.
    pub fn above_target_rate(&self) -> bool {
        self.estimated_rate > self.target_rate
    }

    /// How much worse than planned it is: the estimated rate over the target (the fill
    /// over the capacity when that is larger), so the worst filter is the one with the
    /// largest.
    pub fn severity(&self) -> f64 {
        let rate = if self.target_rate > 0.0 {
            self.estimated_rate / self.target_rate
        } else {
            0.0
        };
        let fill = self.items as f64 / self.capacity.max(1) as f64;
        rate.max(fill)
    }
}

/// An aging key is flagged when a generation holds more than its capacity: the window's
/// rate is then past its target. Its items are the fullest generation's.
fn aging(key: &bloomkit_commands::aging::AgingKey) -> Option<Health> {
    if !key.past_capacity() {
        return None;
    }
    let f = key.filter();
    let items = (0..f.num_generations() as usize)
        .filter_map(|age| f.generation(age))
        .map(|g| g.len())
        .max()
        .unwrap_or(0);
    Some(Health {
        items,
        capacity: key.capacity(),
        estimated_rate: f.estimated_fp_rate(),
        target_rate: key.error_rate(),
    })
}

fn bloom(filter: &ScalableBloomFilter) -> Option<Health> {
    // Each layer within its capacity answers within its planned rate, and the planned
    // rates of a chain sum to less than the target: only a layer past its capacity can
    // take the filter above it, so the estimate is computed only then.
    let overfull = filter.layers().any(|layer| layer.inserted > layer.capacity);
    let (items, capacity) = (filter.len(), filter.capacity());
    if !overfull && items <= capacity {
        return None;
    }
    let layout = filter.layout();
    let miss: f64 = filter
        .layers()
        .map(|layer| {
            // A layer's count leaves out the inserts that were false positives, many in an
            // overfull layer: the rate is predicted for the keys that count implies.
            let rate = fp_rate_from_changed_count(layer.inserted, |n| {
                if layout == LayerLayout::Blocked {
                    blocked_fp_rate(n, layer.num_bits, layer.num_hashes)
                } else {
                    classic_fp_rate(n, layer.num_bits, layer.num_hashes)
                }
            });
            1.0 - rate
        })
        .product();
    flagged(Health {
        items,
        capacity,
        estimated_rate: 1.0 - miss,
        target_rate: filter.fp_rate(),
    })
}

fn cuckoo(filter: &CuckooFilter) -> Option<Health> {
    let (items, capacity) = (filter.len(), filter.capacity());
    // A cuckoo filter's estimate grows with its occupancy: below nine tenths of its
    // capacity it cannot be near the rate it has at its capacity.
    if items.saturating_mul(10) < capacity.saturating_mul(9) {
        return None;
    }
    // Its target: the rate it has holding exactly its capacity, spread over its buckets.
    let q = 1.0 / ((1u64 << filter.fingerprint_bits().min(63)) - 1) as f64;
    let buckets = (filter.num_slots() / u64::from(filter.bucket_size().max(1))).max(1);
    let target = 1.0 - (1.0 - q).powf(2.0 * capacity as f64 / buckets as f64);
    flagged(Health {
        items,
        capacity,
        estimated_rate: filter.estimated_fp_rate(),
        target_rate: target,
    })
}

fn flagged(health: Health) -> Option<Health> {
    (health.past_capacity() || health.above_target_rate()).then_some(health)
}

impl Keyspace {
    /// The filters flagged past their capacity or target rate (see the [module
    /// documentation](self)): how many of each, and the worst with its key. Reads only the
    /// flagged entries.
    pub fn filter_health(&self) -> HealthSummary {
        let mut summary = HealthSummary::default();
        for shard in self.shards.iter() {
            let map = read(shard);
            for (key, health) in &map.flagged {
                summary.past_capacity += usize::from(health.past_capacity());
                summary.above_target_rate += usize::from(health.above_target_rate());
                let worse = summary
                    .worst
                    .as_ref()
                    .is_none_or(|(_, worst)| health.severity() > worst.severity());
                if worse {
                    summary.worst = Some((key.clone(), *health));
                }
            }
        }
        summary
    }
}

/// What [`Keyspace::filter_health`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HealthSummary {
    /// Filters holding more items than their capacity.
    pub past_capacity: usize,
    /// Filters whose estimated rate is above their target.
    pub above_target_rate: usize,
    /// The worst of them (by [`Health::severity`]) and its key.
    pub worst: Option<(Bytes, Health)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_growing_bloom_filter_stays_healthy() {
        let mut filter = ScalableBloomFilter::new(100, 0.01).unwrap();
        for i in 0..10_000u32 {
            filter.insert(&i).unwrap();
            if i % 97 == 0 {
                assert_eq!(Health::of(&Value::Bloom(filter.clone())), None, "at {i}");
            }
        }
    }

    #[test]
    fn a_cuckoo_filter_past_its_capacity_is_flagged_with_its_figures() {
        // 600 planned for: 512 buckets of 2, which take more than 600 before they fill.
        let mut filter = CuckooFilter::redisbloom_builder(600).build().unwrap();
        for i in 0..540u32 {
            filter.insert(&i).unwrap();
        }
        assert_eq!(Health::of(&Value::Cuckoo(filter.clone())), None);
        for i in 540..700u32 {
            filter.insert(&i).unwrap();
        }
        assert_eq!(filter.num_filters(), 1, "no sub-filter was added");
        let health = Health::of(&Value::Cuckoo(filter)).expect("flagged");
        assert_eq!((health.items, health.capacity), (700, 600));
        assert!(health.past_capacity());
        assert!(health.above_target_rate(), "{health:?}");
        assert!(health.severity() > 1.1, "{health:?}");
    }
}
