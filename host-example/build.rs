//! Builds the gate component (world `gate-memory`) and hands its path to the crate as
//! `RESUME_GATE_WASM` (see the `wasm-build` crate). `RESUME_GATE_WASM_OVERRIDE` points at a
//! prebuilt one instead.

use wasm_build::{GATE_MEMORY, rerun_if_changed, workspace_root};

fn main() {
    let root = workspace_root();
    rerun_if_changed(&root, &["component/src", "component/Cargo.toml", "wit"]);
    println!("cargo:rerun-if-env-changed=RESUME_GATE_WASM_OVERRIDE");
    if let Some(path) = std::env::var_os("RESUME_GATE_WASM_OVERRIDE") {
        println!("cargo:rustc-env=RESUME_GATE_WASM={}", std::path::PathBuf::from(path).display());
        return;
    }
    println!("cargo:rustc-env=RESUME_GATE_WASM={}", GATE_MEMORY.build(&root).display());
}
