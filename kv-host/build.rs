//! Builds the gate component of world `gate-kv` and hands its path to the crate as
//! `RESUME_GATE_KV_WASM`. `RESUME_GATE_KV_WASM_OVERRIDE` points at a prebuilt one instead (the
//! fuzzer's nightly build uses the one the stable toolchain built).

use wasm_build::{Wasm, rerun_if_changed, workspace_root};

fn main() {
    let root = workspace_root();
    rerun_if_changed(&root, &["component", "wit"]);
    println!("cargo:rerun-if-env-changed=RESUME_GATE_KV_WASM_OVERRIDE");
    if let Some(path) = std::env::var_os("RESUME_GATE_KV_WASM_OVERRIDE") {
        println!("cargo:rustc-env=RESUME_GATE_KV_WASM={}", std::path::PathBuf::from(path).display());
        return;
    }
    let gate = Wasm { package: "resume-gate", features: &["component-kv"], target_subdir: "component-kv" };
    println!("cargo:rustc-env=RESUME_GATE_KV_WASM={}", gate.build(&root).display());
}
