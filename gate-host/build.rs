//! Builds the gate component of both worlds and hands their paths to the crate as
//! `RESUME_GATE_WASM` (`gate-memory`) and `RESUME_GATE_KV_WASM` (`gate-kv`).
//! `RESUME_GATE_WASM_OVERRIDE` and `RESUME_GATE_KV_WASM_OVERRIDE` point at prebuilt ones instead
//! (the fuzzer's nightly build uses the ones the stable toolchain built).

use wasm_build::{GATE_KV, GATE_MEMORY, rerun_if_changed, workspace_root};

fn main() {
    let root = workspace_root();
    rerun_if_changed(&root, &["resume-gate/src", "resume-gate/Cargo.toml", "wit"]);
    for (wasm, var) in [(GATE_MEMORY, "RESUME_GATE_WASM"), (GATE_KV, "RESUME_GATE_KV_WASM")] {
        println!("cargo:rerun-if-env-changed={var}_OVERRIDE");
        let path = match std::env::var_os(format!("{var}_OVERRIDE")) {
            Some(path) => std::path::PathBuf::from(path),
            None => wasm.build(&root),
        };
        println!("cargo:rustc-env={var}={}", path.display());
    }
}
