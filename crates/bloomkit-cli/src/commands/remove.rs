//! `bloomkit remove`: take keys out of a counting or cuckoo filter file in place.

use std::ffi::OsString;
use std::ops::ControlFlow;
use std::path::Path;

use bloomkit::AnyFilter;

use crate::commands::insert::state;
use crate::error::{Error, Result};
use crate::files::{self, OnBusy};
use crate::keys::KeyArgs;
use crate::{human, output};

/// Removes one copy of every key in `keys` (`-`, or none at all, for the lines of stdin)
/// from the counting or cuckoo filter in `path`, and writes the file back atomically. A key
/// that is definitely not in the filter changes nothing and is counted in the summary.
///
/// Remove only keys that were inserted: a key that was never inserted but looks present (a
/// false positive) takes away counters or a fingerprint that other keys need.
///
/// # Errors
///
/// An unreadable filter or stdin; a kind that cannot remove keys; a failed write. The file
/// is unchanged after any error.
pub fn run(path: &Path, keys: &[OsString], on_busy: OnBusy) -> Result<()> {
    let keys = KeyArgs::new(keys)?;
    let (mut removed, mut absent) = (0u64, 0u64);
    let (filter, (), _) = files::change_in_place(path, "remove", on_busy, |filter| {
        let seed = filter.seed();
        let mut remove: Box<dyn FnMut(u64) -> bool> = match filter {
            AnyFilter::Counting(f) => Box::new(|hash| f.remove_hash(hash)),
            AnyFilter::Cuckoo(f) => Box::new(|hash| f.remove_hash(hash)),
            other => {
                return Err(Error::Message(format!(
                    "cannot remove keys from '{}': {} {} filter cannot forget a key (its \
                     bits are shared by other keys); only counting and cuckoo filters can, so \
                     rebuild it with --kind counting or --kind cuckoo",
                    path.display(),
                    human::article(other.kind().name()),
                    other.kind()
                )))
            }
        };
        keys.for_each(|key| {
            if remove(bloomkit::hash_bytes_with_seed(key, seed)) {
                removed += 1;
            } else {
                absent += 1;
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(())
    })?;
    let absent_text = if absent == 0 {
        String::new()
    } else {
        format!(
            " ({} definitely not in the filter, unchanged)",
            human::count(absent)
        )
    };
    output::print(&format!(
        "{}: removed {}{absent_text}; {}\n",
        path.display(),
        human::count_of(removed, "key", "keys"),
        state(&filter)
    ))
}
