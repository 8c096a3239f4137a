//! Progress while `build` reads keys: a bar by bytes for large files, a key count for
//! standard input, and nothing at all unless someone is watching.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use crate::files::Input;
use crate::human;

/// Below this much input a build takes a second or two: a bar would only flicker.
const LARGE_INPUT_BYTES: u64 = 64 << 20;

/// Keys between updates of a bar: often enough to move smoothly, rarely enough to cost
/// nothing per key.
const BAR_EVERY_KEYS: u64 = 1 << 16;

/// Keys between updates of the standard-input spinner, which shows the count itself.
const SPINNER_EVERY_KEYS: u64 = 1 << 20;

/// What is shown.
enum Mode {
    /// Nothing: stderr is not a terminal, or the input is small.
    Off,
    /// A bar over the total size of the input files.
    Bytes { total: u64 },
    /// A spinner counting keys, for input of unknown size (standard input); created on the
    /// first update, so small piped inputs show nothing.
    Keys,
}

/// Progress of reading keys, drawn on stderr (stdout carries the results).
pub struct Progress {
    mode: Mode,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Progress for reading `inputs`, shown only when stderr is a terminal and the input is
    /// large (or of unknown size).
    pub fn new(inputs: &[Input]) -> Self {
        let mut total = 0u64;
        let mut stdin = false;
        for input in inputs {
            match input {
                Input::Stdin => stdin = true,
                Input::File { len, .. } => total = total.saturating_add(*len),
            }
        }
        let mode = if !std::io::stderr().is_terminal() {
            Mode::Off
        } else if stdin {
            Mode::Keys
        } else if total >= LARGE_INPUT_BYTES {
            Mode::Bytes { total }
        } else {
            Mode::Off
        };
        let bar = match mode {
            Mode::Bytes { total } => {
                let style = ProgressStyle::with_template(
                    // wide_bar takes what the rest leaves, so the line fits any terminal.
                    "reading keys {wide_bar} {bytes}/{total_bytes} ({eta} left)",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar());
                Some(ProgressBar::new(total).with_style(style))
            }
            Mode::Off | Mode::Keys => None,
        };
        Progress { mode, bar }
    }

    /// Records that `keys` keys and `bytes` bytes have been read in all; cheap enough to call
    /// for every key.
    #[inline]
    pub fn update(&mut self, keys: u64, bytes: u64) {
        match self.mode {
            Mode::Off => {}
            Mode::Bytes { .. } => {
                if keys.is_multiple_of(BAR_EVERY_KEYS) {
                    if let Some(bar) = &self.bar {
                        bar.set_position(bytes);
                    }
                }
            }
            Mode::Keys => {
                if keys.is_multiple_of(SPINNER_EVERY_KEYS) {
                    let bar = self.bar.get_or_insert_with(|| {
                        let style = ProgressStyle::with_template("{spinner} reading keys: {msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner());
                        ProgressBar::new_spinner().with_style(style)
                    });
                    bar.set_message(human::count(keys));
                    bar.tick();
                }
            }
        }
    }

    /// Removes whatever is shown, so the summary starts on a clean line.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
