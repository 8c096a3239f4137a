//! `CF.*` on a key imported from RedisBloom ([`Value::RedisCuckoo`]): the filter finds,
//! counts and deletes with RedisBloom's own fingerprints and buckets, so every item it held
//! is still found and `CF.DEL`/`CF.COUNT` go on working. New items are logged as `CF.ADD` of
//! each (a replay on the same filter stores them alike).

use bloomkit::redisbloom::{RedisCuckooFilter, RedisCuckooInsert};

use super::{insert_error, CuckooCommand, Op};
use crate::errors::{CF_FULL, CF_MAX_EXPANSIONS_REACHED, ITEM_EXISTS};
use crate::reply::Reply;
use crate::run::{Log, Outcome, Record};

impl<'a> CuckooCommand<'a> {
    /// What a reading command answers on an imported filter; `None` for the commands the
    /// common path serves (`SCANDUMP`, and the writes).
    pub(super) fn read_imported(&self, f: &RedisCuckooFilter) -> Option<Reply> {
        Some(match &self.op {
            Op::Exists { items, multi } => {
                let mut answers = items.iter().map(|item| Reply::Bool(f.contains(item)));
                if *multi {
                    Reply::Array(answers.collect())
                } else {
                    answers.next().unwrap_or(Reply::Bool(false))
                }
            }
            Op::Count(item) => Reply::Integer(f.count(item).min(i64::MAX as u64) as i64),
            Op::Info => info(f),
            Op::Debug => Reply::bulk(format!(
                "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} \
                 expansion:{}",
                f.bucket_size(),
                f.num_buckets(),
                f.len(),
                f.num_deletes(),
                f.num_filters(),
                f.max_iterations(),
                f.expansion()
            )),
            _ => return None,
        })
    }

    /// What a writing command does to an imported filter; `None` for the commands the common
    /// path serves (`CF.LOADCHUNK`, and the reads).
    pub(super) fn write_imported<'c>(&'c self, f: &mut RedisCuckooFilter) -> Option<Outcome<'c>> {
        Some(match &self.op {
            Op::Reserve(_) => Outcome::unchanged(Reply::error(ITEM_EXISTS)),
            Op::Del(item) => super::deleted(self.key, item, f.delete(item)),
            Op::Insert {
                items, nx, multi, ..
            } => {
                let mut log = Log::new();
                let mut replies = Vec::with_capacity(items.len());
                for item in items.iter() {
                    let result = if *nx {
                        f.insert_unique(item)
                    } else {
                        f.insert(item)
                    };
                    let answer = match result {
                        Ok(RedisCuckooInsert::Inserted) => {
                            log.push(Record::Items {
                                name: "CF.ADD",
                                key: self.key,
                                items: std::slice::from_ref(item),
                            });
                            Ok(true)
                        }
                        Ok(RedisCuckooInsert::NoSpace) if !*multi => Err(if f.expansion() == 0 {
                            CF_FULL
                        } else {
                            CF_MAX_EXPANSIONS_REACHED
                        }),
                        Ok(RedisCuckooInsert::NoSpace) => Err(""),
                        Ok(_) => Ok(false),
                        Err(_) => Err(insert_error(false, u32::from(f.expansion()))),
                    };
                    replies.push(match (answer, *multi) {
                        (Ok(new), true) if *nx => Reply::Integer(new as i64),
                        (Ok(new), _) => Reply::Bool(new),
                        // RedisBloom answers −1 for an item that found no room (in RESP3,
                        // false for CF.INSERT), and goes on with the next.
                        (Err(_), true) if *nx => Reply::Integer(-1),
                        (Err(_), true) => Reply::PerProtocol {
                            resp2: Box::new(Reply::Integer(-1)),
                            resp3: Box::new(Reply::Bool(false)),
                        },
                        (Err(error), false) => Reply::error(error),
                    });
                }
                let reply = if *multi {
                    Reply::Array(replies)
                } else {
                    replies.pop().unwrap_or(Reply::Bool(false))
                };
                Outcome { reply, log }
            }
            Op::Compact => Outcome::unchanged(Reply::error(
                "ERR CF.COMPACT does not apply to a filter imported from RedisBloom",
            )),
            _ => return None,
        })
    }
}

/// `CF.INFO` of an imported filter: RedisBloom's fields (its size: 40 bytes, 16 a
/// sub-filter, and a byte a slot), then bloomkit's load factor and estimated error rate.
fn info(f: &RedisCuckooFilter) -> Reply {
    let entry = |name: &str, value: u64| {
        (
            Reply::Simple(name.to_string()),
            Reply::Integer(value.min(i64::MAX as u64) as i64),
        )
    };
    let slots = f.memory_bytes().max(1) as f64;
    let load = f.len() as f64 / slots;
    // A lookup compares the item's 8-bit fingerprint (1 to 255) with the slots of two
    // buckets in each sub-filter.
    let compared = 2.0 * f64::from(f.bucket_size()) * load * f.num_filters() as f64;
    let fp_rate = 1.0 - (1.0 - 1.0 / 255.0f64).powf(compared);
    Reply::Map(vec![
        entry(
            "Size",
            40 + 16 * f.num_filters() as u64 + f.memory_bytes() as u64,
        ),
        entry("Number of buckets", f.num_buckets()),
        entry("Number of filters", f.num_filters() as u64),
        entry("Number of items inserted", f.len()),
        entry("Number of items deleted", f.num_deletes()),
        entry("Bucket size", u64::from(f.bucket_size())),
        entry("Expansion rate", u64::from(f.expansion())),
        entry("Max iterations", u64::from(f.max_iterations())),
        (
            Reply::Simple("Load factor".to_string()),
            Reply::Double(load),
        ),
        (
            Reply::Simple("Estimated error rate".to_string()),
            Reply::Double(fp_rate),
        ),
    ])
}
