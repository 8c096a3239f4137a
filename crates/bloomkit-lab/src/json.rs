//! [`Json`]: a JSON value and its text, for the explorer page's replies and `bloomkit info
//! --json`.
//!
//! A few dozen lines instead of serde: both are small objects of a fixed shape, a serializer
//! crate would be more code to audit than this, and every kilobyte the page's WebAssembly
//! module carries is a kilobyte the browser downloads. Only writing: nothing here parses.

use std::fmt::Write as _;

/// A JSON value.
///
/// # Examples
///
/// ```
/// use bloomkit_lab::json::Json;
///
/// let reply = Json::object([
///     ("kind", Json::str("blocked")),
///     ("keys", Json::Int(1000)),
///     ("rate", Json::Float(0.0102)),
///     ("full_at", Json::Null),
///     ("flags", Json::array([Json::Bool(true)])),
/// ]);
/// assert_eq!(
///     reply.to_text(),
///     r#"{"kind": "blocked", "keys": 1000, "rate": 0.0102, "full_at": null, "flags": [true]}"#
/// );
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`: a figure that does not exist (the bits per key of an empty filter).
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer, written exactly.
    Int(u64),
    /// A number; `null` if it is not finite, which JSON cannot write.
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, its members in order.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// A string value from a borrowed string.
    pub fn str(s: &str) -> Json {
        Json::Str(s.to_string())
    }

    /// An array of these values.
    pub fn array(items: impl IntoIterator<Item = Json>) -> Json {
        Json::Array(items.into_iter().collect())
    }

    /// An object with these members, in this order.
    pub fn object<'a>(members: impl IntoIterator<Item = (&'a str, Json)>) -> Json {
        Json::Object(
            members
                .into_iter()
                .map(|(name, value)| (name.to_string(), value))
                .collect(),
        )
    }

    /// `{"error": message}`: how every reply of the explorer page says a request was refused.
    pub fn error(message: &str) -> Json {
        Json::object([("error", Json::str(message))])
    }

    /// The value as JSON text, on one line.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Json::Float(x) if !x.is_finite() => out.push_str("null"),
            // Rust's shortest round-trip form, in exponent notation where the plain one
            // would run to dozens of digits (1e-300); both are valid JSON numbers.
            Json::Float(x) if *x != 0.0 && !(1e-6..1e15).contains(&x.abs()) => {
                let _ = write!(out, "{x:e}");
            }
            Json::Float(x) => {
                let _ = write!(out, "{x}");
            }
            Json::Str(s) => write_string(out, s),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (i, (name, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_string(out, name);
                    out.push_str(": ");
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// A JSON string: quotes, backslashes and control characters escaped.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_write_as_json() {
        let value = Json::Object(vec![
            ("name".into(), Json::Str("a \"b\"\\\n\r\t\u{1}é".into())),
            ("n".into(), Json::Int(u64::MAX)),
            ("rate".into(), Json::Float(0.0123)),
            ("tiny".into(), Json::Float(1e-300)),
            ("zero".into(), Json::Float(0.0)),
            ("nan".into(), Json::Float(f64::NAN)),
            ("inf".into(), Json::Float(f64::INFINITY)),
            ("none".into(), Json::Null),
            ("yes".into(), Json::Bool(true)),
            (
                "list".into(),
                Json::Array(vec![Json::Int(1), Json::Array(vec![])]),
            ),
        ]);
        assert_eq!(
            value.to_text(),
            r#"{"name": "a \"b\"\\\n\r\t\u0001é", "n": 18446744073709551615, "rate": 0.0123, "tiny": 1e-300, "zero": 0, "nan": null, "inf": null, "none": null, "yes": true, "list": [1, []]}"#
        );
    }

    #[test]
    fn helpers_build_the_same_values_as_the_variants() {
        assert_eq!(Json::str("x"), Json::Str("x".to_string()));
        assert_eq!(
            Json::object([("a", Json::array([Json::Int(1)]))]),
            Json::Object(vec![("a".to_string(), Json::Array(vec![Json::Int(1)]))])
        );
        assert_eq!(Json::error("no").to_text(), r#"{"error": "no"}"#);
    }
}
