//! `BF.*` on a key imported from RedisBloom ([`Value::RedisBloom`]): the chain answers with
//! RedisBloom's own hashing, so every item it held is still found and new items go in as
//! RedisBloom would put them. The replies and the log records are the same as for a
//! bloomkit filter, so clients, replicas and the log see no difference.

use bloomkit::redisbloom::RedisBloomChain;

use super::{add_error, info_reply, BloomCommand, BloomFigures, Op};
use crate::errors::{ITEM_EXISTS, OOM};
use crate::reply::Reply;
use crate::run::{Ctx, Log, Outcome};
use crate::shared::{added_record, Answers};

impl<'a> BloomCommand<'a> {
    /// What a reading command answers on an imported chain; `None` for the commands the
    /// common path serves (`SCANDUMP`, and the writes, which come through
    /// [`write_imported`](Self::write_imported)).
    pub(super) fn read_imported(&self, chain: &RedisBloomChain) -> Option<Reply> {
        Some(match &self.op {
            Op::Exists { items, multi } => {
                let answers = items.iter().map(|item| Reply::Bool(chain.contains(item)));
                if *multi {
                    Reply::Array(answers.collect())
                } else {
                    answers.into_iter().next().unwrap_or(Reply::Bool(false))
                }
            }
            Op::Info(field) => info_reply(&figures(chain), *field),
            Op::Card => Reply::Integer(chain.len().min(i64::MAX as u64) as i64),
            Op::Debug => debug(chain),
            _ => return None,
        })
    }

    /// What a writing command does to an imported chain; `None` for the commands the common
    /// path serves (`BF.LOADCHUNK`, `BF.MERGE`, which refuse it, and the reads).
    pub(super) fn write_imported<'c>(
        &'c self,
        chain: &mut RedisBloomChain,
        ctx: &Ctx<'_>,
    ) -> Option<Outcome<'c>> {
        Some(match &self.op {
            Op::Reserve(_) => Outcome::unchanged(Reply::error(ITEM_EXISTS)),
            Op::Add { items, multi, .. } => {
                let mut answers = Answers::new();
                let mut failure = None;
                for item in items.iter() {
                    if !may_grow(chain, ctx) {
                        failure = Some(Reply::error(OOM));
                        break;
                    }
                    match chain.insert(item) {
                        Ok(new) => answers.push(new),
                        Err(_) => {
                            failure = Some(Reply::error(add_error(false, chain.is_scaling())));
                            break;
                        }
                    }
                }
                let mut log = Log::new();
                if let Some(record) = added_record("BF.MADD", self.key, items, &answers) {
                    log.push(record);
                }
                let reply = if *multi {
                    let mut replies: Vec<Reply> = answers.iter().map(|&a| Reply::Bool(a)).collect();
                    replies.extend(failure);
                    Reply::Array(replies)
                } else {
                    failure
                        .unwrap_or_else(|| Reply::Bool(answers.first().copied().unwrap_or(false)))
                };
                Outcome { reply, log }
            }
            _ => return None,
        })
    }
}

/// Whether the budget lets the chain add a link if its newest is full: the next link is
/// about `expansion` times the newest (a little more, for its tighter rate), which is what
/// is asked for.
fn may_grow(chain: &RedisBloomChain, ctx: &Ctx<'_>) -> bool {
    let Some(newest) = chain.links().last() else {
        return true;
    };
    if newest.len() < newest.entries() || !chain.is_scaling() {
        return true;
    }
    let bytes = newest
        .as_bytes()
        .len()
        .saturating_mul(chain.expansion().max(1) as usize);
    ctx.budget.within_maxmemory(bytes)
}

/// `BF.INFO`'s figures for a chain: RedisBloom's capacity, size (its structs, 32 bytes and
/// 64 a link, and the links' bytes, as RedisBloom 2.8 reports them), links, items and
/// expansion; and bloomkit's fill and estimates from the bits set in each link.
pub(crate) fn figures(chain: &RedisBloomChain) -> BloomFigures {
    let mut ones_total = 0u64;
    let mut bits_total = 0u64;
    let mut estimated_items = 0f64;
    let mut all_miss = 1f64;
    for link in chain.links() {
        let ones: u64 = link
            .as_bytes()
            .iter()
            .map(|b| u64::from(b.count_ones()))
            .sum();
        let bits = link.bits().max(1);
        ones_total += ones;
        bits_total += bits;
        let fill = ones as f64 / bits as f64;
        let k = f64::from(link.num_hashes().max(1));
        // Swamidass and Baldi's estimate of the items behind `ones` bits set.
        estimated_items += if fill < 1.0 {
            -(bits as f64 / k) * (1.0 - fill).ln()
        } else {
            link.len() as f64
        };
        all_miss *= 1.0 - fill.powf(k);
    }
    let size = chain.links().iter().fold(32u64, |s, l| {
        s.saturating_add(64 + l.as_bytes().len() as u64)
    });
    BloomFigures {
        capacity: chain.capacity(),
        size,
        filters: chain.links().len() as u64,
        items: chain.len(),
        expansion: chain.is_scaling().then(|| chain.expansion()),
        fill: ones_total as f64 / bits_total.max(1) as f64,
        estimated_items: estimated_items.round() as u64,
        estimated_fp_rate: 1.0 - all_miss,
    }
}

/// `BF.DEBUG key` of a chain: RedisBloom's lines.
fn debug(chain: &RedisBloomChain) -> Reply {
    let mut lines = vec![Reply::bulk(format!("size:{}", chain.len()))];
    for link in chain.links() {
        lines.push(Reply::bulk(format!(
            "bytes:{} bits:{} hashes:{} hashwidth:64 capacity:{} size:{} ratio:{}",
            link.as_bytes().len(),
            link.bits(),
            link.num_hashes(),
            link.entries(),
            link.len(),
            super::c_general(link.error())
        )));
    }
    Reply::Array(lines)
}
