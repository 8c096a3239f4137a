//! What a copy did, for the progress bar while it runs and the one-line summary after.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use crate::human;

/// Keys copied, skipped and failed, bytes moved, and the bar that shows them.
pub struct Tally {
    started: Instant,
    /// Keys copied.
    pub copied: u64,
    /// Bytes of the keys copied.
    pub bytes: u64,
    /// Keys passed over, by why (a type name, or "aging keys the destination cannot hold").
    pub skipped: BTreeMap<String, u64>,
    /// Keys that failed.
    pub failed: u64,
    /// Bytes of the key being copied, for the bar.
    current_bytes: u64,
    bar: Option<ProgressBar>,
}

impl Tally {
    /// A tally of `keys` keys to copy, with a bar on stderr if it is a terminal.
    pub fn new(keys: u64) -> Tally {
        let bar = (std::io::stderr().is_terminal() && keys > 0).then(|| {
            let style = ProgressStyle::with_template("copying {wide_bar} {pos}/{len} keys, {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            ProgressBar::new(keys).with_style(style)
        });
        Tally {
            started: Instant::now(),
            copied: 0,
            bytes: 0,
            skipped: BTreeMap::new(),
            failed: 0,
            current_bytes: 0,
            bar,
        }
    }

    /// Records a chunk of `bytes` of the key being copied.
    pub fn chunk(&mut self, bytes: u64) {
        self.current_bytes += bytes;
        if let Some(bar) = &self.bar {
            bar.set_message(human::bytes(self.bytes + self.current_bytes));
        }
    }

    /// Records the end of a key: copied or not.
    pub fn key_done(&mut self, copied: bool) {
        if copied {
            self.copied += 1;
            self.bytes += self.current_bytes;
        } else {
            self.failed += 1;
        }
        self.current_bytes = 0;
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Records a key passed over, and why.
    pub fn skip(&mut self, why: &str, keys: u64) {
        *self.skipped.entry(why.to_string()).or_default() += keys;
        if let Some(bar) = &self.bar {
            bar.inc(0);
        }
    }

    /// Prints `line` (a failure) above the bar.
    pub fn print(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// Removes the bar and returns the summary: `copied 3 keys (1.2 MiB) in 0.4 s; skipped
    /// 2 keys (string: 2)`.
    pub fn finish(self) -> String {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let plural = |n: u64| if n == 1 { "key" } else { "keys" };
        let mut line = format!(
            "copied {} {} ({}) in {:.1} s",
            self.copied,
            plural(self.copied),
            human::bytes(self.bytes),
            self.started.elapsed().as_secs_f64()
        );
        let skipped: u64 = self.skipped.values().sum();
        if skipped > 0 {
            let why: Vec<String> = self
                .skipped
                .iter()
                .map(|(why, n)| format!("{why}: {n}"))
                .collect();
            line.push_str(&format!(
                "; skipped {skipped} {} ({})",
                plural(skipped),
                why.join(", ")
            ));
        }
        if self.failed > 0 {
            line.push_str(&format!("; {} failed", self.failed));
        }
        line
    }
}
