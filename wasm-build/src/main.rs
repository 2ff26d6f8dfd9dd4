//! Builds one of the gate's components outside a build script and prints the path of the
//! `.wasm` it wrote: for tools that run a build command of their own (`spin build`) and for the
//! Node and Python packages, which load the very file the Rust hosts embed.
//!
//!   cargo run -q --locked -p wasm-build -- gate-memory                   # host-example's gate
//!   cargo run -q --locked -p wasm-build -- gate-kv --target-dir target   # spin.toml's
//!
//! `--target-dir DIR` writes under `DIR/<world's subdirectory>/` whatever `CARGO_TARGET_DIR`
//! says, so a manifest that names `target/component-kv/…` holds in every shell.

use std::path::{Path, PathBuf};

const USAGE: &str = "usage: cargo run -p wasm-build -- gate-memory|gate-kv [--target-dir DIR]";

fn main() {
    let mut world = None;
    let mut target_dir = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "gate-memory" | "gate-kv" if world.is_none() => world = Some(arg),
            "--target-dir" => match args.next() {
                Some(dir) => target_dir = Some(PathBuf::from(dir)),
                None => fail("--target-dir needs a directory"),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            other => fail(&format!("unexpected argument {other:?}")),
        }
    }
    let wasm = match world.as_deref() {
        Some("gate-memory") => wasm_build::GATE_MEMORY,
        Some("gate-kv") => wasm_build::GATE_KV,
        _ => fail("which world?"),
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("wasm-build lives in the workspace");
    let built = match target_dir {
        Some(dir) => {
            let dir = std::env::current_dir().expect("the working directory").join(dir);
            wasm.build_in(root, &dir)
        }
        None => wasm.build(root),
    };
    println!("{}", built.display());
}

fn fail(why: &str) -> ! {
    eprintln!("wasm-build: {why}\n{USAGE}");
    std::process::exit(2);
}
