//! The Node and Python packages' example servers — the official SDKs' own servers with the
//! gate's adapter — as child processes.
//!
//! Each package is prepared once per test process, as its `example` script does on a first
//! run (packages from the committed lockfile, the component transpiled or loaded), but from
//! the very `.wasm` files host-example and the key-value hosts embed: one build of the gate
//! for every host.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::processes::ServerProcess;

/// `hosts/node`: the npm package `resume-gate` and its example server.
pub fn node_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../hosts/node")
}

/// Installs the Node package's dependencies and transpiles the gate (once per process).
pub fn prepare_node() {
    static PREPARED: OnceLock<()> = OnceLock::new();
    PREPARED.get_or_init(|| {
        prepare(
            &node_dir(),
            &[
                ("RESUME_GATE_WASM", gate_host::GATE_MEMORY_WASM),
                ("RESUME_GATE_KV_WASM", gate_host::GATE_KV_WASM),
            ],
        )
    });
}

/// `<dir>/example prepare`: what the script does on a first run, short of serving.
fn prepare(dir: &Path, components: &[(&str, &str)]) {
    let script = dir.join("example");
    let ok = Command::new(&script)
        .arg("prepare")
        .envs(components.iter().copied())
        .status()
        .unwrap_or_else(|e| panic!("run {} prepare: {e}", script.display()));
    assert!(ok.success(), "{} prepare failed", script.display());
}

/// Which event store an example server runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// The gate, through the package's adapter.
    Gate,
    /// The SDK's example store, without the gate: for the side-by-side comparison.
    Sdk,
}

impl Store {
    fn arg(self) -> &'static str {
        match self {
            Store::Gate => "gate",
            Store::Sdk => "sdk",
        }
    }
}

/// The Node example server (`hosts/node/example.mjs`) with its journal at `journal`.
pub fn node_example(journal: &Path, store: Store) -> ServerProcess {
    node_example_with(journal, store, &[])
}

/// [`node_example`] with more of its arguments (`--retention-ms`).
pub fn node_example_with(journal: &Path, store: Store, args: &[&str]) -> ServerProcess {
    prepare_node();
    let mut cmd = Command::new("node");
    cmd.arg(node_dir().join("example.mjs"))
        .arg("--journal")
        .arg(journal)
        .args(["--store", store.arg()])
        .args(args);
    ServerProcess::serve(cmd)
}

/// The Node example server on the TypeScript SDK 2.x (`hosts/node/example-v2.mjs`: the gate's
/// sessions for the 2025 era beside the SDK's `createMcpHandler` for 2026-07-28), with its
/// journal at `journal`; always with the gate.
pub fn node_v2_example(journal: &Path, store: Store) -> ServerProcess {
    assert_eq!(store, Store::Gate, "the 2.x example always runs the gate");
    prepare_node();
    let mut cmd = Command::new("node");
    cmd.arg(node_dir().join("example-v2.mjs")).arg("--journal").arg(journal);
    ServerProcess::serve(cmd)
}

/// `hosts/python`: the package `resume_gate` and its example server.
pub fn python_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../hosts/python")
}

/// Makes the Python package's virtualenv from its lock (once per process).
pub fn prepare_python() {
    static PREPARED: OnceLock<()> = OnceLock::new();
    PREPARED.get_or_init(|| prepare(&python_dir(), &[("RESUME_GATE_WASM", gate_host::GATE_MEMORY_WASM)]));
}

/// The Python example server (`resume_gate.example`) with its journal at `journal`.
pub fn python_example(journal: &Path, store: Store) -> ServerProcess {
    python_example_with(journal, store, &[])
}

/// [`python_example`] with more of its arguments (`--retention-ms`).
pub fn python_example_with(journal: &Path, store: Store, args: &[&str]) -> ServerProcess {
    prepare_python();
    let dir = python_dir();
    let mut cmd = Command::new(dir.join(".venv/bin/python"));
    cmd.args(["-m", "resume_gate.example"])
        .arg("--journal")
        .arg(journal)
        .args(["--store", store.arg()])
        .args(args)
        .env("PYTHONPATH", &dir)
        .env("RESUME_GATE_WASM", gate_host::GATE_MEMORY_WASM);
    ServerProcess::serve(cmd)
}
