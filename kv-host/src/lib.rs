//! The gate with its state in a key-value store, as wasmtime hosts embed it: the
//! `wasi:keyvalue@0.2.0-draft2` host the gate-kv world imports, over a map in process or over
//! Redis ([`keyvalue`]), the gate-kv component instantiated over it ([`gate_kv`]), and the
//! thread that collects what stopped instances leave behind ([`collector`]).
//!
//! Shared by edge-host (the Spin app's host, which links the key-value host into the composed
//! app), host-example `--store` (one gate-kv instance behind its MCP server) and the tests.

pub mod collector;
pub mod gate_kv;
pub mod keyvalue;

/// The gate, world `gate-kv`, built by this crate's build script.
pub const GATE_KV_WASM: &str = env!("RESUME_GATE_KV_WASM");
