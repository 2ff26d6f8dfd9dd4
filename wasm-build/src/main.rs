//! Builds one of the gate's components outside a build script, for tools that run a build
//! command of their own (`spin build`): `cargo run -p wasm-build -- gate-kv` (or
//! `gate-memory`) prints the path of the `.wasm` it wrote.

use std::path::Path;

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let wasm = match which.as_str() {
        "gate-memory" => wasm_build::GATE_MEMORY,
        "gate-kv" => wasm_build::GATE_KV,
        _ => {
            eprintln!("usage: cargo run -p wasm-build -- gate-memory|gate-kv");
            std::process::exit(2);
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("wasm-build lives in the workspace");
    println!("{}", wasm.build(root).display());
}
