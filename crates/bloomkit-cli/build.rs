//! Builds the explorer page's WebAssembly module (`crates/bloomkit-wasm`) and leaves it in
//! `OUT_DIR/bloomkit.wasm`, where `src/commands/explore.rs` embeds it with the page's HTML,
//! CSS and scripts. The recipe is the `bloomkit-wasm-build` crate's.
//!
//! Where the `wasm32-unknown-unknown` target is not installed (a `cargo install` on a
//! machine that never added it), the build still succeeds with a warning and an empty
//! module; `bloomkit explore` then says how to get the page (install the target, rebuild)
//! instead of serving half of it.

use bloomkit_wasm_build as wasm_build;

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let workspace = manifest.join("../..");
    // The module is the wasm crate, the lab crate and the library compiled: rebuild when any
    // of them changes. (A change to the recipe rebuilds this script, a build-dependency.)
    for path in [
        "../bloomkit-wasm/src",
        "../bloomkit-wasm/Cargo.toml",
        "../bloomkit-lab/src",
        "../bloomkit-lab/Cargo.toml",
        "../bloomkit/src",
        "../bloomkit/Cargo.toml",
        "../../Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={path}");
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let module = out.join("bloomkit.wasm");
    match wasm_build::build(
        Path::new(&cargo),
        Path::new(&rustc),
        &workspace,
        &out.join("wasm-target"),
    ) {
        Ok(wasm_build::Built::Module(built)) => {
            std::fs::copy(&built, &module).unwrap_or_else(|e| {
                panic!(
                    "cannot copy {} to {}: {e}",
                    built.display(),
                    module.display()
                )
            });
        }
        Ok(wasm_build::Built::TargetMissing(why)) => {
            println!("cargo:warning=bloomkit explore will have no page: {why}");
            // Installing the target adds its directory under the toolchain's `rustlib`:
            // the next build then runs this script again and embeds the page, as the
            // warning promises, though no source changed.
            if let Some(rustlib) = rustlib(Path::new(&rustc)) {
                println!("cargo:rerun-if-changed={}", rustlib.display());
            }
            std::fs::write(&module, b"")
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", module.display()));
        }
        Err(e) => {
            // Cargo shows a build script's standard error when it fails.
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}

/// The toolchain's directory of targets' libraries (`<sysroot>/lib/rustlib`).
fn rustlib(rustc: &Path) -> Option<PathBuf> {
    let output = std::process::Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let rustlib = sysroot.join("lib").join("rustlib");
    (output.status.success() && rustlib.is_dir()).then_some(rustlib)
}
