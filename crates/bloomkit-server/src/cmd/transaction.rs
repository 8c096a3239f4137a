//! Transaction commands: `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`, with Redis 7's
//! replies.
//!
//! These only change the client's [`Transaction`](crate::transaction::Transaction). What
//! is queued after `MULTI` is the dispatcher's decision (every command but those
//! [`runs_inside_multi`] names), and so is running the queue: `EXEC`'s handler hands it back
//! (a pending `Exec`), since running commands is the dispatcher's job, not a command's.

use bloomkit_commands::Reply;

use super::{Call, Executed, Pending};
use crate::errors::EXEC_WITHOUT_MULTI;

/// The commands that run at once inside `MULTI` instead of being queued: Redis's list
/// (with `RESET`, which this server does not have).
pub fn runs_inside_multi(name: &str) -> bool {
    matches!(name, "exec" | "discard" | "multi" | "watch" | "quit")
}

/// `MULTI`.
pub fn multi(call: &mut Call<'_>) -> Executed {
    let transaction = &mut call.session.transaction;
    if transaction.is_open() {
        // Not a refusal: the transaction goes on, as in Redis.
        return Executed::reply(Reply::error("ERR MULTI calls can not be nested"));
    }
    transaction.open();
    Executed::reply(Reply::Ok)
}

/// `EXEC`: without `MULTI` an error; else the dispatcher runs the queue.
pub fn exec(call: &mut Call<'_>) -> Executed {
    if !call.session.transaction.is_open() {
        return Executed::reply(Reply::error(EXEC_WITHOUT_MULTI));
    }
    Executed::pending(Pending::Exec)
}

/// `DISCARD`: drops the queue and every watch.
pub fn discard(call: &mut Call<'_>) -> Executed {
    let transaction = &mut call.session.transaction;
    if transaction.take().is_none() {
        return Executed::reply(Reply::error("ERR DISCARD without MULTI"));
    }
    transaction.unwatch();
    Executed::reply(Reply::Ok)
}

/// `WATCH key...`.
pub fn watch(call: &mut Call<'_>) -> Executed {
    if call.session.transaction.is_open() {
        return Executed::reply(Reply::error("ERR WATCH inside MULTI is not allowed"));
    }
    call.session.transaction.watch(call.shared, &call.args[1..]);
    Executed::reply(Reply::Ok)
}

/// `UNWATCH` (queued like any command inside `MULTI`, as in Redis).
pub fn unwatch(call: &mut Call<'_>) -> Executed {
    call.session.transaction.unwatch();
    Executed::reply(Reply::Ok)
}
