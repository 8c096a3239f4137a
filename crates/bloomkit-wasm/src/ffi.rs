//! The functions `bloomkit.wasm` exports, for `page/bloomkit.js`.
//!
//! Plain `extern "C"` functions instead of wasm-bindgen: the page needs a dozen calls that
//! take numbers and one string and return JSON text, which a twenty-line loader handles, and
//! it spares the build a code generator whose version must match the crate's.
//!
//! The protocol, all in the module's own memory:
//!
//! * A string goes in by `bk_input(len)`, which returns where to write `len` bytes of UTF-8;
//!   the next call reads them (its `len` argument says how many).
//! * Every call but `bk_input` leaves its reply, JSON, at `bk_output_ptr()`, `bk_output_len()`
//!   bytes long, valid until the next call.
//!
//! No `unsafe` block is needed: the loader writes into a `Vec` this module owns while no Rust
//! code runs, and the calls read it as ordinary Rust. The lint `unsafe_code` is allowed here
//! only for `#[no_mangle]`, which exports these names; they all start `bk_`, so they cannot
//! clash with another symbol in the module.
#![allow(unsafe_code)]

use std::sync::{LazyLock, Mutex, MutexGuard};

use crate::api::Explorer;

/// The page's state and the two buffers.
struct State {
    explorer: Explorer,
    input: Vec<u8>,
    output: String,
}

// A `Mutex` only because a `static` must be `Sync`; the page calls from one thread.
static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| {
    Mutex::new(State {
        explorer: Explorer::new(),
        input: Vec::new(),
        output: String::new(),
    })
});

fn state() -> MutexGuard<'static, State> {
    // A panic aborts the module (panic = "abort"), so the lock is never poisoned; were it, the
    // state is still whole, as each call replaces the reply wholesale.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on the explorer with the string in the input buffer, and keeps its reply.
fn with_input(len: usize, f: impl FnOnce(&mut Explorer, &str) -> String) {
    let mut s = state();
    let State {
        explorer,
        input,
        output,
    } = &mut *s;
    let bytes = &input[..len.min(input.len())];
    *output = match std::str::from_utf8(bytes) {
        Ok(text) => f(explorer, text),
        Err(_) => bloomkit_lab::json::Json::error("the text is not UTF-8").to_text(),
    };
}

/// Runs `f` on the explorer and keeps its reply.
fn reply(f: impl FnOnce(&mut Explorer) -> String) {
    let mut s = state();
    let out = f(&mut s.explorer);
    s.output = out;
}

/// Makes room for `len` bytes of input and returns where to write them.
#[no_mangle]
pub extern "C" fn bk_input(len: usize) -> *mut u8 {
    let mut s = state();
    s.input.clear();
    s.input.resize(len, 0);
    s.input.as_mut_ptr()
}

/// Where the last reply starts.
#[no_mangle]
pub extern "C" fn bk_output_ptr() -> *const u8 {
    state().output.as_ptr()
}

/// The last reply's length in bytes.
#[no_mangle]
pub extern "C" fn bk_output_len() -> usize {
    state().output.len()
}

/// [`Explorer::teach_reset`].
#[no_mangle]
pub extern "C" fn bk_teach_reset() {
    reply(|x| x.teach_reset());
}

/// [`Explorer::teach_state`].
#[no_mangle]
pub extern "C" fn bk_teach_state() {
    reply(|x| x.teach_state());
}

/// [`Explorer::teach_add`] of the input.
#[no_mangle]
pub extern "C" fn bk_teach_add(len: usize) {
    with_input(len, |x, word| x.teach_add(word));
}

/// [`Explorer::teach_query`] of the input.
#[no_mangle]
pub extern "C" fn bk_teach_query(len: usize) {
    with_input(len, |x, word| x.teach_query(word));
}

/// [`Explorer::curve`].
#[no_mangle]
pub extern "C" fn bk_curve(m: f64, n: f64, k: f64, max_k: f64) {
    reply(|x| x.curve(m, n, k, max_k));
}

/// [`Explorer::kinds`].
#[no_mangle]
pub extern "C" fn bk_kinds() {
    reply(|x| x.kinds());
}

/// [`Explorer::lab_build`], the kind's name in the input.
#[no_mangle]
pub extern "C" fn bk_lab_build(len: usize, keys: f64, fp_rate: f64, absent_keys: f64) {
    with_input(len, |x, kind| x.lab_build(kind, keys, fp_rate, absent_keys));
}

/// [`Explorer::lab_fill`].
#[no_mangle]
pub extern "C" fn bk_lab_fill(factor: f64, absent_keys: f64) {
    reply(|x| x.lab_fill(factor, absent_keys));
}

/// [`Explorer::lab_answers`]; `absent` is 0 or 1.
#[no_mangle]
pub extern "C" fn bk_lab_answers(start: f64, count: f64, absent: u32) {
    reply(|x| x.lab_answers(start, count, absent != 0));
}
