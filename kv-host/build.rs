//! Builds the gate component of world `gate-kv` and hands its path to the crate as
//! `RESUME_GATE_KV_WASM`.

use wasm_build::{Wasm, rerun_if_changed, workspace_root};

fn main() {
    let root = workspace_root();
    rerun_if_changed(&root, &["component", "wit"]);
    let gate = Wasm { package: "resume-gate", features: &["component-kv"], target_subdir: "component-kv" };
    println!("cargo:rustc-env=RESUME_GATE_KV_WASM={}", gate.build(&root).display());
}
