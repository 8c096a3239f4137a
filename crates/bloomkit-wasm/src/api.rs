//! [`Explorer`]: everything the page asks of the library, as JSON replies.
//!
//! The page's JavaScript only draws: it passes what the visitor typed or chose to these
//! methods (through `ffi.rs` in the browser) and draws the reply. Natively the same methods
//! give the same replies, which is how the tests compare the `.wasm` with native code.
//!
//! Numbers arrive as JavaScript numbers (`f64`) and are checked here, so no input from the
//! page can ask for more than the browser's limits below. A refused request replies
//! `{"error": "..."}` with a message for the visitor.

use crate::curve::rate_curve;
use crate::teach::{self, Query, TeachingFilter, NUM_BITS};
use bloomkit_lab::json::Json;
use bloomkit_lab::{Experiment, Kind, Measurement};

/// The most keys the page's real filter may be planned for: a few MiB of filter in the tab.
pub const MAX_KEYS: u64 = 2_000_000;

/// The most absent keys one measurement queries.
pub const MAX_ABSENT_KEYS: u64 = 4_000_000;

/// The most the page may overfill a filter: 4× its planned keys.
pub const MAX_OVERFILL: f64 = 4.0;

/// Limits of the rate-versus-k figure's sliders.
pub const MAX_CURVE_BITS: u64 = 1 << 20;
/// The most hashes the curve is drawn for.
pub const MAX_CURVE_K: u32 = 64;

/// The page's state: the small filter and the real one.
#[derive(Debug)]
pub struct Explorer {
    teach: TeachingFilter,
    lab: Option<Experiment>,
}

impl Default for Explorer {
    fn default() -> Self {
        Self::new()
    }
}

impl Explorer {
    /// The starting state: the small filter holding apple, banana and cherry; no real filter.
    pub fn new() -> Self {
        Explorer {
            teach: TeachingFilter::starting(),
            lab: None,
        }
    }

    /// Puts the small filter back in its starting state; replies as
    /// [`teach_state`](Self::teach_state).
    pub fn teach_reset(&mut self) -> String {
        self.teach = TeachingFilter::starting();
        self.teach_state()
    }

    /// The small filter: `bits` (16 of 0 or 1), `setters` (for each bit, the words that set
    /// it), `words`, and the figure's constants (`num_bits`, `num_hashes`,
    /// `false_positive_word`, the word the "play" button replays).
    pub fn teach_state(&self) -> String {
        self.state_json().to_text()
    }

    /// Adds `word` to the small filter: `hashes` (h₁, h₂, h₃), `positions`, `shared` (was
    /// each cell 1 already), `repeated` (added before), and the new `state`.
    pub fn teach_add(&mut self, word: &str) -> String {
        match self.teach.add(word) {
            Ok(added) => Json::object([
                ("word", Json::str(word)),
                (
                    "hashes",
                    Json::array(teach::hash_values(word).map(Json::Int)),
                ),
                (
                    "positions",
                    Json::array(added.positions.map(|p| Json::Int(p as u64))),
                ),
                ("shared", Json::array(added.shared.map(Json::Bool))),
                ("repeated", Json::Bool(added.repeated)),
                ("state", self.state_json()),
            ]),
            Err(e) => Json::error(&e.to_string()),
        }
        .to_text()
    }

    /// Queries `word` (any string but the empty one) in the small filter: `hashes`,
    /// `positions`, `checks` (each cell's
    /// `position`, `bit` and `setters`), `stopped_at` (the check whose 0 proved it absent, or
    /// null), `maybe`, `added` and `false_positive`.
    pub fn teach_query(&self, word: &str) -> String {
        if word.is_empty() {
            return Json::error(&teach::WordError::Empty.to_string()).to_text();
        }
        let q: Query = self.teach.query(word);
        Json::object([
            ("word", Json::str(word)),
            (
                "hashes",
                Json::array(teach::hash_values(word).map(Json::Int)),
            ),
            (
                "positions",
                Json::array(q.checks.iter().map(|c| Json::Int(c.position as u64))),
            ),
            (
                "checks",
                Json::array(q.checks.iter().map(|c| {
                    Json::object([
                        ("position", Json::Int(c.position as u64)),
                        ("bit", Json::Bool(c.bit)),
                        (
                            "setters",
                            Json::array(c.setters.iter().map(|w| Json::str(w))),
                        ),
                    ])
                })),
            ),
            (
                "stopped_at",
                q.stopped_at.map_or(Json::Null, |s| Json::Int(s as u64)),
            ),
            ("maybe", Json::Bool(q.maybe())),
            ("added", Json::Bool(q.added)),
            ("false_positive", Json::Bool(q.false_positive())),
        ])
        .to_text()
    }

    /// The rate-versus-k curve for `m` bits, `n` keys and the visitor's `k`: `points`
    /// (`[k, rate]` for k = 1 to `max_k`), `optimum_k`, `optimum_rate`, `best_k`, and `rate`,
    /// (1 − e^(−kn/m))^k at the chosen k.
    pub fn curve(&self, m: f64, n: f64, k: f64, max_k: f64) -> String {
        let parsed = (|| {
            Ok::<_, String>((
                whole(m, "m, the bits,", 1, MAX_CURVE_BITS)?,
                whole(n, "n, the keys,", 1, MAX_CURVE_BITS)?,
                whole(k, "k, the hashes,", 1, u64::from(MAX_CURVE_K))? as u32,
                whole(max_k, "the largest k drawn", 1, u64::from(MAX_CURVE_K))? as u32,
            ))
        })();
        let (m, n, k, max_k) = match parsed {
            Ok(v) => v,
            Err(e) => return Json::error(&e).to_text(),
        };
        let c = rate_curve(m, n, max_k.max(k));
        let rate = c.points[k as usize - 1].1;
        Json::object([
            ("m", Json::Int(c.num_bits)),
            ("n", Json::Int(c.items)),
            ("k", Json::Int(u64::from(k))),
            ("rate", Json::Float(rate)),
            (
                "points",
                Json::array(
                    c.points
                        .iter()
                        .map(|&(k, r)| Json::array([Json::Int(u64::from(k)), Json::Float(r)])),
                ),
            ),
            ("optimum_k", Json::Float(c.optimum_k)),
            ("optimum_rate", Json::Float(c.optimum_rate)),
            ("best_k", Json::Int(u64::from(c.best_k))),
        ])
        .to_text()
    }

    /// The kinds of real filter: `name`, `summary`, `static` and `fill` (what the fill
    /// measures), in the order to list them.
    pub fn kinds(&self) -> String {
        Json::array(Kind::ALL.map(|k| {
            Json::object([
                ("name", Json::str(k.name())),
                ("summary", Json::str(k.summary())),
                ("static", Json::Bool(k.is_static())),
                ("fill", Json::str(k.fill_meaning())),
            ])
        }))
        .to_text()
    }

    /// Builds a real filter of `kind` for `keys` keys at `fp_rate`, fills it with them, and
    /// measures it over `absent_keys` absent keys; replies with the measurement (see
    /// [`measurement_json`]).
    pub fn lab_build(&mut self, kind: &str, keys: f64, fp_rate: f64, absent_keys: f64) -> String {
        let result = (|| {
            let kind = Kind::from_name(kind).ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "no filter kind '{kind}': choose one of {}",
                    names.join(", ")
                )
            })?;
            let keys = whole(keys, "the number of keys", 1, MAX_KEYS)?;
            let absent_keys = whole(absent_keys, "the number of absent keys", 1, MAX_ABSENT_KEYS)?;
            // Dropped first, so two filters never share the tab's memory.
            self.lab = None;
            let mut e = Experiment::new(kind, keys, fp_rate).map_err(|e| e.to_string())?;
            e.fill_to(keys).map_err(|e| e.to_string())?;
            let m = e.measure(absent_keys).map_err(|e| e.to_string())?;
            self.lab = Some(e);
            Ok::<_, String>(measurement_json(&m, 1.0))
        })();
        result.unwrap_or_else(|e| Json::error(&e)).to_text()
    }

    /// Fills the real filter to `factor` (1 to 4) times its planned keys and measures it again.
    pub fn lab_fill(&mut self, factor: f64, absent_keys: f64) -> String {
        let result = (|| {
            let e = self
                .lab
                .as_mut()
                .ok_or("build a filter first, then overfill it")?;
            if !(1.0..=MAX_OVERFILL).contains(&factor) {
                return Err(format!(
                    "the overfill factor must be between 1 and {MAX_OVERFILL}, not {factor}"
                ));
            }
            let absent_keys = whole(absent_keys, "the number of absent keys", 1, MAX_ABSENT_KEYS)?;
            let keys = (e.planned() as f64 * factor).round() as u64;
            e.fill_to(keys).map_err(|e| e.to_string())?;
            let m = e.measure(absent_keys).map_err(|e| e.to_string())?;
            Ok(measurement_json(&m, factor))
        })();
        result.unwrap_or_else(|e: String| Json::error(&e)).to_text()
    }

    /// The real filter's answers for present (`absent = false`) or absent keys `start` to
    /// `start + count`, as a string of `1` ("maybe") and `0` ("no"): for comparing the
    /// `.wasm` with native code key by key.
    pub fn lab_answers(&self, start: f64, count: f64, absent: bool) -> String {
        let result = (|| {
            let e = self.lab.as_ref().ok_or("build a filter first")?;
            let start = whole(start, "the first key", 0, u64::MAX >> 2)?;
            let count = whole(count, "the number of keys", 0, MAX_ABSENT_KEYS)?;
            let answers: String = (start..start + count)
                .map(|id| if e.contains(id, absent) { '1' } else { '0' })
                .collect();
            Ok::<_, String>(Json::object([("answers", Json::str(&answers))]))
        })();
        result.unwrap_or_else(|e| Json::error(&e)).to_text()
    }

    fn state_json(&self) -> Json {
        let t = &self.teach;
        Json::object([
            ("num_bits", Json::Int(NUM_BITS as u64)),
            ("num_hashes", Json::Int(teach::NUM_HASHES as u64)),
            (
                "bits",
                Json::array((0..NUM_BITS).map(|p| Json::Int(u64::from(t.bit(p))))),
            ),
            (
                "setters",
                Json::array(
                    (0..NUM_BITS).map(|p| Json::array(t.setters(p).iter().map(|w| Json::str(w)))),
                ),
            ),
            ("words", Json::array(t.words().iter().map(|w| Json::str(w)))),
            (
                "starting_words",
                Json::array(teach::STARTING_WORDS.map(Json::str)),
            ),
            (
                "false_positive_word",
                teach::false_positive_word().map_or(Json::Null, Json::str),
            ),
            ("max_word_bytes", Json::Int(teach::MAX_WORD_BYTES as u64)),
        ])
    }
}

/// A measurement as the page shows it: `kind`, `planned`, `inserted`, `factor`, `full_at`,
/// `absent_keys`, `false_positives`, `false_negatives`, `measured`, `predicted`, `target`,
/// `memory_bytes`, `bits_per_key`, `fill`, `fill_meaning` and `parameters` (the library's
/// `[name, value]` pairs).
pub fn measurement_json(m: &Measurement, factor: f64) -> Json {
    Json::object([
        ("kind", Json::str(m.kind.name())),
        ("planned", Json::Int(m.planned)),
        ("inserted", Json::Int(m.inserted)),
        ("factor", Json::Float(factor)),
        ("full_at", m.full_at.map_or(Json::Null, Json::Int)),
        ("absent_keys", Json::Int(m.absent_keys)),
        ("false_positives", Json::Int(m.false_positives)),
        ("false_negatives", Json::Int(m.false_negatives)),
        ("measured", Json::Float(m.measured_rate())),
        ("predicted", Json::Float(m.predicted_rate)),
        ("target", Json::Float(m.target_fp_rate)),
        ("memory_bytes", Json::Int(m.memory_bytes as u64)),
        ("bits_per_key", Json::Float(m.bits_per_key())),
        ("fill", Json::Float(m.fill)),
        ("fill_meaning", Json::str(m.kind.fill_meaning())),
        (
            "parameters",
            Json::array(
                m.parameters
                    .iter()
                    .map(|(n, v)| Json::array([Json::str(n), Json::str(v)])),
            ),
        ),
    ])
}

/// `x` as a whole number in `min..=max`, or a message naming `what`.
fn whole(x: f64, what: &str, min: u64, max: u64) -> Result<u64, String> {
    if x.is_finite() && x.fract() == 0.0 && x >= min as f64 && x <= max as f64 {
        Ok(x as u64)
    } else {
        Err(format!(
            "{what} must be a whole number from {min} to {max}, not {x}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> serde_json::Value {
        serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
    }

    #[test]
    fn replies_are_json_with_the_documented_fields() {
        let mut x = Explorer::new();
        let state = parse(&x.teach_state());
        assert_eq!(state["bits"].as_array().unwrap().len(), 16);
        assert_eq!(
            state["words"],
            serde_json::json!(["apple", "banana", "cherry"])
        );
        assert_eq!(state["false_positive_word"], "lime");
        let added = parse(&x.teach_add("say \"kiwi\""));
        assert_eq!(added["word"], "say \"kiwi\"");
        assert_eq!(added["positions"].as_array().unwrap().len(), 3);
        let q = parse(&x.teach_query("lime"));
        assert_eq!(q["maybe"], true);
        assert_eq!(q["false_positive"], true);
        assert!(q["stopped_at"].is_null());
        let c = parse(&x.curve(128.0, 20.0, 3.0, 16.0));
        assert_eq!(c["points"].as_array().unwrap().len(), 16);
        assert_eq!(c["best_k"], 4);
        let kinds = parse(&x.kinds());
        assert_eq!(kinds.as_array().unwrap().len(), Kind::ALL.len());
        let m = parse(&x.lab_build("blocked", 5000.0, 0.01, 50000.0));
        assert_eq!(m["inserted"], 5000);
        assert_eq!(m["false_negatives"], 0);
        let answers = parse(&x.lab_answers(0.0, 100.0, false));
        assert_eq!(answers["answers"], "1".repeat(100));
    }

    #[test]
    fn refusals_are_error_replies() {
        let mut x = Explorer::new();
        assert!(parse(&x.teach_add(""))["error"].is_string());
        assert!(x
            .lab_build("bloom", 1000.0, 0.01, 1000.0)
            .contains("choose one of"));
        assert!(x
            .lab_build("blocked", 0.0, 0.01, 1000.0)
            .contains("from 1 to"));
        assert!(x
            .lab_build("blocked", 1e9, 0.01, 1000.0)
            .contains("from 1 to"));
        assert!(x
            .lab_build("blocked", 1.5, 0.01, 1000.0)
            .contains("whole number"));
        assert!(x
            .lab_build("blocked", 1000.0, 2.0, 1000.0)
            .contains("error"));
        assert!(x.lab_fill(2.0, 1000.0).contains("build a filter first"));
        assert!(x.curve(f64::NAN, 1.0, 1.0, 1.0).contains("error"));
        assert!(x.curve(16.0, 3.0, 0.0, 10.0).contains("error"));
    }

    #[test]
    fn overfill_is_bounded() {
        let mut x = Explorer::new();
        assert!(!x
            .lab_build("classic", 1000.0, 0.01, 1000.0)
            .contains("error"));
        assert!(x.lab_fill(4.5, 1000.0).contains("between 1 and 4"));
        assert!(x.lab_fill(0.5, 1000.0).contains("between 1 and 4"));
        assert!(x.lab_fill(2.0, 1000.0).contains(r#""inserted": 2000"#));
    }

    #[test]
    fn a_refused_build_forgets_the_last_filter() {
        let mut x = Explorer::new();
        x.lab_build("classic", 1000.0, 0.01, 1000.0);
        assert!(x
            .lab_build("classic", 1000.0, 7.0, 1000.0)
            .contains("error"));
        assert!(x.lab_fill(2.0, 1000.0).contains("build a filter first"));
    }
}
