//! [`Keyspace::run_filter`] for a command that reads other keys besides the one it
//! changes (`BF.MERGE dest src...`): every key's shard locked in index order, the sources
//! read where they lie, the destination changed in place or created.

use std::sync::Arc;

use bloomkit_commands::{Budget, Ctx, Defaults, FilterCommand, Record, Reply, Value};
use bytes::Bytes;

use super::filter::PutBack;
use super::{memory, Entry, Keyspace, Ticket};

impl Keyspace {
    /// Runs `command`, which has [`sources`](FilterCommand::sources), under the write locks
    /// of every key it names: the sources' values are shared (`Arc`), not copied, and the
    /// destination is changed as a one-key write is. Expired keys among them are removed
    /// first and their `DEL`s logged before the command.
    pub(super) fn run_with_sources(
        &self,
        command: &FilterCommand,
        defaults: &Defaults,
        budget: &dyn Budget,
    ) -> (Reply, Option<Ticket>) {
        let ctx = Ctx {
            defaults,
            budget,
            now_ms: &super::now_ms,
        };
        let dest = Bytes::copy_from_slice(command.key());
        let keys: Vec<Bytes> = std::iter::once(dest.clone())
            .chain(command.sources().iter().map(|k| Bytes::copy_from_slice(k)))
            .collect();
        let mut shards = self.write_many(keys.iter());
        let now = self.now();
        let ticks = self.clock_ticks();
        let mut log = Vec::new();
        for key in &keys {
            self.expire_if_needed(shards.get(self.shard_index(key)), key, now, &mut log);
        }
        let sources: Vec<Option<Arc<Value>>> = keys[1..]
            .iter()
            .map(|key| {
                let shard = shards.get(self.shard_index(key));
                shard.get(key).map(|entry| Arc::clone(&entry.value))
            })
            .collect();
        let source_values: Vec<Option<&Value>> = sources.iter().map(|v| v.as_deref()).collect();
        let dest_index = self.shard_index(&dest);
        let shard = shards.get(dest_index);
        let outcome = if let Some(entry) = shard.map.entries.get_mut(&dest) {
            entry.access.touch(ticks, self.eviction.policy().is_lfu());
            // Copied here only if a snapshot or a source shares it.
            let value = Arc::make_mut(&mut entry.value);
            let taken = std::mem::replace(value, Value::stand_in());
            let mut held = PutBack {
                place: value,
                slot: Some(taken),
            };
            let outcome = command.write_reading(&mut held.slot, &source_values, &ctx);
            drop(held);
            let (before, after) = (entry.memory_bytes, memory::value_cost(&entry.value));
            entry.memory_bytes = after;
            let value = Arc::clone(&entry.value);
            shard.add_memory(after);
            shard.sub_memory(before);
            if !outcome.log.is_empty() {
                shard.watches.touch(&dest);
                shard.check_health(&dest, &value);
            }
            outcome
        } else {
            let mut slot = None;
            let outcome = command.write_reading(&mut slot, &source_values, &ctx);
            if let Some(value) = slot {
                shard.insert(&dest, Entry::new(Arc::new(value), None, ticks));
            }
            outcome
        };
        log.extend(outcome.log.iter().map(Record::to_vec));
        let ticket = self.append(shards.first_index(), &log);
        drop(shards);
        (outcome.reply, ticket)
    }
}
