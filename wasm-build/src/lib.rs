//! Builds a workspace crate as a `wasm32-wasip2` component from a build script, so that
//! nobody types a separate wasm build step.
//!
//! It runs a nested `cargo rustc --crate-type cdylib --target wasm32-wasip2 --profile
//! component` in a target directory of its own (one per artifact: two feature sets of one
//! crate would otherwise overwrite each other's `.wasm`), installing the `wasm32-wasip2`
//! target with rustup first if the toolchain lacks it: `RUSTUP_AUTO_INSTALL=0` means
//! `rust-toolchain.toml` alone will not.

use std::path::{Path, PathBuf};
use std::process::Command;

pub const TARGET: &str = "wasm32-wasip2";

/// One component to build.
pub struct Wasm<'a> {
    /// The workspace package.
    pub package: &'a str,
    /// Cargo features to enable.
    pub features: &'a [&'a str],
    /// A subdirectory of `target/` for this artifact alone.
    pub target_subdir: &'a str,
}

/// The workspace root of the build script's package (its parent directory).
pub fn workspace_root() -> PathBuf {
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    manifest_dir.parent().expect("the package lives in the workspace").to_path_buf()
}

/// Tells cargo to rerun the build script when any of these workspace paths change.
pub fn rerun_if_changed(root: &Path, paths: &[&str]) {
    for watched in paths.iter().chain(&["Cargo.lock", "Cargo.toml"]) {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
}

impl Wasm<'_> {
    /// Builds the component and returns the path of its `.wasm`.
    pub fn build(&self, root: &Path) -> PathBuf {
        ensure_target(root);
        let target_dir = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target"))
            .join(self.target_subdir);
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(root)
            .args(["rustc", "--locked", "-p", self.package, "--lib", "--crate-type", "cdylib"])
            .args(["--target", TARGET, "--profile", "component"])
            .arg("--target-dir")
            .arg(&target_dir);
        if !self.features.is_empty() {
            cmd.arg("--features").arg(self.features.join(","));
        }
        // Flags meant for the host build must not leak into the wasm build.
        for var in [
            "CARGO_ENCODED_RUSTFLAGS",
            "RUSTFLAGS",
            "CARGO_BUILD_RUSTFLAGS",
            "CARGO_BUILD_TARGET",
            "CARGO_TARGET_DIR",
            "RUSTC_WORKSPACE_WRAPPER",
            "CARGO_PRIMARY_PACKAGE",
        ] {
            cmd.env_remove(var);
        }
        cmd.stdout(std::process::Stdio::null());
        let status = cmd.status().expect("run cargo to build a component");
        assert!(status.success(), "building {} for {TARGET} failed (see the output above)", self.package);
        let wasm = target_dir
            .join(TARGET)
            .join("component")
            .join(format!("{}.wasm", self.package.replace('-', "_")));
        assert!(wasm.exists(), "the build of {} did not produce {}", self.package, wasm.display());
        wasm
    }
}

fn ensure_target(root: &Path) {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot =
        Command::new(rustc).args(["--print", "sysroot"]).output().expect("run rustc --print sysroot");
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if sysroot.join("lib/rustlib").join(TARGET).exists() {
        return;
    }
    // Run from the workspace root so that rustup picks the toolchain rust-toolchain.toml pins.
    println!("cargo:warning=installing the {TARGET} target with rustup");
    let status = Command::new("rustup")
        .current_dir(root)
        .args(["target", "add", TARGET])
        .status()
        .unwrap_or_else(|e| panic!("the {TARGET} target is missing and rustup could not run: {e}"));
    assert!(status.success(), "`rustup target add {TARGET}` failed");
}
