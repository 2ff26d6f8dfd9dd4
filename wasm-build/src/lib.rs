//! Builds a workspace crate as a WASI 0.2 component from a build script, so that nobody types
//! a separate wasm build step.
//!
//! It runs a nested `cargo rustc --crate-type cdylib --profile component` in a target
//! directory of its own (one per artifact: two feature sets of one crate would otherwise
//! overwrite each other's `.wasm`), installing the Rust target with rustup first if the
//! toolchain lacks it: `RUSTUP_AUTO_INSTALL=0` means `rust-toolchain.toml` alone will not.
//!
//! Two kinds of build ([`Target`]): a crate that needs the rest of WASI (a `wasi:http` front)
//! is built for `wasm32-wasip2`, whose standard library links the whole CLI world. The gate
//! needs only what its WIT world names (a clock, randomness, a key-value store), so it is
//! built for `wasm32-unknown-unknown`, where the standard library imports nothing, and
//! `wit-component` turns the core module into a component from the world wit-bindgen embedded:
//! smaller, and a host has nothing else to link.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shadow stack of a `Bare` build. The gate recurses only through shallow record trees;
/// its deepest call chain uses a few KiB.
const BARE_STACK_BYTES: u32 = 64 << 10;

/// How a crate becomes a component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `wasm32-wasip2`: the toolchain's linker makes the component, with the CLI world's
    /// imports the standard library uses.
    Wasip2,
    /// `wasm32-unknown-unknown`, then `wit-component`: the component imports only its WIT
    /// world's interfaces. Written to `<target_subdir>/<crate>.wasm`.
    Bare,
}

impl Target {
    fn triple(self) -> &'static str {
        match self {
            Target::Wasip2 => "wasm32-wasip2",
            Target::Bare => "wasm32-unknown-unknown",
        }
    }
}

/// One component to build.
pub struct Wasm<'a> {
    /// The workspace package.
    pub package: &'a str,
    /// Cargo features to enable.
    pub features: &'a [&'a str],
    /// A subdirectory of `target/` for this artifact alone.
    pub target_subdir: &'a str,
    pub target: Target,
}

/// The gate of world `gate-memory` (host-example, the Node and Python hosts).
pub const GATE_MEMORY: Wasm<'static> = Wasm {
    package: "resume-gate",
    features: &["component"],
    target_subdir: "component",
    target: Target::Bare,
};

/// The gate of world `gate-kv` (the Spin app, edge-host).
pub const GATE_KV: Wasm<'static> = Wasm {
    package: "resume-gate",
    features: &["component-kv"],
    target_subdir: "component-kv",
    target: Target::Bare,
};

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
    /// Builds the component under the workspace's target directory (`CARGO_TARGET_DIR`, else
    /// `<root>/target`) and returns the path of its `.wasm`.
    pub fn build(&self, root: &Path) -> PathBuf {
        let target_root =
            std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
        self.build_in(root, &target_root)
    }

    /// Builds the component under `target_root/<target_subdir>` and returns the path of its
    /// `.wasm`.
    pub fn build_in(&self, root: &Path, target_root: &Path) -> PathBuf {
        let triple = self.target.triple();
        ensure_target(root, triple);
        let target_dir = target_root.join(self.target_subdir);
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(root)
            .args(["rustc", "--locked", "-p", self.package, "--lib", "--crate-type", "cdylib"])
            .args(["--target", triple, "--profile", "component"])
            .arg("--target-dir")
            .arg(&target_dir);
        if !self.features.is_empty() {
            cmd.arg("--features").arg(self.features.join(","));
        }
        if self.target == Target::Bare {
            // The linker's default stack is 1 MiB, all of it in the initial memory that every
            // instance maps and resets.
            cmd.args(["--", "-C", &format!("link-arg=-zstack-size={BARE_STACK_BYTES}")]);
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
        assert!(status.success(), "building {} for {triple} failed (see the output above)", self.package);
        let file = format!("{}.wasm", self.package.replace('-', "_"));
        let wasm = target_dir.join(triple).join("component").join(&file);
        assert!(wasm.exists(), "the build of {} did not produce {}", self.package, wasm.display());
        match self.target {
            Target::Wasip2 => wasm,
            Target::Bare => {
                let component = target_dir.join(file);
                componentize(&wasm, &component);
                component
            }
        }
    }
}

/// Wraps a core module that carries wit-bindgen's world in a component of that world.
fn componentize(module: &Path, component: &Path) {
    let bytes = std::fs::read(module).unwrap_or_else(|e| panic!("read {}: {e}", module.display()));
    let encoded = wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&bytes)
        .and_then(|encoder| encoder.encode())
        .unwrap_or_else(|e| panic!("making {} a component: {e:#}", module.display()));
    std::fs::write(component, encoded).unwrap_or_else(|e| panic!("write {}: {e}", component.display()));
}

fn ensure_target(root: &Path, triple: &str) {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot =
        Command::new(rustc).args(["--print", "sysroot"]).output().expect("run rustc --print sysroot");
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if sysroot.join("lib/rustlib").join(triple).exists() {
        return;
    }
    // Run from the workspace root so that rustup picks the toolchain rust-toolchain.toml pins.
    println!("cargo:warning=installing the {triple} target with rustup");
    let status = Command::new("rustup")
        .current_dir(root)
        .args(["target", "add", triple])
        .status()
        .unwrap_or_else(|e| panic!("the {triple} target is missing and rustup could not run: {e}"));
    assert!(status.success(), "`rustup target add {triple}` failed");
}
