//! Numbers of keys on the command line: every `--items` (and every other count of keys) goes
//! through [`parse_count`], so `1000000`, `1,000,000`, `1_000_000`, `1e6` and `1M` are the
//! same everywhere.
//!
//! The suffixes are Redis's for `--maxmemory` without the `b`: `k`, `m`, `g` (and `t`) are
//! powers of 1000, in either case, so `50M` keys and `--maxmemory 50m` mean the same fifty
//! million. The value is computed exactly, digit by digit: `18446744073709551615` is that
//! number, not the nearest `f64`.

use clap::builder::TypedValueParser;

use crate::human;

/// What to say about a count that is not one.
const EXPECTED: &str = "give a whole number such as 1000000, 1,000,000, 1e6 or 1M (k, M, G \
                        and T are thousands, millions, billions and trillions)";

/// Parses a number of keys: digits with optional `,` or `_` between them, an optional
/// decimal fraction and exponent (`2.5e6`), and an optional suffix `k`, `m`, `g` or `t`
/// (either case) for 10^3, 10^6, 10^9 or 10^12. The result must be a whole number that fits
/// in 64 bits.
///
/// # Errors
///
/// A message saying what was wrong and what is accepted.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let bad = |why: &str| format!("not a number of keys{why}; {EXPECTED}");
    let trimmed = text.trim();
    let (number, suffix_exp) = match trimmed.char_indices().last() {
        Some((at, c)) if c.is_ascii_alphabetic() && !matches!(c, 'e' | 'E') => {
            let exp = match c.to_ascii_lowercase() {
                'k' => 3,
                'm' => 6,
                'g' => 9,
                't' => 12,
                _ => return Err(bad("")),
            };
            (trimmed[..at].trim_end(), exp)
        }
        _ => (trimmed, 0),
    };
    let (mantissa, exponent) = match number.find(['e', 'E']) {
        Some(at) => {
            let exp: i32 = number[at + 1..].parse().map_err(|_| bad(""))?;
            (&number[..at], exp)
        }
        None => (number, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // Separators only between digits: `1,000` and `1_000`, not `,1` or `1,,0`.
    let digits = separated_digits(whole).ok_or_else(|| bad(""))?;
    if !fraction.bytes().all(|b| b.is_ascii_digit()) || (digits.is_empty() && fraction.is_empty()) {
        return Err(bad(""));
    }
    // The value is `significand · 10^scale`, exactly.
    let mut significand: u128 = 0;
    let mut scale = i64::from(exponent) + suffix_exp;
    for d in digits.bytes().chain(fraction.bytes()) {
        significand = significand
            .checked_mul(10)
            .and_then(|s| s.checked_add(u128::from(d - b'0')))
            .ok_or_else(|| bad(": it is larger than 18,446,744,073,709,551,615"))?;
    }
    scale -= fraction.len() as i64;
    while scale < 0 && significand != 0 {
        if !significand.is_multiple_of(10) {
            return Err(bad(": it is not a whole number"));
        }
        significand /= 10;
        scale += 1;
    }
    let too_large = || bad(": it is larger than 18,446,744,073,709,551,615");
    if significand != 0 {
        for _ in 0..scale {
            significand = significand.checked_mul(10).ok_or_else(too_large)?;
        }
    }
    u64::try_from(significand).map_err(|_| too_large())
}

/// `text`'s digits without the separators, if it is digits with single `,` or `_` between
/// them.
fn separated_digits(text: &str) -> Option<String> {
    let mut digits = String::with_capacity(text.len());
    let mut after_digit = false;
    for c in text.chars() {
        match c {
            '0'..='9' => {
                digits.push(c);
                after_digit = true;
            }
            ',' | '_' if after_digit => after_digit = false,
            _ => return None,
        }
    }
    // A trailing separator (`1,`) is a typo, not a number.
    (after_digit || text.is_empty()).then_some(digits)
}

/// A clap value parser for a count of keys from `min` to `max`, through [`parse_count`].
pub fn count_in(min: u64, max: u64) -> impl TypedValueParser<Value = u64> {
    move |text: &str| -> Result<u64, String> {
        let count = parse_count(text)?;
        if count < min || count > max {
            return Err(if max == u64::MAX {
                format!(
                    "{} is below {min}: give at least {min}",
                    human::count(count)
                )
            } else {
                format!(
                    "{} is outside {} to {}: give a count in that range",
                    human::count(count),
                    human::count(min),
                    human::count(max)
                )
            });
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_million() {
        for text in [
            "1000000",
            "1,000,000",
            "1_000_000",
            "1e6",
            "1E6",
            "1e+6",
            "1M",
            "1m",
            "1000k",
            "1000K",
            "0.001G",
            "1.0e6",
            "10e5",
            "  1M  ",
            "1 M",
            "1000000e0",
            "100000000e-2",
        ] {
            assert_eq!(parse_count(text), Ok(1_000_000), "{text}");
        }
        assert_eq!(parse_count("50M"), Ok(50_000_000));
        assert_eq!(parse_count("2.5k"), Ok(2_500));
        assert_eq!(parse_count("1t"), Ok(1_000_000_000_000));
        assert_eq!(parse_count("0"), Ok(0));
        assert_eq!(parse_count("0e99"), Ok(0));
        assert_eq!(parse_count(".5k"), Ok(500));
    }

    #[test]
    fn the_largest_count_is_exact() {
        assert_eq!(parse_count("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_count("18,446,744,073,709,551,615"), Ok(u64::MAX));
        assert_eq!(parse_count("18446744073709551615000e-3"), Ok(u64::MAX));
        for text in [
            "18446744073709551616",
            "1.9e19",
            "20000000T",
            "1e40",
            "1e400",
        ] {
            let message = parse_count(text).unwrap_err();
            assert!(message.contains("larger than"), "{text}: {message}");
        }
    }

    #[test]
    fn what_is_not_a_count() {
        for text in [
            "", " ", "k", "abc", "-1", "+1", "1,", ",1", "1,,000", "1.2.3", "1e", "1e1.5", "1x",
            "1kb", "1mb", "0x10", "1 000", "e6", "1M5", ".",
        ] {
            let message = parse_count(text).unwrap_err();
            assert!(
                message.contains("such as 1000000, 1,000,000"),
                "{text:?}: {message}"
            );
        }
        let message = parse_count("1.5").unwrap_err();
        assert!(message.contains("not a whole number"), "{message}");
        assert!(parse_count("1e-1").is_err());
    }
}
