//! The `serde` feature: every filter serializes as one byte string, its file format (the
//! bytes of `to_bytes`), and deserializes through `from_bytes`, so every check of the format
//! applies and the bytes stay readable by `from_bytes` (and by the CLI, from a file).
//!
//! The impls themselves are written once: [`format_methods!`](crate::format) adds them to
//! every kind, and this module has the visitors they share. Formats that have byte strings
//! (bincode, postcard, CBOR, MessagePack) store the bytes as they are; JSON writes them as an
//! array of numbers, which deserializes too. The views ([`BlockedBloomFilterRef`],
//! [`BloomFilterRef`]) serialize the same way and deserialize without a copy from formats
//! that lend their input's bytes.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::{AnyFilter, BlockedBloomFilterRef, BloomFilterRef};

/// The most bytes reserved up front from a sequence's claimed length (JSON's array of
/// numbers): a hostile input may claim any length, so past this the buffer grows only as
/// bytes actually arrive.
const MAX_RESERVED: usize = 1 << 20;

/// Deserializes a byte string and reads a filter from it with `from_bytes`.
pub(crate) fn deserialize<'de, D, F>(
    deserializer: D,
    from_bytes: fn(&[u8]) -> crate::Result<F>,
) -> Result<F, D::Error>
where
    D: Deserializer<'de>,
{
    deserializer.deserialize_bytes(FilterBytes { from_bytes })
}

/// Takes a filter's bytes in any form a format offers them, and reads the filter.
struct FilterBytes<F> {
    from_bytes: fn(&[u8]) -> crate::Result<F>,
}

impl<'de, F> Visitor<'de> for FilterBytes<F> {
    type Value = F;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a bloomkit filter in its file format, as a byte string")
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<F, E> {
        (self.from_bytes)(bytes).map_err(E::custom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<F, A::Error> {
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_RESERVED));
        while let Some(byte) = seq.next_element::<u8>()? {
            bytes.push(byte);
        }
        self.visit_bytes(&bytes)
    }
}

/// Takes a view's bytes, which must be borrowed from the input for as long as the view.
struct ViewBytes<'a, V> {
    open: fn(&'a [u8]) -> crate::Result<V>,
}

macro_rules! view_serde {
    ($($view:ident),*) => {$(
        impl Serialize for $view<'_> {
            /// The bytes the view reads: the owned filter's serialization.
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_bytes(self.as_bytes())
            }
        }

        impl<'de: 'a, 'a> Visitor<'de> for ViewBytes<'a, $view<'a>> {
            type Value = $view<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a bloomkit filter in its file format, as a byte string borrowed from the \
                     input (a format such as bincode or postcard, deserializing from a slice; \
                     elsewhere, deserialize the owned filter)",
                )
            }

            fn visit_borrowed_bytes<E: de::Error>(self, bytes: &'de [u8]) -> Result<Self::Value, E> {
                (self.open)(bytes).map_err(E::custom)
            }
        }

        impl<'de: 'a, 'a> Deserialize<'de> for $view<'a> {
            /// Opens the view over the input's own bytes, checksum verified, without a copy.
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_bytes(ViewBytes { open: $view::from_bytes })
            }
        }
    )*};
}

view_serde!(BlockedBloomFilterRef, BloomFilterRef);

impl Serialize for AnyFilter {
    /// The filter's file format, whatever its kind: [`AnyFilter::to_bytes`].
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.to_bytes())
    }
}

impl<'de> Deserialize<'de> for AnyFilter {
    /// Reads a filter of any kind through [`AnyFilter::from_bytes`].
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize(deserializer, AnyFilter::from_bytes)
    }
}
