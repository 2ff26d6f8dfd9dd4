//! Builds the gate component of world `gate-kv` and hands its path to the crate as
//! `RESUME_GATE_KV_WASM`. `RESUME_GATE_KV_WASM_OVERRIDE` points at a prebuilt one instead (the
//! fuzzer's nightly build uses the one the stable toolchain built).

use wasm_build::{GATE_KV, rerun_if_changed, workspace_root};

fn main() {
    let root = workspace_root();
    rerun_if_changed(&root, &["component", "wit"]);
    println!("cargo:rerun-if-env-changed=RESUME_GATE_KV_WASM_OVERRIDE");
    if let Some(path) = std::env::var_os("RESUME_GATE_KV_WASM_OVERRIDE") {
        println!("cargo:rustc-env=RESUME_GATE_KV_WASM={}", std::path::PathBuf::from(path).display());
        return;
    }
    println!("cargo:rustc-env=RESUME_GATE_KV_WASM={}", GATE_KV.build(&root).display());
}
