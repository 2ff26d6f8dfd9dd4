//! Builds the gate component so that nobody types a separate wasm build step.
//!
//! Runs `cargo rustc -p resume-gate --lib --crate-type cdylib --features component --target
//! wasm32-wasip2 --profile component` in its own target directory (installing the
//! `wasm32-wasip2` target with rustup first if this toolchain lacks it: `RUSTUP_AUTO_INSTALL=0`
//! means `rust-toolchain.toml` alone will not) and hands the `.wasm` path to the crate as
//! `RESUME_GATE_WASM`.

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().expect("host-example lives in the workspace").to_path_buf();
    for watched in ["component/src", "component/Cargo.toml", "wit", "Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=RESUME_GATE_WASM_OVERRIDE");
    if let Some(path) = std::env::var_os("RESUME_GATE_WASM_OVERRIDE") {
        println!("cargo:rustc-env=RESUME_GATE_WASM={}", PathBuf::from(path).display());
        return;
    }

    ensure_target(&root);
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("component");
    build_component(&root, &target_dir);
    let wasm = target_dir.join(TARGET).join("component").join("resume_gate.wasm");
    assert!(wasm.exists(), "the component build did not produce {}", wasm.display());
    println!("cargo:rustc-env=RESUME_GATE_WASM={}", wasm.display());
}

fn rustc() -> String {
    std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into())
}

fn ensure_target(root: &Path) {
    let sysroot =
        Command::new(rustc()).args(["--print", "sysroot"]).output().expect("run rustc --print sysroot");
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

fn build_component(root: &Path, target_dir: &Path) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args([
            "rustc",
            "--locked",
            "-p",
            "resume-gate",
            "--lib",
            "--crate-type",
            "cdylib",
            "--features",
            "component",
        ])
        .args(["--target", TARGET, "--profile", "component"])
        .arg("--target-dir")
        .arg(target_dir);
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
    let status = cmd.status().expect("run cargo to build the gate component");
    assert!(status.success(), "building the gate component failed (see the output above)");
}
