//! Keys of several Rust types, for the fixtures that pin how each type is fed to the hash:
//! byte slices, a negative `i32`, a tuple, a wide `u128`, a byte array and text.
//!
//! The `*-std-v1` fixtures were written by bloomkit 0.1 (its `Hash` feed) with exactly these
//! keys, and the `*-keys-v1` ones by the current feed; both record one line per key,
//! `descriptor<TAB>maybe|no`, with the descriptor naming the type and the value.

/// A key and the Rust type it is given as.
#[derive(Clone, Debug, PartialEq)]
pub enum TypedKey {
    /// Given as `&[u8]`.
    Bytes(Vec<u8>),
    /// Given as `&i32`.
    Int32(i32),
    /// Given as `&(u32, &str)`.
    Pair(u32, String),
    /// Given as `&u128`.
    Wide(u128),
    /// Given as `&[u8; 4]`.
    Array([u8; 4]),
    /// Given as `&str`.
    Text(String),
}

/// The fixtures' key number `i`: the types in turn.
pub fn typed_key(i: u64) -> TypedKey {
    match i % 6 {
        0 => TypedKey::Bytes(format!("golden:{i}").into_bytes()),
        1 => TypedKey::Int32(-(i as i32)),
        2 => TypedKey::Pair(i as u32, "golden".to_string()),
        3 => TypedKey::Wide(((i as u128) << 64) | 1),
        4 => TypedKey::Array((i as u32).to_le_bytes()),
        _ => TypedKey::Text(format!("golden:{i}")),
    }
}

impl TypedKey {
    /// The descriptor written in an answers file.
    pub fn describe(&self) -> String {
        match self {
            TypedKey::Bytes(b) => format!("bytes:{}", String::from_utf8_lossy(b)),
            TypedKey::Int32(v) => format!("i32:{v}"),
            TypedKey::Pair(a, b) => format!("pair:{a},{b}"),
            TypedKey::Wide(v) => format!("u128:{v}"),
            TypedKey::Array(a) => format!("array:{a:?}"),
            TypedKey::Text(t) => format!("text:{t}"),
        }
    }

    /// The key a descriptor names; a line without a type prefix (the older fixtures, whose
    /// keys are all text) is a text key.
    pub fn parse(descriptor: &str) -> TypedKey {
        let (kind, value) = descriptor.split_once(':').unwrap_or(("", descriptor));
        match kind {
            "bytes" => TypedKey::Bytes(value.as_bytes().to_vec()),
            "i32" => TypedKey::Int32(value.parse().unwrap()),
            "pair" => {
                let (a, b) = value.split_once(',').unwrap();
                TypedKey::Pair(a.parse().unwrap(), b.to_string())
            }
            "u128" => TypedKey::Wide(value.parse().unwrap()),
            "array" => {
                let inner = value.trim_start_matches('[').trim_end_matches(']');
                let mut a = [0u8; 4];
                for (slot, part) in a.iter_mut().zip(inner.split(", ")) {
                    *slot = part.parse().unwrap();
                }
                TypedKey::Array(a)
            }
            "text" => TypedKey::Text(value.to_string()),
            _ => TypedKey::Text(descriptor.to_string()),
        }
    }
}

/// Runs `$body` with `$v` bound to the key as its Rust type (a reference to it).
#[macro_export]
macro_rules! with_key {
    ($k:expr, |$v:ident| $body:expr) => {
        match $k {
            $crate::common::typed::TypedKey::Bytes(b) => {
                let $v = &b[..];
                $body
            }
            $crate::common::typed::TypedKey::Int32(x) => {
                let $v = x;
                $body
            }
            $crate::common::typed::TypedKey::Pair(a, s) => {
                let $v = &(*a, s.as_str());
                $body
            }
            $crate::common::typed::TypedKey::Wide(x) => {
                let $v = x;
                $body
            }
            $crate::common::typed::TypedKey::Array(a) => {
                let $v = a;
                $body
            }
            $crate::common::typed::TypedKey::Text(t) => {
                let $v = t.as_str();
                $body
            }
        }
    };
}
