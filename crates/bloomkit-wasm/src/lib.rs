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
//! * [`lab`]: [`lab::Experiment`], a real filter of any kind, filled and measured. The CLI's
//!   `bloomkit plot` uses it natively, so the page and the chart measure the same way.
//! * [`api`]: [`api::Explorer`], the page's state, answering in JSON ([`json`]).
//! * `ffi.rs` (WebAssembly only): the exported functions `page/bloomkit.js` calls, thin
//!   wrappers over [`api`].
//!
//! The page itself (`page/`: HTML, CSS and two small scripts, no framework, nothing fetched
//! from elsewhere) sits beside this crate; the CLI's build script compiles this crate for
//! `wasm32-unknown-unknown` and embeds the page and the `.wasm` in the `bloomkit` binary
//! (`build/wasm_build.rs` says how).

#![deny(missing_docs)]
// The exported symbols of `ffi.rs` are the only exception, and need no `unsafe` block.
#![deny(unsafe_code)]

pub mod api;
pub mod curve;
pub mod json;
pub mod lab;
pub mod teach;

#[cfg(target_arch = "wasm32")]
mod ffi;
