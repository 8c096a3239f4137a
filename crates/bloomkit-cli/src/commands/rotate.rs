//! `bloomkit rotate`: move an aging filter file to its next generation, in place.

use std::path::Path;

use bloomkit::AnyFilter;

use crate::commands::insert::state;
use crate::error::{Error, Result};
use crate::files::{self, OnBusy};
use crate::{human, output};

/// Rotates the aging filter in `path`: its oldest generation is emptied and becomes the
/// newest, which takes the inserts from now on; its keys are forgotten (unless a newer
/// generation also holds them). Writes the file back atomically.
///
/// # Errors
///
/// An unreadable filter, a kind other than aging, or a failed write. The file is unchanged
/// after any error.
pub fn run(path: &Path, on_busy: OnBusy) -> Result<()> {
    let (filter, forgotten, _) = files::change_in_place(path, "rotate", on_busy, |filter| {
        let AnyFilter::Aging(aging) = filter else {
            return Err(Error::Message(format!(
                "cannot rotate '{}': it holds {} {} filter, and only aging filters have \
                 generations to rotate",
                path.display(),
                human::article(filter.kind().name()),
                filter.kind()
            )));
        };
        let oldest = aging.num_generations() as usize - 1;
        let forgotten = aging.generation(oldest).map_or(0, |g| g.len());
        aging.rotate();
        Ok(forgotten)
    })?;
    output::print(&format!(
        "{}: rotated, forgetting the oldest generation ({}); {}\n",
        path.display(),
        human::count_of(forgotten, "key", "keys"),
        state(&filter)
    ))
}
