//! Writing the JSON the page reads: objects of strings, numbers, booleans and arrays.
//!
//! A few dozen lines instead of serde: the page's replies are small and fixed in shape, and
//! every kilobyte here is a kilobyte of `.wasm` the page downloads.

use std::fmt::Write;

/// A JSON value already written out.
#[derive(Clone, Debug, PartialEq)]
pub struct Json(String);

impl Json {
    /// The text.
    pub fn into_string(self) -> String {
        self.0
    }

    /// `null`.
    pub fn null() -> Json {
        Json("null".to_string())
    }

    /// A string, escaped.
    pub fn str(s: &str) -> Json {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
        out.push('"');
        Json(out)
    }

    /// A number; `null` for NaN and the infinities, which JSON cannot hold.
    pub fn num(x: f64) -> Json {
        if x.is_finite() {
            Json(format!("{x}"))
        } else {
            Json::null()
        }
    }

    /// An integer.
    pub fn int(x: u64) -> Json {
        Json(x.to_string())
    }

    /// `true` or `false`.
    pub fn bool(b: bool) -> Json {
        Json(b.to_string())
    }

    /// An array of values.
    pub fn array(items: impl IntoIterator<Item = Json>) -> Json {
        let mut out = String::from("[");
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&item.0);
        }
        out.push(']');
        Json(out)
    }

    /// An object with these fields, in this order.
    pub fn object<'a>(fields: impl IntoIterator<Item = (&'a str, Json)>) -> Json {
        let mut out = String::from("{");
        for (i, (name, value)) in fields.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&Json::str(name).0);
            out.push(':');
            out.push_str(&value.0);
        }
        out.push('}');
        Json(out)
    }

    /// `{"error": message}`: how every reply says a request was refused.
    pub fn error(message: &str) -> Json {
        Json::object([("error", Json::str(message))])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_json_needs_escaped() {
        assert_eq!(Json::str("a\"b\\c\n\u{1}é").0, r#""a\"b\\c\n\u0001é""#);
    }

    #[test]
    fn writes_objects_and_arrays() {
        let v = Json::object([
            ("n", Json::num(0.5)),
            ("i", Json::int(7)),
            ("b", Json::bool(true)),
            ("a", Json::array([Json::null(), Json::num(f64::NAN)])),
        ]);
        assert_eq!(v.0, r#"{"n":0.5,"i":7,"b":true,"a":[null,null]}"#);
    }
}
