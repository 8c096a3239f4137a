//! The `bf-*`/`cf-*`/`af-*` parameters: the defaults for keys that commands create implicitly
//! (`BF.ADD` on a missing key), each with its name, type, range and default written once, in
//! [`PARAMETERS`].
//!
//! A host reads and changes them through the table: the server's `CONFIG GET`/`CONFIG SET`,
//! a Redis module's load-time arguments and its own configuration. Names, defaults and ranges
//! are RedisBloom's (Redis 8).

use std::fmt;

use bloomkit::LayerLayout;

use crate::args::{is_word, parse_f64, parse_i64};
use crate::limits::{
    BF_MAX_CAPACITY, BF_MAX_EXPANSION, CF_MAX_BUCKET_SIZE, CF_MAX_CAPACITY, CF_MAX_EXPANSION,
    CF_MAX_ITERATIONS, CF_MAX_SUB_FILTERS,
};

/// The defaults commands create keys with, one field per row of [`PARAMETERS`] (which holds
/// each one's default and range). A command receives them in its [`Ctx`](crate::Ctx), and a
/// key created from them is logged with every parameter spelled out, so that a replay or a
/// replica under other defaults builds the same filter.
///
/// # Examples
///
/// ```
/// use bloomkit_commands::{Defaults, PARAMETERS};
///
/// let mut defaults = Defaults::default();
/// assert_eq!(defaults.bf_error_rate, 0.01);
/// let rate = PARAMETERS.iter().find(|p| p.name == "bf-error-rate").unwrap();
/// rate.set(&mut defaults, b"0.001").unwrap();
/// assert_eq!(defaults.bf_error_rate, 0.001);
/// assert_eq!(
///     rate.set(&mut defaults, b"2").unwrap_err().to_string(),
///     "argument must be between 0 and 1 exclusive"
/// );
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Defaults {
    /// `bf-error-rate`: a new Bloom filter's false-positive rate.
    pub bf_error_rate: f64,
    /// `bf-initial-size`: a new Bloom filter's capacity.
    pub bf_initial_size: u64,
    /// `bf-expansion-factor`: how much larger each added layer is; 0 means non-scaling.
    pub bf_expansion_factor: u32,
    /// `cf-bucket-size`: slots per bucket of a new cuckoo filter.
    pub cf_bucket_size: u32,
    /// `cf-initial-size`: a new cuckoo filter's capacity.
    pub cf_initial_size: u64,
    /// `cf-max-iterations`: evictions tried before an insert gives up.
    pub cf_max_iterations: u32,
    /// `cf-expansion-factor`: how much larger each added sub-filter is; 0 means non-scaling.
    pub cf_expansion_factor: u32,
    /// `cf-max-expansions`: how many sub-filters an insert may find before it is refused.
    pub cf_max_expansions: u32,
    /// `bf-layout`: the layers of a new Bloom filter, `classic` (RedisBloom's: the textbook
    /// bits, probes spread over the layer; the default, so that a filter takes no more
    /// memory here than there) or `blocked` (every probe of an item in one 64-byte line: one
    /// cache miss per item and layer, for 4.5% more bits at a 1% target).
    pub bf_layout: LayerLayout,
    /// `af-error-rate`: a new aging filter's rate, over its whole window.
    pub af_error_rate: f64,
    /// `af-capacity`: a new aging filter's items per generation.
    pub af_capacity: u64,
    /// `af-generations`: a new aging filter's generations.
    pub af_generations: u32,
    /// `af-period`: a new aging filter's rotation period in seconds; 0 rotates only on
    /// `AF.ROTATE`.
    pub af_period: u64,
}

impl Default for Defaults {
    /// Every parameter's default, from [`PARAMETERS`].
    fn default() -> Self {
        // Every field is overwritten from its row below; the table is where defaults live.
        let mut defaults = Defaults {
            bf_error_rate: 0.0,
            bf_initial_size: 0,
            bf_expansion_factor: 0,
            cf_bucket_size: 0,
            cf_initial_size: 0,
            cf_max_iterations: 0,
            cf_expansion_factor: 0,
            cf_max_expansions: 0,
            bf_layout: LayerLayout::Classic,
            af_error_rate: 0.0,
            af_capacity: 0,
            af_generations: 0,
            af_period: 0,
        };
        for param in PARAMETERS {
            (param.put)(&mut defaults, param.default);
        }
        defaults
    }
}

/// A parameter's value: the type is the variant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// A floating-point value (`bf-error-rate`).
    Float(f64),
    /// A whole number (the capacities, sizes and counts).
    Integer(u64),
    /// One of a parameter's [`choices`](Parameter::choices) (`bf-layout`).
    Word(&'static str),
}

impl Number {
    fn as_f64(self) -> f64 {
        match self {
            Number::Float(x) => x,
            Number::Integer(n) => n as f64,
            Number::Word(_) => 0.0,
        }
    }

    fn as_u64(self) -> u64 {
        match self {
            Number::Float(x) => x as u64,
            Number::Integer(n) => n,
            Number::Word(_) => 0,
        }
    }

    /// As a `u32` field holds it: every `u32` parameter's range ends far below `u32::MAX`.
    fn as_u32(self) -> u32 {
        u32::try_from(self.as_u64()).unwrap_or(u32::MAX)
    }
}

impl fmt::Display for Number {
    /// As `CONFIG GET` prints it: `0.01`, `100`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::Float(x) => write!(f, "{x}"),
            Number::Integer(n) => write!(f, "{n}"),
            Number::Word(w) => f.write_str(w),
        }
    }
}

/// Why a value was refused, in Redis's `CONFIG SET` words.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamError {
    /// Not a number, for a floating-point parameter.
    NotANumber,
    /// Not an integer (or past `i64`), for an integer parameter.
    NotAnInteger,
    /// A float not strictly between `min` and `max`.
    OutsideExclusive {
        /// The lower bound, excluded.
        min: f64,
        /// The upper bound, excluded.
        max: f64,
    },
    /// An integer not in `[min, max]`.
    OutsideInclusive {
        /// The lower bound, included.
        min: u64,
        /// The upper bound, included.
        max: u64,
    },
    /// A word that is none of the parameter's choices.
    NotAChoice {
        /// The words accepted.
        choices: &'static [&'static str],
    },
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::NotANumber => f.write_str("argument couldn't be parsed into a number"),
            ParamError::NotAnInteger => f.write_str("argument couldn't be parsed into an integer"),
            ParamError::OutsideExclusive { min, max } => {
                write!(f, "argument must be between {min} and {max} exclusive")
            }
            ParamError::OutsideInclusive { min, max } => {
                write!(f, "argument must be between {min} and {max} inclusive")
            }
            ParamError::NotAChoice { choices } => {
                write!(f, "argument must be one of {}", choices.join(", "))
            }
        }
    }
}

impl std::error::Error for ParamError {}

/// One `bf-*`/`cf-*` parameter: its name, default and range, and the field of [`Defaults`]
/// it sets.
///
/// The type is the variant of [`Number`] the three values share. A float's bounds are
/// excluded (`bf-error-rate` is in (0, 1)), an integer's included (`cf-bucket-size` is in
/// [1, 255]), as RedisBloom checks them. A word parameter (`bf-layout`) takes one of its
/// [`choices`](Self::choices), in any case; its `min` and `max` are its default.
#[derive(Clone, Copy, Debug)]
pub struct Parameter {
    /// The name, as `CONFIG GET`/`SET` take it (`bf-error-rate`).
    pub name: &'static str,
    /// The value a [`Defaults::default`] holds.
    pub default: Number,
    /// The smallest value (excluded for a float).
    pub min: Number,
    /// The largest value (excluded for a float).
    pub max: Number,
    /// The words a word parameter takes; empty for a number.
    pub choices: &'static [&'static str],
    get: fn(&Defaults) -> Number,
    put: fn(&mut Defaults, Number),
}

impl Parameter {
    /// The value `defaults` holds for this parameter.
    pub fn get(&self, defaults: &Defaults) -> Number {
        (self.get)(defaults)
    }

    /// Reads `text` as a value of this parameter: its type (an integer as Redis writes
    /// one, a float as `strtod` reads one) and its range.
    ///
    /// # Errors
    ///
    /// A [`ParamError`] saying which rule `text` breaks.
    pub fn parse(&self, text: &[u8]) -> Result<Number, ParamError> {
        if !self.choices.is_empty() {
            return self
                .choices
                .iter()
                .find(|choice| is_word(text, choice))
                .map(|choice| Number::Word(choice))
                .ok_or(ParamError::NotAChoice {
                    choices: self.choices,
                });
        }
        match (self.min, self.max) {
            (Number::Float(min), Number::Float(max)) => {
                let x = parse_f64(text).ok_or(ParamError::NotANumber)?;
                if x > min && x < max {
                    Ok(Number::Float(x))
                } else {
                    Err(ParamError::OutsideExclusive { min, max })
                }
            }
            (min, max) => {
                let (min, max) = (min.as_u64(), max.as_u64());
                let n = parse_i64(text).ok_or(ParamError::NotAnInteger)?;
                u64::try_from(n)
                    .ok()
                    .filter(|n| (min..=max).contains(n))
                    .map(Number::Integer)
                    .ok_or(ParamError::OutsideInclusive { min, max })
            }
        }
    }

    /// Sets this parameter in `defaults` from `text`, if [`parse`](Self::parse) accepts it.
    ///
    /// # Errors
    ///
    /// As [`parse`](Self::parse); `defaults` is unchanged then.
    pub fn set(&self, defaults: &mut Defaults, text: &[u8]) -> Result<(), ParamError> {
        let value = self.parse(text)?;
        (self.put)(defaults, value);
        Ok(())
    }
}

/// The parameter named `name` (any case).
pub fn parameter(name: &[u8]) -> Option<&'static Parameter> {
    PARAMETERS
        .iter()
        .find(|param| param.name.as_bytes().eq_ignore_ascii_case(name))
}

const fn integer(
    name: &'static str,
    default: u64,
    (min, max): (u64, u64),
    get: fn(&Defaults) -> Number,
    put: fn(&mut Defaults, Number),
) -> Parameter {
    Parameter {
        name,
        default: Number::Integer(default),
        min: Number::Integer(min),
        max: Number::Integer(max),
        choices: &[],
        get,
        put,
    }
}

/// `bf-layout`'s words, and the layout each names.
const LAYOUTS: &[(&str, LayerLayout)] = &[
    ("classic", LayerLayout::Classic),
    ("blocked", LayerLayout::Blocked),
];

/// The word for a layout, as `CONFIG GET bf-layout` answers it.
fn layout_word(layout: LayerLayout) -> &'static str {
    LAYOUTS
        .iter()
        .find(|(_, l)| *l == layout)
        .map_or("blocked", |(word, _)| word)
}

/// The layout a word names (`classic` or `blocked`, in any case).
pub(crate) fn layout_named(word: &[u8]) -> Option<LayerLayout> {
    LAYOUTS
        .iter()
        .find(|(name, _)| is_word(word, name))
        .map(|(_, layout)| *layout)
}

/// Every `bf-*`/`cf-*` parameter, in the order `CONFIG GET` lists them. The upper bounds of
/// capacities, expansions, bucket sizes and iterations are the commands' own (what
/// `BF.RESERVE` or `CF.RESERVE` accepts as an argument).
pub static PARAMETERS: &[Parameter] = &[
    Parameter {
        name: "bf-error-rate",
        default: Number::Float(0.01),
        min: Number::Float(0.0),
        max: Number::Float(1.0),
        choices: &[],
        get: |d| Number::Float(d.bf_error_rate),
        put: |d, v| d.bf_error_rate = v.as_f64(),
    },
    integer(
        "bf-initial-size",
        100,
        (1, BF_MAX_CAPACITY as u64),
        |d| Number::Integer(d.bf_initial_size),
        |d, v| d.bf_initial_size = v.as_u64(),
    ),
    integer(
        "bf-expansion-factor",
        2,
        (0, BF_MAX_EXPANSION as u64),
        |d| Number::Integer(d.bf_expansion_factor.into()),
        |d, v| d.bf_expansion_factor = v.as_u32(),
    ),
    integer(
        "cf-bucket-size",
        2,
        (1, CF_MAX_BUCKET_SIZE as u64),
        |d| Number::Integer(d.cf_bucket_size.into()),
        |d, v| d.cf_bucket_size = v.as_u32(),
    ),
    integer(
        "cf-initial-size",
        1024,
        (2, CF_MAX_CAPACITY as u64),
        |d| Number::Integer(d.cf_initial_size),
        |d, v| d.cf_initial_size = v.as_u64(),
    ),
    integer(
        "cf-max-iterations",
        20,
        (1, CF_MAX_ITERATIONS as u64),
        |d| Number::Integer(d.cf_max_iterations.into()),
        |d, v| d.cf_max_iterations = v.as_u32(),
    ),
    integer(
        "cf-expansion-factor",
        1,
        (0, CF_MAX_EXPANSION as u64),
        |d| Number::Integer(d.cf_expansion_factor.into()),
        |d, v| d.cf_expansion_factor = v.as_u32(),
    ),
    integer(
        "cf-max-expansions",
        32,
        (1, CF_MAX_SUB_FILTERS as u64),
        |d| Number::Integer(d.cf_max_expansions.into()),
        |d, v| d.cf_max_expansions = v.as_u32(),
    ),
    Parameter {
        name: "bf-layout",
        default: Number::Word("classic"),
        min: Number::Word("classic"),
        max: Number::Word("classic"),
        choices: &["classic", "blocked"],
        get: |d| Number::Word(layout_word(d.bf_layout)),
        put: |d, v| {
            if let Number::Word(word) = v {
                d.bf_layout = layout_named(word.as_bytes()).unwrap_or(d.bf_layout);
            }
        },
    },
    Parameter {
        name: "af-error-rate",
        default: Number::Float(0.01),
        min: Number::Float(0.0),
        max: Number::Float(1.0),
        choices: &[],
        get: |d| Number::Float(d.af_error_rate),
        put: |d, v| d.af_error_rate = v.as_f64(),
    },
    integer(
        "af-capacity",
        100,
        (1, crate::limits::AF_MAX_CAPACITY),
        |d| Number::Integer(d.af_capacity),
        |d, v| d.af_capacity = v.as_u64(),
    ),
    integer(
        "af-generations",
        crate::limits::AF_MIN_GENERATIONS as u64,
        (
            crate::limits::AF_MIN_GENERATIONS as u64,
            crate::limits::AF_MAX_GENERATIONS as u64,
        ),
        |d| Number::Integer(d.af_generations.into()),
        |d, v| d.af_generations = v.as_u32(),
    ),
    integer(
        "af-period",
        0,
        (0, crate::limits::AF_MAX_PERIOD_SECS),
        |d| Number::Integer(d.af_period),
        |d, v| d.af_period = v.as_u64(),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_tables() {
        let defaults = Defaults::default();
        for param in PARAMETERS {
            assert_eq!(param.get(&defaults), param.default, "{}", param.name);
            assert_eq!(
                param.parse(param.default.to_string().as_bytes()),
                Ok(param.default),
                "{}: the default is within its range",
                param.name
            );
        }
        assert_eq!(defaults.bf_initial_size, 100);
        assert_eq!(defaults.cf_initial_size, 1024);
        assert_eq!(defaults.cf_max_expansions, 32);
    }

    #[test]
    fn each_row_sets_its_own_field() {
        for param in PARAMETERS {
            let mut defaults = Defaults::default();
            let before = defaults.clone();
            // A value other than every default: 0.5, the largest allowed, or the last word.
            let value = match param.max {
                Number::Float(_) => b"0.5".to_vec(),
                Number::Integer(max) => max.to_string().into_bytes(),
                Number::Word(_) => param.choices.last().unwrap().as_bytes().to_vec(),
            };
            param.set(&mut defaults, &value).unwrap();
            assert_ne!(defaults, before, "{} changed a field", param.name);
            let others: Vec<Number> = PARAMETERS
                .iter()
                .filter(|p| p.name != param.name)
                .map(|p| p.get(&defaults))
                .collect();
            let others_before: Vec<Number> = PARAMETERS
                .iter()
                .filter(|p| p.name != param.name)
                .map(|p| p.get(&before))
                .collect();
            assert_eq!(others, others_before, "{} changed only its own", param.name);
        }
    }

    #[test]
    fn ranges_and_types_in_redis_words() {
        let size = parameter(b"CF-BUCKET-SIZE").unwrap();
        assert_eq!(size.parse(b"255"), Ok(Number::Integer(255)));
        for (text, why) in [
            (&b"256"[..], "argument must be between 1 and 255 inclusive"),
            (b"0", "argument must be between 1 and 255 inclusive"),
            (b"-1", "argument must be between 1 and 255 inclusive"),
            (b"1.5", "argument couldn't be parsed into an integer"),
            (b"x", "argument couldn't be parsed into an integer"),
        ] {
            assert_eq!(size.parse(text).unwrap_err().to_string(), why);
        }
        let rate = parameter(b"bf-error-rate").unwrap();
        assert_eq!(rate.parse(b"1e-3"), Ok(Number::Float(0.001)));
        assert_eq!(
            rate.parse(b"nan").unwrap_err().to_string(),
            "argument couldn't be parsed into a number"
        );
        assert_eq!(
            rate.parse(b"0").unwrap_err().to_string(),
            "argument must be between 0 and 1 exclusive"
        );
        let capacity = parameter(b"cf-initial-size").unwrap();
        assert_eq!(
            capacity.parse(b"1").unwrap_err().to_string(),
            "argument must be between 2 and 1073741824 inclusive"
        );
        assert!(parameter(b"maxmemory").is_none());
        let layout = parameter(b"bf-layout").unwrap();
        assert_eq!(layout.parse(b"BLOCKED"), Ok(Number::Word("blocked")));
        assert_eq!(
            layout.parse(b"wide").unwrap_err().to_string(),
            "argument must be one of classic, blocked"
        );
        let mut d = Defaults::default();
        assert_eq!(d.bf_layout, LayerLayout::Classic);
        layout.set(&mut d, b"blocked").unwrap();
        assert_eq!(d.bf_layout, LayerLayout::Blocked);
        assert_eq!(layout.get(&d).to_string(), "blocked");
    }
}
