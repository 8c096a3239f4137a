//! bloomkit's benchmark harness: bloomkit's filters beside the peer crates, measured in the
//! same run on the same keys.
//!
//! The core (everything but `peers`) depends on bloomkit alone, so the CLI can offer a
//! `bloomkit bench` that measures bloomkit's kinds on a user's machine. The peer crates are
//! optional dependencies behind the `peers` feature, used by the `compare` binary:
//!
//! ```text
//! cargo run --release -p bloomkit-bench --features peers --bin compare -- \
//!     [--quick] [--regime cache|memory|limit|all] [--keys int|string|all]
//! ```
//!
//! The `million` binary times the cuckoo, binary fuse and ribbon filters at 10^6 keys, one
//! pass each, for the per-key figures the library's docs quote:
//!
//! ```text
//! cargo run --release -p bloomkit-bench --bin million [cuckoo|fuse|ribbon]...
//! ```
//!
//! # Overview of modules
//!
//! * [`fp_grid`]: every kind's mean measured false-positive rate against its target, from
//!   one key to 10^7 and from 50% to 10^−7 (the `fp_grid` binary and `tests/it/fp_grid.rs`).
//! * [`keys`]: deterministic keys from a counter (8-byte integers from a fixed-seed
//!   splitmix64; 16–32-byte strings), generated into small reusable pools outside timing.
//! * [`subject`]: the [`Subject`] trait (one filter under test: insert, query by key or by
//!   precomputed hash, memory) and the [`Contender`] trait (a configured filter kind: builds
//!   subjects, knows their size); [`Static`] adapts a filter built from all keys at once.
//! * [`ours`]: bloomkit's kinds as contenders, and where new kinds are added.
//! * [`measure`]: the two regimes (in cache, about 64 KiB; out of cache, at least
//!   512 MiB) and how one contender is measured in each.
//! * [`timing`]: `Instant` around loops, medians of repetitions.
//! * [`report`]: markdown tables of figures and of ratios against bloomkit.
//! * [`memlimit`]: the memory system's limit: random 64-byte reads, dependent, independent
//!   and batched with prefetch.
//! * `peers` (feature `peers`): adapters for fastbloom, bloomfilter, sbbf-rs,
//!   growable-bloom-filter, xorf, cuckoofilter and qfilter, and bloomkit's targets beside them.
//!
//! # Examples
//!
//! Measure bloomkit's blocked filter in cache, on integer keys, at tiny sizes:
//!
//! ```
//! use bloomkit_bench::{measure, ours, Config, Regime};
//!
//! let config = Config::tiny();
//! let blocked = &ours::contenders::<u64>()[0];
//! let outcome = measure::measure(blocked.as_ref(), Regime::Cache, &config);
//! let row = outcome.row().expect("it ran");
//! assert_eq!(row.missed_present, 0);
//! assert!(row.fp_rate() < 0.02, "{}", row.fp_rate());
//! ```

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod fp_grid;
pub mod keys;
pub mod measure;
pub mod memlimit;
pub mod ours;
#[cfg(feature = "peers")]
pub mod peers;
pub mod report;
pub mod subject;
pub mod timing;

pub use crate::measure::{Config, Outcome, Regime, Row};
pub use crate::subject::{Contender, Family, Hashing, Info, Static, Subject, Target};
