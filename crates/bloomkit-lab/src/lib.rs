//! Measuring bloomkit's filters as its hosts show them to people: [`Experiment`], a real
//! filter of any kind, filled with keys and measured, and [`json`], the small JSON writer
//! those hosts answer in.
//!
//! The explorer page's "real filter" panel (`bloomkit-wasm`, in the browser) and
//! `bloomkit plot` (the CLI, natively) both run [`Experiment`], so the page and the chart
//! measure the same way: the library's own filter types, sized by the library's constructors
//! for a key count and a target rate, filled with distinct keys, and probed with keys that
//! were never added. The page answers its script in JSON and `bloomkit info --json` prints
//! JSON, both through [`json::Json`].
//!
//! Keys are numbers: key `i` is the 8 little-endian bytes of `i`, hashed with
//! [`bloomkit::hash_bytes`] and inserted and queried by that hash (every kind's `*_hash`
//! methods). Present keys are `0, 1, 2, …`; absent keys have the top bit set, so no absent key
//! is ever a present one and every "maybe" for one is a false positive.
//!
//! * [`Kind`] (`kind.rs`): the kinds, by name.
//! * [`Experiment`] (`experiment.rs`): one filter, filled and measured.
//! * [`Measurement`] (`measurement.rs`): what a measurement found.
//! * [`json`] (`json.rs`): a JSON value and its text.
//!
//! The crate sits between the library and the hosts that show filters (the CLI and the
//! explorer's WebAssembly crate); it knows neither host.

#![deny(missing_docs)]
#![deny(unsafe_code)]

mod experiment;
pub mod json;
mod kind;
mod measurement;

use std::fmt;

pub use experiment::Experiment;
pub use kind::Kind;
pub use measurement::Measurement;

/// The bit that makes a key absent: present keys are below it.
const ABSENT_BIT: u64 = 1 << 63;

/// The hash of present key `id` (see the module's documentation).
pub fn present_hash(id: u64) -> u64 {
    bloomkit::hash_bytes(&(id & !ABSENT_BIT).to_le_bytes())
}

/// The hash of absent key `id`: never the hash of a present key's bytes.
pub fn absent_hash(id: u64) -> u64 {
    bloomkit::hash_bytes(&(id | ABSENT_BIT).to_le_bytes())
}

/// Why an experiment could not do what it was asked.
#[derive(Debug)]
pub enum LabError {
    /// The library refused (a bad rate, an impossible size, a scalable filter out of memory).
    Filter(bloomkit::Error),
    /// A static filter (ribbon, fuse) holds exactly the keys it was built from; it cannot be
    /// overfilled.
    Static {
        /// The keys it was built from.
        planned: u64,
        /// The keys asked for.
        requested: u64,
    },
}

impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabError::Filter(e) => write!(f, "{e}"),
            LabError::Static { planned, requested } => write!(
                f,
                "a static filter (ribbon, fuse) holds exactly the {planned} keys it was built \
                 from and cannot take {requested}; build a new one for more keys"
            ),
        }
    }
}

impl std::error::Error for LabError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LabError::Filter(e) => Some(e),
            LabError::Static { .. } => None,
        }
    }
}

impl From<bloomkit::Error> for LabError {
    fn from(e: bloomkit::Error) -> Self {
        LabError::Filter(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_keys_are_never_present_keys() {
        assert_ne!(present_hash(5), absent_hash(5));
        assert_eq!(present_hash(5), bloomkit::hash_bytes(&5u64.to_le_bytes()));
    }
}
