//! [`TeachingFilter`]: the sixteen-bit, three-hash Bloom filter the explorer draws.
//!
//! The library's filters round their bits up to whole 64-bit words (or 512-bit lines), so none
//! of them is sixteen bits long; this one is written out here, small enough to draw, and keeps
//! what a drawing needs and a real filter throws away: which words set each bit.
//!
//! Its probes come from the library's key hash. A word's three hash values are three 21-bit
//! slices of its 64-bit hash, [`bloomkit::hash_bytes`] of its UTF-8 bytes (what `bloomkit::hash`
//! gives for the same `&str`: XXH3-64 under the default seed), and each is mapped to a cell by
//! the multiply-high range reduction the library's filters use, which here keeps a slice's top
//! four bits:
//!
//! ```text
//! hᵢ(word)   = (bloomkit::hash(word) >> 21·(i − 1)) mod 2²¹      for i = 1, 2, 3
//! position i = ⌊hᵢ(word) · 16 / 2²¹⌋
//! ```
//!
//! Disjoint slices of one good 64-bit hash behave as independent hash functions, which is all
//! the textbook analysis assumes. (The library's classic filter derives its k probes from the
//! same 64-bit hash by enhanced double hashing instead, which scales to any k; three slices
//! are easier to state.) Of the plain ways to cut three hashes from one, this one was chosen
//! because it makes lime a false positive on the starting state, the example the figure
//! replays; a test pins that.

use std::fmt;

/// Bits in the figure.
pub const NUM_BITS: usize = 16;

/// Hash functions, and so probes per word.
pub const NUM_HASHES: usize = 3;

/// The words the figure starts with.
pub const STARTING_WORDS: [&str; 3] = ["apple", "banana", "cherry"];

/// Words the page may replay as a false positive on the starting state: the first one that is
/// one, [`false_positive_word`], is the one the "play" button uses and names. The hashes make it
/// lime (a test pins that); the others are there so that the page still has an example should
/// the figure's starting words ever change.
pub const FALSE_POSITIVE_CANDIDATES: [&str; 8] = [
    "lime", "plum", "grape", "mango", "peach", "melon", "lemon", "fig",
];

/// The longest word the figure takes, in bytes: enough for any word, short enough to draw.
pub const MAX_WORD_BYTES: usize = 40;

/// The most words the figure holds: by then every bit is set and the lesson is over.
pub const MAX_WORDS: usize = 64;

/// Bits of the hash each hash function takes.
const SLICE_BITS: u32 = 21;

/// The three hash values hᵢ(word), each below 2²¹; see the module's documentation.
pub fn hash_values(word: &str) -> [u64; NUM_HASHES] {
    let h = bloomkit::hash_bytes(word.as_bytes());
    let mask = (1u64 << SLICE_BITS) - 1;
    std::array::from_fn(|i| (h >> (SLICE_BITS * i as u32)) & mask)
}

/// The three cells `word` probes, in the order h₁, h₂, h₃ (two may coincide).
pub fn positions(word: &str) -> [usize; NUM_HASHES] {
    hash_values(word).map(|h| ((h * NUM_BITS as u64) >> SLICE_BITS) as usize)
}

/// Why a word was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WordError {
    /// The word is empty.
    Empty,
    /// The word is longer than [`MAX_WORD_BYTES`].
    TooLong {
        /// Its length in bytes.
        bytes: usize,
    },
    /// The figure already holds [`MAX_WORDS`] words.
    Full,
}

impl fmt::Display for WordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WordError::Empty => f.write_str("type a word first"),
            WordError::TooLong { bytes } => write!(
                f,
                "that word is {bytes} bytes long; the figure takes words of up to \
                 {MAX_WORD_BYTES} bytes"
            ),
            WordError::Full => write!(
                f,
                "the figure holds {MAX_WORDS} words already and every bit is set: press Reset"
            ),
        }
    }
}

impl std::error::Error for WordError {}

/// What adding a word did, for the badges and lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Added {
    /// The cells it probes, h₁ to h₃.
    pub positions: [usize; NUM_HASHES],
    /// For each probe: was the cell already 1 before this word (set by earlier words)?
    pub shared: [bool; NUM_HASHES],
    /// Had the word been added before? (Then nothing changed.)
    pub repeated: bool,
}

/// One check of a query: the cell a hash names and what it held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// The cell.
    pub position: usize,
    /// Its bit.
    pub bit: bool,
    /// The added words whose probes set it, in the order they were added.
    pub setters: Vec<String>,
}

/// A query's checks and its verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// The checks in order h₁, h₂, h₃; a query stops at the first 0, so the checks after it
    /// are shown but were never needed.
    pub checks: [Check; NUM_HASHES],
    /// The index of the check whose 0 proved the word absent, or `None` if all three were 1.
    pub stopped_at: Option<usize>,
    /// Was the word added?
    pub added: bool,
}

impl Query {
    /// The filter's answer: `false` is "definitely not", `true` is "maybe".
    pub fn maybe(&self) -> bool {
        self.stopped_at.is_none()
    }

    /// A "maybe" for a word that was never added.
    pub fn false_positive(&self) -> bool {
        self.maybe() && !self.added
    }
}

/// A sixteen-bit Bloom filter with three hash functions that remembers which words set each
/// bit.
///
/// # Examples
///
/// ```
/// use bloomkit_wasm::teach::{TeachingFilter, false_positive_word};
///
/// let mut f = TeachingFilter::starting();
/// assert!(f.query("apple").maybe());
/// let fp = false_positive_word().expect("one candidate is a false positive");
/// assert!(f.query(fp).false_positive());
/// f.add("kiwi")?;
/// assert!(f.query("kiwi").maybe());
/// # Ok::<(), bloomkit_wasm::teach::WordError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TeachingFilter {
    /// The words added, in order, each once.
    words: Vec<String>,
    /// For each cell, the indexes into `words` of the words whose probes hit it.
    setters: [Vec<usize>; NUM_BITS],
}

impl TeachingFilter {
    /// An empty filter.
    pub fn new() -> Self {
        Self::default()
    }

    /// The figure's starting state: [`STARTING_WORDS`] added.
    pub fn starting() -> Self {
        let mut f = Self::new();
        for word in STARTING_WORDS {
            // The starting words are short and few: adding them cannot fail.
            let _ = f.add(word);
        }
        f
    }

    /// Adds `word`.
    ///
    /// # Errors
    ///
    /// An empty or too long word, or a full figure.
    pub fn add(&mut self, word: &str) -> Result<Added, WordError> {
        check_word(word)?;
        let positions = positions(word);
        let shared = positions.map(|p| self.bit(p));
        if self.words.iter().any(|w| w == word) {
            return Ok(Added {
                positions,
                shared,
                repeated: true,
            });
        }
        if self.words.len() >= MAX_WORDS {
            return Err(WordError::Full);
        }
        let index = self.words.len();
        self.words.push(word.to_string());
        for p in positions {
            // A word whose two probes name the same cell is listed there once.
            if self.setters[p].last() != Some(&index) {
                self.setters[p].push(index);
            }
        }
        Ok(Added {
            positions,
            shared,
            repeated: false,
        })
    }

    /// Queries `word`: its three checks, where it stopped, and whether it was added. Any
    /// string may be queried, even one [`add`](Self::add) would refuse.
    pub fn query(&self, word: &str) -> Query {
        let positions = positions(word);
        let checks = positions.map(|position| Check {
            position,
            bit: self.bit(position),
            setters: self.setters(position),
        });
        let stopped_at = checks.iter().position(|c| !c.bit);
        Query {
            checks,
            stopped_at,
            added: self.words.iter().any(|w| w == word),
        }
    }

    /// The bit at `position` (`false` past the end).
    pub fn bit(&self, position: usize) -> bool {
        self.setters.get(position).is_some_and(|s| !s.is_empty())
    }

    /// The words whose probes set the bit at `position`, in the order they were added.
    pub fn setters(&self, position: usize) -> Vec<String> {
        self.setters
            .get(position)
            .map(|s| s.iter().map(|&i| self.words[i].clone()).collect())
            .unwrap_or_default()
    }

    /// The words added, in order.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// How many bits are 1.
    pub fn count_ones(&self) -> usize {
        (0..NUM_BITS).filter(|&p| self.bit(p)).count()
    }
}

/// The first of [`FALSE_POSITIVE_CANDIDATES`] that the starting state answers "maybe" for,
/// though it was never added: the word the page's "play" button replays.
pub fn false_positive_word() -> Option<&'static str> {
    let start = TeachingFilter::starting();
    FALSE_POSITIVE_CANDIDATES
        .into_iter()
        .find(|w| start.query(w).false_positive())
}

fn check_word(word: &str) -> Result<(), WordError> {
    if word.is_empty() {
        Err(WordError::Empty)
    } else if word.len() > MAX_WORD_BYTES {
        Err(WordError::TooLong { bytes: word.len() })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_slices_of_the_library_hash() {
        for word in ["apple", "kiwi", "", "naïve"] {
            let h = bloomkit::hash(word);
            let expected = [h & 0x1f_ffff, (h >> 21) & 0x1f_ffff, (h >> 42) & 0x1f_ffff];
            assert_eq!(hash_values(word), expected, "{word}");
            assert_eq!(positions(word), expected.map(|v| (v >> 17) as usize));
        }
    }

    #[test]
    fn bits_are_the_union_of_the_added_words_probes() {
        let f = TeachingFilter::starting();
        let mut expected = [false; NUM_BITS];
        for w in STARTING_WORDS {
            for p in positions(w) {
                expected[p] = true;
            }
        }
        let bits: Vec<bool> = (0..NUM_BITS).map(|p| f.bit(p)).collect();
        assert_eq!(bits, expected);
        assert_eq!(f.count_ones(), expected.iter().filter(|&&b| b).count());
    }

    #[test]
    fn added_words_are_always_found() {
        let mut f = TeachingFilter::starting();
        for w in ["kiwi", "date", "elderberry", "x", "🍋"] {
            f.add(w).unwrap();
        }
        for w in f.words().to_vec() {
            let q = f.query(&w);
            assert!(q.maybe() && q.added && !q.false_positive(), "{w}");
        }
    }

    #[test]
    fn a_zero_stops_the_query_at_the_first_zero() {
        let f = TeachingFilter::starting();
        let mut seen_no = false;
        for i in 0..200 {
            let w = format!("word{i}");
            let q = f.query(&w);
            match q.stopped_at {
                Some(s) => {
                    seen_no = true;
                    assert!(!q.checks[s].bit && q.checks[..s].iter().all(|c| c.bit));
                    assert!(q.checks[s].setters.is_empty());
                }
                None => assert!(q.checks.iter().all(|c| c.bit && !c.setters.is_empty())),
            }
        }
        assert!(seen_no);
    }

    #[test]
    fn shared_cells_are_those_already_set() {
        let mut f = TeachingFilter::starting();
        let before: Vec<bool> = (0..NUM_BITS).map(|p| f.bit(p)).collect();
        let added = f.add("kiwi").unwrap();
        for (p, shared) in added.positions.iter().zip(added.shared) {
            assert_eq!(shared, before[*p]);
            assert!(f.bit(*p));
            assert!(f.setters(*p).contains(&"kiwi".to_string()));
        }
        // Nothing else changed.
        for (p, &was) in before.iter().enumerate() {
            if !added.positions.contains(&p) {
                assert_eq!(f.bit(p), was);
            }
        }
    }

    #[test]
    fn adding_twice_changes_nothing() {
        let mut f = TeachingFilter::starting();
        let before = f.clone();
        let again = f.add("apple").unwrap();
        assert!(again.repeated && again.shared.iter().all(|&s| s));
        assert_eq!(f, before);
    }

    #[test]
    fn bad_words_are_refused() {
        let mut f = TeachingFilter::new();
        assert_eq!(f.add(""), Err(WordError::Empty));
        let long = "a".repeat(MAX_WORD_BYTES + 1);
        assert_eq!(
            f.add(&long),
            Err(WordError::TooLong {
                bytes: MAX_WORD_BYTES + 1
            })
        );
        for i in 0..MAX_WORDS {
            f.add(&format!("w{i}")).unwrap();
        }
        assert_eq!(f.add("one more"), Err(WordError::Full));
        assert!(f.add("w0").unwrap().repeated, "a repeat is still answered");
    }

    #[test]
    fn lime_is_the_false_positive_the_page_plays() {
        // Pins the figure: the page says which word plays the role, and this is it.
        assert_eq!(false_positive_word(), Some("lime"));
    }
}
