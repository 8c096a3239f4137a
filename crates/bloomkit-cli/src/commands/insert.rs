//! `bloomkit insert`: add keys to a filter file in place.

use std::ffi::OsString;
use std::ops::ControlFlow;
use std::path::Path;

use bloomkit::AnyFilter;

use crate::commands::build::{could_grow, EXPANSION_COST};
use crate::error::{Context, Error, Result};
use crate::files::{self, OnBusy};
use crate::keys::KeyArgs;
use crate::{human, output};

/// Adds every key in `keys` (`-`, or none at all, for the lines of stdin) to the filter in
/// `path`, as the kind's own `insert` does (counting and cuckoo filters keep every copy), and
/// writes the file back atomically.
///
/// # Errors
///
/// An unreadable filter or stdin; a kind that takes no keys (ribbon); a full cuckoo
/// filter; a failed write. The file is unchanged after any error.
pub fn run(path: &Path, keys: &[OsString], on_busy: OnBusy) -> Result<()> {
    let keys = KeyArgs::new(keys)?;
    let mut inserted = 0u64;
    let (filter, (), _) = files::change_in_place(path, "insert", on_busy, |filter| {
        let seed = filter.seed();
        keys.for_each(|key| {
            let doing = || {
                format!(
                    "cannot insert key {} into '{}' (the file is unchanged)",
                    human::count(inserted + 1),
                    path.display()
                )
            };
            match filter.insert_hash(bloomkit::hash_bytes_with_seed(key, seed)) {
                Ok(_) => {}
                // What "let it grow" means with this tool.
                Err(e @ bloomkit::Error::Full { .. }) if could_grow(filter) => {
                    return Err(Error::Message(format!(
                        "{}: {e}; to let it grow, rebuild it from its keys with 'bloomkit \
                         build --kind {} --expansion 2' ({EXPANSION_COST}), or with a larger \
                         --items",
                        doing(),
                        filter.kind(),
                    )))
                }
                Err(e) => return Err(e).context(doing),
            }
            inserted += 1;
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(())
    })?;
    output::print(&format!(
        "{}: inserted {}; {}\n",
        path.display(),
        human::count_of(inserted, "key", "keys"),
        state(&filter)
    ))
}

/// What a filter holds after a change, for the summary line: its kind, keys and rate.
pub fn state(filter: &AnyFilter) -> String {
    format!(
        "{} filter of {}, estimated false-positive rate {}",
        filter.kind(),
        human::count_of(filter.len(), "key", "keys"),
        human::percent_sig(filter.estimated_fp_rate())
    )
}
