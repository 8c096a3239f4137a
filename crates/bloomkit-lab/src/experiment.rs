//! [`Experiment`]: one filter of a kind, filled with present keys and measured.

use bloomkit::{sizing, AgingBloomFilter, AnyFilter, AtomicBloomFilter, FilterKind};

use crate::{absent_hash, present_hash, Kind, LabError, Measurement};

/// The filter an experiment holds: one of the file kinds, or the atomic filter, which has no
/// place in [`AnyFilter`] (it inserts through `&self`).
#[derive(Debug)]
enum Built {
    Any(AnyFilter),
    Atomic(AtomicBloomFilter),
}

/// A filter of one kind, planned for some keys at a target rate, holding the first
/// [`inserted`](Self::inserted) present keys.
///
/// # Examples
///
/// ```
/// use bloomkit::FilterKind;
/// use bloomkit_lab::{Experiment, Kind};
///
/// let mut e = Experiment::new(Kind::File(FilterKind::Blocked), 10_000, 0.01)?;
/// e.fill_to(10_000)?;
/// let m = e.measure(100_000)?;
/// assert_eq!(m.false_negatives, 0);
/// assert!((0.007..0.013).contains(&m.measured_rate()), "{}", m.measured_rate());
/// # Ok::<(), bloomkit_lab::LabError>(())
/// ```
#[derive(Debug)]
pub struct Experiment {
    kind: Kind,
    planned: u64,
    fp_rate: f64,
    filter: Built,
    inserted: u64,
    /// The key count at which a cuckoo filter refused a key; it takes no more after that.
    full_at: Option<u64>,
}

impl Experiment {
    /// An empty filter of `kind` for `planned` keys at `fp_rate`, as the kind's constructor
    /// sizes it. Two exceptions: a ribbon or fuse filter is built here from the first
    /// `planned` keys (it is static), and an aging filter gets two generations of `planned / 2` keys each, so
    /// that holding `planned` keys it is in its steady state (the first half in the older
    /// generation, the second in the newer).
    ///
    /// # Errors
    ///
    /// The library's: a rate outside (0, 1), a filter too large to build.
    pub fn new(kind: Kind, planned: u64, fp_rate: f64) -> Result<Self, LabError> {
        let planned = planned.max(1);
        let mut inserted = 0;
        let filter = match kind {
            Kind::Atomic => Built::Atomic(AtomicBloomFilter::new(planned, fp_rate)?),
            // Planned for its generations' share, to hold `planned` keys in two.
            Kind::File(FilterKind::Aging) => Built::Any(AnyFilter::Aging(AgingBloomFilter::new(
                planned.div_ceil(2),
                fp_rate,
            )?)),
            // Built here from the first `planned` keys, as `bloomkit build` builds them
            // (the fuse filter with the fewest fingerprint bits that meet the target).
            Kind::File(file_kind) if file_kind.is_static() => {
                let hashes: Vec<u64> = (0..planned).map(present_hash).collect();
                inserted = planned;
                Built::Any(AnyFilter::build_from_hashes(file_kind, &hashes, fp_rate)?)
            }
            Kind::File(file_kind) => Built::Any(AnyFilter::new(file_kind, planned, fp_rate)?),
        };
        Ok(Experiment {
            kind,
            planned,
            fp_rate,
            filter,
            inserted,
            full_at: None,
        })
    }

    /// Makes the filter hold the first `keys` present keys: inserts the missing ones, or
    /// starts over when it holds more. A cuckoo filter that fills up stops taking keys
    /// ([`full_at`](Self::full_at) says when).
    ///
    /// # Errors
    ///
    /// [`LabError::Static`] for a ribbon filter asked for a count other than the planned one;
    /// the library's errors from an insert (a scalable filter that cannot grow).
    pub fn fill_to(&mut self, keys: u64) -> Result<(), LabError> {
        if self.kind.is_static() {
            if keys != self.planned {
                return Err(LabError::Static {
                    planned: self.planned,
                    requested: keys,
                });
            }
            return Ok(());
        }
        if keys < self.inserted {
            *self = Experiment::new(self.kind, self.planned, self.fp_rate)?;
        }
        let rotate_at = self.planned.div_ceil(2);
        while self.inserted < keys && self.full_at.is_none() {
            let id = self.inserted;
            let hash = present_hash(id);
            match &mut self.filter {
                Built::Atomic(f) => {
                    f.insert_hash(hash);
                }
                Built::Any(AnyFilter::Aging(f)) => {
                    if id == rotate_at {
                        f.rotate();
                    }
                    f.insert_hash(hash);
                }
                Built::Any(f) => match f.insert_hash(hash) {
                    Ok(_) => {}
                    Err(bloomkit::Error::Full { .. }) => {
                        self.full_at = Some(id);
                        break;
                    }
                    Err(e) => return Err(e.into()),
                },
            }
            self.inserted += 1;
        }
        Ok(())
    }

    /// The kind of filter.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The keys the filter was planned for.
    pub fn planned(&self) -> u64 {
        self.planned
    }

    /// The target false-positive rate it was planned for.
    pub fn target_fp_rate(&self) -> f64 {
        self.fp_rate
    }

    /// How many present keys it holds: keys `0..inserted`.
    pub fn inserted(&self) -> u64 {
        self.inserted
    }

    /// The key count at which a cuckoo filter refused a key, if it did.
    pub fn full_at(&self) -> Option<u64> {
        self.full_at
    }

    /// The filter's answer for present key `id` (`absent = false`) or absent key `id`.
    pub fn contains(&self, id: u64, absent: bool) -> bool {
        let hash = if absent {
            absent_hash(id)
        } else {
            present_hash(id)
        };
        match &self.filter {
            Built::Any(f) => f.contains_hash(hash),
            Built::Atomic(f) => f.contains_hash(hash),
        }
    }

    /// Queries absent keys `0..absent_keys` and every key the filter holds, and reads the filter's
    /// size, predicted rate and fill.
    ///
    /// # Errors
    ///
    /// [`bloomkit::Error::OutOfMemory`] if an atomic filter's bits cannot be copied to read
    /// the library's figures for them.
    pub fn measure(&self, absent_keys: u64) -> Result<Measurement, LabError> {
        let false_positives = (0..absent_keys).filter(|&i| self.contains(i, true)).count() as u64;
        let false_negatives = (0..self.inserted)
            .filter(|&i| !self.contains(i, false))
            .count() as u64;
        // The atomic filter's bits are a blocked filter's: the library's figures for that.
        let blocked;
        let any = match &self.filter {
            Built::Any(f) => f,
            Built::Atomic(f) => {
                blocked = AnyFilter::Blocked(f.to_blocked()?);
                &blocked
            }
        };
        Ok(Measurement {
            kind: self.kind,
            planned: self.planned,
            target_fp_rate: self.fp_rate,
            inserted: self.inserted,
            full_at: self.full_at,
            absent_keys,
            false_positives,
            false_negatives,
            memory_bytes: match &self.filter {
                Built::Any(f) => f.memory_bytes(),
                Built::Atomic(f) => f.memory_bytes(),
            },
            predicted_rate: self.predicted_rate(any),
            fill: any.fill_ratio(),
            parameters: any
                .parameters()
                .into_iter()
                .map(|(name, value)| (name.to_string(), value))
                .collect(),
        })
    }
}

impl Experiment {
    /// The rate the library's sizing math predicts for `filter` holding the keys inserted.
    ///
    /// [`AnyFilter::predicted_fp_rate`] counts a Bloom filter's keys by its `len`,
    /// the inserts that changed it; an overfilled filter answers "maybe" for many of the keys
    /// it is given, so that count falls short of the keys it holds, and the prediction with
    /// it too (13.6% instead of 15.7% for a classic filter at twice its keys). The experiment
    /// knows how many distinct keys went in, so the bit-array kinds are predicted from that.
    /// A counting filter skipped the keys it already answered "maybe" for, but its nonzero
    /// counters are those those keys would have left, so the same holds. The others keep the
    /// library's figure: a scalable filter's layers, a cuckoo filter's fingerprints and a
    /// ribbon filter's solution hold exactly what their counts say.
    fn predicted_rate(&self, filter: &AnyFilter) -> f64 {
        let n = self.inserted;
        match filter {
            AnyFilter::Classic(f) => sizing::classic_fp_rate(n, f.num_bits(), f.num_hashes()),
            AnyFilter::Blocked(f) => blocked_rate(n, f.num_bits(), f.num_hashes()),
            AnyFilter::Sector(f) => sizing::sector_fp_rate(n, f.num_bits(), f.bits_per_word()),
            AnyFilter::Counting(f) => sizing::classic_fp_rate(n, f.num_counters(), f.num_hashes()),
            AnyFilter::Aging(f) => {
                // The older generation took the keys before the rotation, the newer the rest.
                let older = n.min(self.planned.div_ceil(2));
                let (bits, k) = (f.num_bits_per_generation(), f.num_hashes());
                let (a, b) = (
                    blocked_rate(older, bits, k),
                    blocked_rate(n - older, bits, k),
                );
                1.0 - (1.0 - a) * (1.0 - b)
            }
            other => other.predicted_fp_rate(),
        }
    }
}

/// [`sizing::blocked_fp_rate`], and 0 for an empty filter.
fn blocked_rate(items: u64, num_bits: u64, num_hashes: u32) -> f64 {
    if items == 0 {
        0.0
    } else {
        sizing::blocked_fp_rate(items, num_bits, num_hashes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kind;
    use bloomkit::FilterKind;

    #[test]
    fn every_kind_holds_its_keys_and_measures_near_its_prediction() {
        for kind in Kind::ALL {
            let mut e = Experiment::new(kind, 20_000, 0.01).unwrap();
            e.fill_to(20_000).unwrap();
            let m = e.measure(200_000).unwrap();
            assert_eq!(m.false_negatives, 0, "{kind}");
            assert_eq!(m.inserted, 20_000, "{kind}");
            let (measured, predicted) = (m.measured_rate(), m.predicted_rate);
            // 200,000 absent keys at about 1%: a standard error near 0.02 percentage points.
            assert!(
                (measured - predicted).abs() < 0.25 * predicted,
                "{kind}: measured {measured}, predicted {predicted}"
            );
            assert!((0.0..=1.0).contains(&m.fill), "{kind}: {}", m.fill);
        }
    }

    #[test]
    fn overfilling_raises_the_rate_as_predicted() {
        let mut e = Experiment::new(Kind::File(FilterKind::Classic), 10_000, 0.01).unwrap();
        e.fill_to(20_000).unwrap();
        let m = e.measure(100_000).unwrap();
        // The textbook figure: twice the keys, about 15%.
        assert!((0.13..0.17).contains(&m.measured_rate()), "{m:?}");
        assert!((m.measured_rate() - m.predicted_rate).abs() < 0.015);
        // Filling back down starts over and gives the planned filter again.
        e.fill_to(10_000).unwrap();
        assert_eq!(e.inserted(), 10_000);
        assert!(e.measure(100_000).unwrap().measured_rate() < 0.013);
    }

    #[test]
    fn overfilled_predictions_hold_for_every_kind_that_can_be_overfilled() {
        for kind in Kind::ALL.into_iter().filter(|k| !k.is_static()) {
            let mut e = Experiment::new(kind, 10_000, 0.01).unwrap();
            for keys in [15_000, 20_000, 40_000] {
                e.fill_to(keys).unwrap();
                let m = e.measure(100_000).unwrap();
                let (measured, predicted) = (m.measured_rate(), m.predicted_rate);
                // 100,000 absent keys: the standard error is under 0.2 points at any rate here.
                assert!(
                    (measured - predicted).abs() < 0.1 * predicted + 0.002,
                    "{kind} at {keys} keys: measured {measured}, predicted {predicted}"
                );
            }
        }
    }

    #[test]
    fn a_cuckoo_filter_stops_when_full() {
        let mut e = Experiment::new(Kind::File(FilterKind::Cuckoo), 1_000, 0.01).unwrap();
        e.fill_to(4_000).unwrap();
        let full_at = e.full_at().expect("4× its capacity does not fit");
        assert_eq!(e.inserted(), full_at);
        assert_eq!(e.measure(0).unwrap().false_negatives, 0);
    }

    #[test]
    fn a_ribbon_filter_cannot_be_overfilled() {
        let mut e = Experiment::new(Kind::File(FilterKind::Ribbon), 1_000, 0.01).unwrap();
        assert_eq!(e.inserted(), 1_000);
        e.fill_to(1_000).unwrap();
        let err = e.fill_to(2_000).unwrap_err();
        assert!(matches!(
            err,
            LabError::Static {
                planned: 1_000,
                requested: 2_000
            }
        ));
        assert!(err.to_string().contains("static"));
    }

    #[test]
    fn a_scalable_filter_grows_and_keeps_its_rate() {
        let mut e = Experiment::new(Kind::File(FilterKind::Scalable), 1_000, 0.01).unwrap();
        e.fill_to(4_000).unwrap();
        let m = e.measure(100_000).unwrap();
        assert!(m.measured_rate() < 0.012, "{m:?}");
        assert!(m.parameters.iter().filter(|(n, _)| n == "layer").count() > 1);
    }

    #[test]
    fn bad_rates_are_the_librarys_errors() {
        let err = Experiment::new(Kind::File(FilterKind::Blocked), 1_000, 1.5).unwrap_err();
        assert!(matches!(err, LabError::Filter(_)));
        assert!(err.to_string().contains("1.5"), "{err}");
    }
}
