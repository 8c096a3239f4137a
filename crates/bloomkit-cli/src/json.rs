//! A JSON value and its text, for `info --json`: one object, small enough that a serializer
//! crate would be more code to audit than this.

use std::fmt::Write as _;

/// A JSON value.
pub enum Json {
    /// `null`: a figure that does not exist (the bits per key of an empty filter).
    Null,
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
    /// The value as JSON text, on one line.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
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
            ("name".into(), Json::Str("a \"b\"\\\n\u{1}é".into())),
            ("n".into(), Json::Int(u64::MAX)),
            ("rate".into(), Json::Float(0.0123)),
            ("tiny".into(), Json::Float(1e-300)),
            ("zero".into(), Json::Float(0.0)),
            ("nan".into(), Json::Float(f64::NAN)),
            ("none".into(), Json::Null),
            (
                "list".into(),
                Json::Array(vec![Json::Int(1), Json::Array(vec![])]),
            ),
        ]);
        assert_eq!(
            value.to_text(),
            r#"{"name": "a \"b\"\\\n\u0001é", "n": 18446744073709551615, "rate": 0.0123, "tiny": 1e-300, "zero": 0, "nan": null, "none": null, "list": [1, []]}"#
        );
    }
}
