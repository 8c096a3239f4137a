//! The filter families `bloomkit copy` moves, and the `INFO` fields that must agree at both
//! ends after a copy.

use bloomkit_commands::value::AGING_TYPE_NAME;
use bloomkit_commands::{Reply, Value};

use super::resp::Frame;

/// A family of keys: the commands that dump, load and describe them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// `BF.*`: RedisBloom's and bloomkit's Bloom filters (`TYPE` `MBbloom--`).
    Bloom,
    /// `CF.*`: cuckoo filters (`TYPE` `MBbloomCF`).
    Cuckoo,
    /// `AF.*`: bloomkit's aging filters, which only bloomkit serves.
    Aging,
}

impl Family {
    /// The family of a `TYPE` answer; `None` for any other type (a string, a list...).
    pub fn from_type_name(name: &[u8]) -> Option<Family> {
        match name {
            b"MBbloom--" => Some(Family::Bloom),
            b"MBbloomCF" => Some(Family::Cuckoo),
            n if n == AGING_TYPE_NAME.as_bytes() => Some(Family::Aging),
            _ => None,
        }
    }

    /// The family of a value held locally.
    pub fn of(value: &Value) -> Option<Family> {
        Family::from_type_name(value.type_name().as_bytes())
    }

    /// `BF.SCANDUMP`, `CF.SCANDUMP`, `AF.SCANDUMP`.
    pub fn scandump(self) -> &'static str {
        match self {
            Family::Bloom => "BF.SCANDUMP",
            Family::Cuckoo => "CF.SCANDUMP",
            Family::Aging => "AF.SCANDUMP",
        }
    }

    /// `BF.LOADCHUNK`, `CF.LOADCHUNK`, `AF.LOADCHUNK`.
    pub fn loadchunk(self) -> &'static str {
        match self {
            Family::Bloom => "BF.LOADCHUNK",
            Family::Cuckoo => "CF.LOADCHUNK",
            Family::Aging => "AF.LOADCHUNK",
        }
    }

    /// `BF.INFO`, `CF.INFO`, `AF.INFO`.
    pub fn info(self) -> &'static str {
        match self {
            Family::Bloom => "BF.INFO",
            Family::Cuckoo => "CF.INFO",
            Family::Aging => "AF.INFO",
        }
    }

    /// The `INFO` fields a faithful copy keeps: what the filter holds and how large it is
    /// (the memory reported beside them is each host's own accounting, so it may differ).
    pub fn checked_fields(self) -> &'static [&'static str] {
        match self {
            Family::Bloom => &["Capacity", "Number of filters", "Number of items inserted"],
            Family::Cuckoo => &[
                "Number of buckets",
                "Number of filters",
                "Number of items inserted",
                "Number of items deleted",
            ],
            Family::Aging => &["Capacity", "Generations", "Number of items inserted"],
        }
    }

    /// The checked fields of an `INFO` reply from a server (a flat array of names and
    /// values).
    ///
    /// # Errors
    ///
    /// The reply is an error, or lacks a field.
    pub fn info_from_frame(self, frame: &Frame) -> Result<Info, String> {
        let Frame::Array(Some(items)) = frame else {
            return Err(format!(
                "{} answered {} where a list of fields was expected",
                self.info(),
                frame.describe()
            ));
        };
        let pairs = items
            .chunks(2)
            .filter_map(|pair| match pair {
                [name, value] => Some((name.as_bytes()?.to_vec(), value.as_integer())),
                _ => None,
            })
            .collect::<Vec<_>>();
        self.pick(&pairs)
    }

    /// The checked fields of an `INFO` reply of the command layer (a value held locally).
    ///
    /// # Errors
    ///
    /// The reply is an error, or lacks a field.
    pub fn info_from_reply(self, reply: &Reply) -> Result<Info, String> {
        let text = |r: &Reply| match r {
            Reply::Simple(s) => Some(s.as_bytes().to_vec()),
            Reply::Bulk(b) => Some(b.to_vec()),
            _ => None,
        };
        let number = |r: &Reply| match r {
            Reply::Integer(n) => Some(*n),
            _ => None,
        };
        let pairs: Vec<(Vec<u8>, Option<i64>)> = match reply {
            Reply::PerProtocol { resp2, .. } => return self.info_from_reply(resp2),
            Reply::Map(entries) => entries
                .iter()
                .filter_map(|(k, v)| Some((text(k)?, number(v))))
                .collect(),
            Reply::Array(items) => items
                .chunks(2)
                .filter_map(|pair| match pair {
                    [k, v] => Some((text(k)?, number(v))),
                    _ => None,
                })
                .collect(),
            Reply::Error(e) => return Err(format!("{} answered '{e}'", self.info())),
            other => {
                return Err(format!(
                    "{} answered {other:?} where a list of fields was expected",
                    self.info()
                ))
            }
        };
        self.pick(&pairs)
    }

    fn pick(self, pairs: &[(Vec<u8>, Option<i64>)]) -> Result<Info, String> {
        let mut fields = Vec::new();
        for &name in self.checked_fields() {
            let value = pairs
                .iter()
                .find(|(n, _)| n == name.as_bytes())
                .and_then(|(_, v)| *v)
                .ok_or_else(|| format!("{} has no integer field '{name}'", self.info()))?;
            fields.push((name, value));
        }
        Ok(Info(fields))
    }
}

/// The checked `INFO` fields of one key, in [`Family::checked_fields`] order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info(pub Vec<(&'static str, i64)>);

impl Info {
    /// Where `self` (the source) and `other` (the copy) differ, as `field: a at the source,
    /// b at the destination`; `None` if they agree.
    pub fn difference(&self, other: &Info) -> Option<String> {
        let diffs: Vec<String> = self
            .0
            .iter()
            .zip(&other.0)
            .filter(|(a, b)| a != b)
            .map(|((name, a), (_, b))| format!("{name} is {a} at the source and {b} in the copy"))
            .collect();
        (!diffs.is_empty()).then(|| diffs.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names() {
        assert_eq!(Family::from_type_name(b"MBbloom--"), Some(Family::Bloom));
        assert_eq!(Family::from_type_name(b"MBbloomCF"), Some(Family::Cuckoo));
        assert_eq!(
            Family::from_type_name(AGING_TYPE_NAME.as_bytes()),
            Some(Family::Aging)
        );
        assert_eq!(Family::from_type_name(b"string"), None);
    }

    #[test]
    fn info_fields_from_both_forms() {
        let bulk = |s: &str| Frame::Bulk(Some(s.as_bytes().to_vec()));
        let frame = Frame::Array(Some(vec![
            bulk("Capacity"),
            Frame::Integer(100),
            bulk("Size"),
            Frame::Integer(240),
            bulk("Number of filters"),
            Frame::Integer(1),
            bulk("Number of items inserted"),
            Frame::Integer(7),
            bulk("Expansion rate"),
            Frame::Bulk(None),
        ]));
        let info = Family::Bloom.info_from_frame(&frame).unwrap();
        assert_eq!(
            info,
            Info(vec![
                ("Capacity", 100),
                ("Number of filters", 1),
                ("Number of items inserted", 7)
            ])
        );
        let reply = Reply::Map(vec![
            (Reply::Simple("Capacity".into()), Reply::Integer(100)),
            (Reply::Simple("Number of filters".into()), Reply::Integer(2)),
            (
                Reply::Simple("Number of items inserted".into()),
                Reply::Integer(7),
            ),
        ]);
        let other = Family::Bloom.info_from_reply(&reply).unwrap();
        assert_eq!(
            info.difference(&other).unwrap(),
            "Number of filters is 1 at the source and 2 in the copy"
        );
        assert_eq!(info.difference(&info), None);
        let e = Family::Cuckoo.info_from_frame(&frame).unwrap_err();
        assert!(e.contains("Number of buckets"), "{e}");
        assert!(Family::Bloom
            .info_from_frame(&Frame::Error("ERR not found".into()))
            .is_err());
    }
}
