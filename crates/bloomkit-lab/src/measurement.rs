//! [`Measurement`]: what [`Experiment::measure`](crate::Experiment::measure) found.

use crate::Kind;

/// What [`Experiment::measure`](crate::Experiment::measure) found.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// The kind of filter.
    pub kind: Kind,
    /// The keys it was planned for.
    pub planned: u64,
    /// The rate it was planned for.
    pub target_fp_rate: f64,
    /// The keys it holds.
    pub inserted: u64,
    /// The key count at which a cuckoo filter refused a key, if it did.
    pub full_at: Option<u64>,
    /// Absent keys queried.
    pub absent_keys: u64,
    /// Absent keys answered "maybe".
    pub false_positives: u64,
    /// Present keys answered "no": always 0 for a correct filter.
    pub false_negatives: u64,
    /// Bytes of memory the filter holds.
    pub memory_bytes: usize,
    /// The rate the library's sizing math predicts for the filter holding the keys inserted.
    pub predicted_rate: f64,
    /// The fraction [`Kind::fill_meaning`] describes, 0 to 1.
    pub fill: f64,
    /// The library's own list of the filter's parameters (`AnyFilter::parameters`).
    pub parameters: Vec<(String, String)>,
}

impl Measurement {
    /// The share of absent keys answered "maybe".
    pub fn measured_rate(&self) -> f64 {
        if self.absent_keys == 0 {
            0.0
        } else {
            self.false_positives as f64 / self.absent_keys as f64
        }
    }

    /// Bits of memory per key held (per planned key while it holds none).
    pub fn bits_per_key(&self) -> f64 {
        self.memory_bytes as f64 * 8.0 / self.inserted.max(1) as f64
    }
}
