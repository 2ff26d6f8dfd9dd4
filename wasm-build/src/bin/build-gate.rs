//! Builds the gate component for hosts outside cargo (the Node and Python packages) and prints
//! the path of its `.wasm`: the very file host-example embeds, so every host loads one build.
//!
//!   cargo run -q --locked -p wasm-build --bin build-gate            # world gate-memory
//!   cargo run -q --locked -p wasm-build --bin build-gate -- kv      # world gate-kv

use std::path::Path;

use wasm_build::{GATE_KV, GATE_MEMORY};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("wasm-build lives in the workspace");
    let wasm = match std::env::args().nth(1).as_deref() {
        None | Some("memory") => GATE_MEMORY,
        Some("kv") => GATE_KV,
        Some(other) => {
            eprintln!("build-gate: unknown world {other:?} (memory or kv)");
            std::process::exit(2);
        }
    };
    println!("{}", wasm.build(root).display());
}
