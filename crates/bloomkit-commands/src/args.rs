//! Reading arguments as Redis does: keywords, integers and floats.

/// Whether `arg` equals `word`, ignoring ASCII case (option keywords such as `NONSCALING`).
pub fn is_word(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// A signed 64-bit integer written the way Redis accepts it: optional `-`, digits, no
/// spaces, no `+`, no leading zeros beyond "0".
pub fn parse_i64(arg: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(arg).ok()?;
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    text.parse().ok()
}

/// An unsigned 64-bit integer under the same rules as [`parse_i64`].
pub fn parse_u64(arg: &[u8]) -> Option<u64> {
    parse_i64(arg).and_then(|n| u64::try_from(n).ok())
}

/// A finite floating-point number as Redis's `strtod` would accept it (`0.01`, `1e-3`,
/// `.5`); `inf`/`nan` and trailing garbage are refused.
pub fn parse_f64(arg: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(arg).ok()?;
    if text.is_empty() || text.bytes().any(|b| b.is_ascii_whitespace()) {
        return None;
    }
    let x: f64 = text.parse().ok()?;
    x.is_finite().then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_as_redis_reads_them() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b" 1",
            b"1 ",
            b"01",
            b"1.0",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(parse_u64(b"-1"), None);
    }

    #[test]
    fn floats_as_strtod_reads_them() {
        assert_eq!(parse_f64(b"0.01"), Some(0.01));
        assert_eq!(parse_f64(b"1e-3"), Some(0.001));
        assert_eq!(parse_f64(b".5"), Some(0.5));
        for bad in [&b""[..], b"abc", b"0.1x", b"inf", b"nan", b" 0.1"] {
            assert_eq!(parse_f64(bad), None);
        }
    }
}
