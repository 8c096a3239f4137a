//! Redis's glob patterns, for `KEYS`, `SCAN ... MATCH` and `CONFIG GET`.
//!
//! The same rules as Redis's `stringmatchlen`: `*` matches any run of bytes, `?` any one
//! byte, `[abc]`, `[^abc]` and `[a-z]` a byte in (or not in) a set, and `\x` the byte `x`
//! itself. An unclosed `[` takes the rest of the pattern as its set, as Redis does.

/// Whether `text` matches `pattern`; `nocase` compares ASCII letters without case (as
/// `CONFIG GET` does; `KEYS` is case-sensitive).
///
/// Every token but `*` consumes exactly one byte, so remembering only the last `*` is
/// enough to backtrack: the match takes at most `pattern.len() * text.len()` steps, whatever
/// a client sends (Redis's recursive matcher needed a nesting limit for that).
pub fn matches(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    let (mut p, mut t) = (0, 0);
    // Where to resume after the last `*`: the pattern position after it and the text
    // position it has swallowed up to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            // Runs of `*` are one `*`.
            while p < pattern.len() && pattern[p] == b'*' {
                p += 1;
            }
            if p == pattern.len() {
                return true;
            }
            star = Some((p, t));
            continue;
        }
        if let Some(next) = match_one(pattern, p, text[t], nocase) {
            p = next;
            t += 1;
            continue;
        }
        match star {
            // Let the last `*` swallow one more byte and try again from there.
            Some((star_p, star_t)) => {
                p = star_p;
                t = star_t + 1;
                star = Some((star_p, star_t + 1));
            }
            None => return false,
        }
    }
    // The text is used up: what is left of the pattern must match the empty string.
    pattern[p..].iter().all(|&b| b == b'*')
}

/// Matches the one-byte token at `pattern[p..]` against `byte`: the position after the
/// token if it matches, `None` if not (or if the pattern is used up or at a `*`).
fn match_one(pattern: &[u8], p: usize, byte: u8, nocase: bool) -> Option<usize> {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    match *pattern.get(p)? {
        b'*' => None,
        b'?' => Some(p + 1),
        b'\\' if p + 1 < pattern.len() => eq(pattern[p + 1], byte).then_some(p + 2),
        b'[' => {
            let mut i = p + 1;
            let negate = pattern.get(i) == Some(&b'^');
            if negate {
                i += 1;
            }
            let mut found = false;
            loop {
                match pattern.get(i) {
                    // Unclosed: Redis ends the set at the end of the pattern.
                    None => break,
                    Some(b']') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') if i + 1 < pattern.len() => {
                        found |= eq(pattern[i + 1], byte);
                        i += 2;
                    }
                    Some(&low) if pattern.get(i + 1) == Some(&b'-') && i + 2 < pattern.len() => {
                        let high = pattern[i + 2];
                        let (low, high) = if low <= high {
                            (low, high)
                        } else {
                            (high, low)
                        };
                        let in_range = |b: u8| low <= b && b <= high;
                        found |= if nocase {
                            in_range(byte.to_ascii_lowercase())
                                || in_range(byte.to_ascii_uppercase())
                        } else {
                            in_range(byte)
                        };
                        i += 3;
                    }
                    Some(&c) => {
                        found |= eq(c, byte);
                        i += 1;
                    }
                }
            }
            (found != negate).then_some(i)
        }
        c => eq(c, byte).then_some(p + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    fn m(pattern: &str, text: &str) -> bool {
        matches(pattern.as_bytes(), text.as_bytes(), false)
    }

    #[test]
    fn stars_and_questions() {
        assert!(m("*", ""));
        assert!(m("*", "anything"));
        assert!(m("bf:*", "bf:users"));
        assert!(!m("bf:*", "cf:users"));
        assert!(m("*users", "bf:users"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXbYY"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("**a**", "bab"));
        assert!(!m("", "a"));
        assert!(m("", ""));
    }

    #[test]
    fn sets_ranges_and_escapes() {
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(
            m("h[b-a]llo", "hallo"),
            "a reversed range is swapped, as in Redis"
        );
        assert!(m("h\\*llo", "h*llo"));
        assert!(!m("h\\*llo", "hello"));
        assert!(m("[\\]]", "]"));
        assert!(
            m("a[bc", "ab"),
            "an unclosed set runs to the end of the pattern"
        );
    }

    #[test]
    fn nocase_for_config_names() {
        assert!(matches(b"BF-*", b"bf-error-rate", true));
        assert!(matches(b"[A-C]f-*", b"bf-x", true));
        assert!(!matches(b"BF-*", b"bf-error-rate", false));
    }

    #[test]
    fn hostile_patterns_finish_quickly() {
        let pattern = "*a".repeat(50) + "b";
        let text = "a".repeat(5000);
        assert!(!m(&pattern, &text));
    }
}
