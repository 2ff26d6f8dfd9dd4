//! Builds the two components of the Spin app — the gate (world `gate-kv`) and the front —
//! and hands their paths to the crate as `RESUME_GATE_KV_WASM` and `SPIN_FRONT_WASM`.

use wasm_build::{Wasm, rerun_if_changed, workspace_root};

fn main() {
    let root = workspace_root();
    rerun_if_changed(&root, &["component", "wit", "mcp-transport", "spin-front"]);
    let gate = Wasm { package: "resume-gate", features: &["component-kv"], target_subdir: "component-kv" };
    println!("cargo:rustc-env=RESUME_GATE_KV_WASM={}", gate.build(&root).display());
    let front = Wasm { package: "spin-front", features: &[], target_subdir: "spin-front" };
    println!("cargo:rustc-env=SPIN_FRONT_WASM={}", front.build(&root).display());
}
