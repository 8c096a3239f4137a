//! bloomkit for the browser: what the explorer page (`bloomkit explore`) runs, compiled to
//! WebAssembly, and the same code natively.
//!
//! The page's JavaScript only draws; every answer it shows comes from here, and so from the
//! `bloomkit` library itself:
//!
//! * [`teach`]: [`teach::TeachingFilter`], the sixteen-bit, three-hash filter the page draws,
//!   with its probes cut from the library's key hash.
//! * [`curve`]: the false-positive rate against the number of hashes, from the library's
//!   sizing math.
//! * [`api`]: [`api::Explorer`], the page's state, answering in JSON. Its "real filter" panel
//!   is `bloomkit-lab`'s [`Experiment`](bloomkit_lab::Experiment), a real filter of any kind,
//!   filled and measured; the CLI's `bloomkit plot` runs the same crate natively, so the page
//!   and the chart measure the same way. Its JSON writer is that crate's too.
//! * `ffi.rs` (WebAssembly only): the exported functions `page/bloomkit.js` calls, thin
//!   wrappers over [`api`].
//!
//! The page itself (`page/`: HTML, CSS and two small scripts, no framework, nothing fetched
//! from elsewhere) sits beside this crate; the CLI's build script compiles this crate for
//! `wasm32-unknown-unknown` and embeds the page and the `.wasm` in the `bloomkit` binary
//! (the `bloomkit-wasm-build` crate says how). Like every host, this crate depends only on
//! the layers below it (the library and `bloomkit-lab`); no other crate depends on it but
//! the CLI's browser test, which compares the page's answers with this crate's run natively.

#![deny(missing_docs)]
// The exported symbols of `ffi.rs` are the only exception, and need no `unsafe` block.
#![deny(unsafe_code)]

pub mod api;
pub mod curve;
pub mod teach;

#[cfg(target_arch = "wasm32")]
mod ffi;
