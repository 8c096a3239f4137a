//! [`Kind`]: the kinds of filter an experiment builds, by the names the page and CLI use:
//! the library's list ([`FilterKind::ALL`]), and the atomic filter beside the blocked one.

use std::fmt;

use bloomkit::FilterKind;

/// The kinds of filter an experiment can build: every kind of the library's list, and the
/// [`AtomicBloomFilter`](bloomkit::AtomicBloomFilter), which is stored as a blocked filter
/// but inserts through `&self`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A kind of the library's list ([`FilterKind::ALL`]), built as [`bloomkit::AnyFilter`]
    /// builds it.
    File(FilterKind),
    /// [`bloomkit::AtomicBloomFilter`].
    Atomic,
}

impl Kind {
    /// Every kind, in the order the page and the CLI list them: the library's, with the
    /// atomic filter after the blocked one.
    pub const ALL: [Kind; FilterKind::ALL.len() + 1] = {
        let mut all = [Kind::Atomic; FilterKind::ALL.len() + 1];
        let (mut from, mut to) = (0, 0);
        while from < FilterKind::ALL.len() {
            all[to] = Kind::File(FilterKind::ALL[from]);
            to += 1;
            if matches!(FilterKind::ALL[from], FilterKind::Blocked) {
                all[to] = Kind::Atomic;
                to += 1;
            }
            from += 1;
        }
        all
    };

    /// The kind's name, as the CLI's `--kind` and the page spell it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::File(kind) => kind.name(),
            Kind::Atomic => "atomic",
        }
    }

    /// The kind named `name`, if any.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// What the kind is, in one line: the library's [`FilterKind::summary`].
    pub fn summary(self) -> &'static str {
        match self {
            Kind::File(kind) => kind.summary(),
            Kind::Atomic => "blocked, with atomic words: many threads insert at once",
        }
    }

    /// The kind as stored in a filter file's header (an atomic filter is stored as blocked).
    pub fn file_kind(self) -> FilterKind {
        match self {
            Kind::File(kind) => kind,
            Kind::Atomic => FilterKind::Blocked,
        }
    }

    /// `true` for a kind built once from all its keys (ribbon, fuse), which cannot be
    /// overfilled.
    pub fn is_static(self) -> bool {
        self.file_kind().is_static()
    }

    /// What [`Measurement::fill`](crate::Measurement::fill) measures for this kind: the
    /// library's [`FilterKind::fill_meaning`].
    pub fn fill_meaning(self) -> &'static str {
        self.file_kind().fill_meaning()
    }
}

impl From<FilterKind> for Kind {
    fn from(kind: FilterKind) -> Self {
        Kind::File(kind)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_kind_has_a_kind_and_atomic_follows_blocked() {
        for file_kind in FilterKind::ALL {
            assert_eq!(
                Kind::ALL
                    .iter()
                    .filter(|k| **k == Kind::File(file_kind))
                    .count(),
                1,
                "{file_kind:?}"
            );
        }
        let blocked = Kind::ALL
            .iter()
            .position(|k| *k == Kind::File(FilterKind::Blocked))
            .unwrap();
        assert_eq!(Kind::ALL[blocked + 1], Kind::Atomic);
    }

    #[test]
    fn names_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.name()), Some(k));
        }
        assert_eq!(Kind::from_name("bloom"), None);
    }
}
