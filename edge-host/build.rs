//! Builds the Spin app's front and hands its path to the crate as `SPIN_FRONT_WASM` (the
//! gate, world `gate-kv`, comes from `gate-host`).

use wasm_build::{Target, Wasm, rerun_if_changed, workspace_root};

fn main() {
    let root = workspace_root();
    rerun_if_changed(&root, &["wit", "mcp-transport", "spin-front"]);
    let front =
        Wasm { package: "spin-front", features: &[], target_subdir: "spin-front", target: Target::Wasip2 };
    println!("cargo:rustc-env=SPIN_FRONT_WASM={}", front.build(&root).display());
}
