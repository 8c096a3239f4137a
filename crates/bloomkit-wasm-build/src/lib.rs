//! How `bloomkit.wasm` is built: one recipe, used by the CLI's build script (which embeds the
//! result in the `bloomkit` binary) and by `bloomkit-wasm`'s Node.js test (which loads it).
//!
//! It runs a second `cargo build`, of `bloomkit-wasm` for `wasm32-unknown-unknown`, with its
//! own target directory: the outer build holds the lock on its own directory for as long as
//! it runs, so sharing it would wait forever. The profile is release, without debug info, with
//! `panic = "abort"` (a panic in the page stops the module; unwinding tables would only make
//! it bigger) and with whole-program optimisation (7% smaller, and no slower to build for a
//! crate this size), set on the command line so the workspace's own profile is untouched.
//!
//! Plain `std`, with no dependency: a build script's dependencies are built before it runs,
//! and this one must not make the CLI's build wait for more than itself.

#![deny(missing_docs)]
#![deny(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The target the page's module is built for.
pub const TARGET: &str = "wasm32-unknown-unknown";

/// What [`build`] did.
pub enum Built {
    /// The module, at this path.
    Module(PathBuf),
    /// The Rust target is not installed here, so nothing was built; the message says how to
    /// install it.
    TargetMissing(String),
}

/// Builds `bloomkit-wasm` for [`TARGET`] from the workspace at `workspace`, into
/// `target_dir`, with `cargo` and `rustc` (the paths of the toolchain running the caller).
///
/// # Errors
///
/// The build's own error output when it fails for any reason but a missing target.
pub fn build(
    cargo: &Path,
    rustc: &Path,
    workspace: &Path,
    target_dir: &Path,
) -> Result<Built, String> {
    if !target_installed(rustc) {
        return Ok(Built::TargetMissing(format!(
            "the Rust target {TARGET} is not installed, so the explorer page could not be \
             built: install it with `rustup target add {TARGET}` and build again"
        )));
    }
    let mut command = Command::new(cargo);
    command
        .args([
            "build",
            "--release",
            "--lib",
            "-p",
            "bloomkit-wasm",
            "--target",
            TARGET,
        ])
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir)
        .args([
            "--config",
            "profile.release.debug=false",
            "--config",
            "profile.release.strip=true",
            "--config",
            "profile.release.panic=\"abort\"",
            "--config",
            "profile.release.lto=true",
            "--config",
            "profile.release.codegen-units=1",
        ]);
    // Flags meant for the outer build's host code (`-C target-cpu=native`, clippy's driver)
    // must not reach a WebAssembly build.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
    ] {
        command.env_remove(var);
    }
    let output = command
        .output()
        .map_err(|e| format!("could not run {}: {e}", cargo.display()))?;
    if !output.status.success() {
        return Err(format!(
            "building the explorer's WebAssembly module failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let module = target_dir
        .join(TARGET)
        .join("release")
        .join("bloomkit_wasm.wasm");
    if module.is_file() {
        Ok(Built::Module(module))
    } else {
        Err(format!(
            "the WebAssembly build succeeded but left no {}",
            module.display()
        ))
    }
}

/// Whether `rustc` has the standard library for [`TARGET`]: its `libcore` in the target's
/// library directory.
fn target_installed(rustc: &Path) -> bool {
    let Ok(output) = Command::new(rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
    else {
        return false;
    };
    if !output.status.success() {
        return false;
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("libcore-"))
    })
}
