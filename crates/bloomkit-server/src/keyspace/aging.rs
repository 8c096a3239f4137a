//! The timer half of `AF.*` keys with a `PERIOD`: each rotation that falls due is run as an
//! explicit `AF.ROTATE key AT <time>`, through the log like a client's, so a restart or a
//! replay reaches the same generations whatever its clock says.

use bloomkit_commands::aging::rotate_command;
use bloomkit_commands::{with_args, Defaults, FilterCommand, Value};
use bytes::Bytes;

use super::shard::read;
use super::{now_ms, Keyspace, NUM_SHARDS};

impl Keyspace {
    /// Runs the rotations due now on aging keys with a period, one per key (a key more than
    /// one period behind gets the next on the next call). Returns how many ran. Nothing
    /// runs while the data set loads: the log's own `AF.ROTATE`s are what it replays.
    ///
    /// Each shard is scanned under its read lock; a key leased by a long command is left
    /// for the next call.
    pub fn rotate_due_aging(&self, defaults: &Defaults) -> usize {
        if self.is_loading() {
            return 0;
        }
        let now = now_ms();
        let mut rotated = 0;
        for index in 0..NUM_SHARDS {
            let due: Vec<(Bytes, u64)> = {
                let map = read(&self.shards[index]);
                let clock = self.now();
                map.entries
                    .iter()
                    .filter(|(_, entry)| entry.lease.is_none() && !entry.is_expired(clock))
                    .filter_map(|(key, entry)| match &*entry.value {
                        Value::Aging(k) => k.due_rotation(now).map(|at| (key.clone(), at)),
                        _ => None,
                    })
                    .collect()
            };
            for (key, at) in due {
                // Not in the middle of an `EXEC`, whose records the log must hold together.
                let _entered = self.gate.enter(index as u64);
                let words = rotate_command(&key, at);
                with_args(
                    &words,
                    |w| &w[..],
                    |args| {
                        if let Some(Ok(command)) = FilterCommand::parse_logged(args) {
                            let (reply, _) = self.run_filter(&command, defaults);
                            rotated += usize::from(!reply.is_error());
                        }
                    },
                );
            }
        }
        rotated
    }
}
