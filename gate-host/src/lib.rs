//! The gate component in wasmtime, as every native host embeds it: an instance of either of
//! its worlds, supervised so that a trap costs one request and not the process, the
//! `wasi:keyvalue@0.2.0-draft2` host the `gate-kv` world imports (a map in process, or Redis),
//! and the thread that collects what stopped instances leave behind in a shared store.
//!
//! Shared by host-example (one supervised instance behind its MCP server, either world),
//! edge-host (the Spin app's host, which links the key-value host into the composed app) and
//! the tests.
//!
//! # Layout
//!
//! - [`memory`]: world `gate-memory`, the whole embedding in one screen;
//! - [`kv_world`]: world `gate-kv`, over the key-value host;
//! - [`supervised`]: an instance of either world behind the transport's `GateApi`, recreated
//!   (and configured again) after a trap;
//! - [`keyvalue`]: the `wasi:keyvalue` draft2 host;
//! - [`collector`]: garbage collection off the request path;
//! - [`net`]: how an accepted socket is set up (`TCP_NODELAY`);
//! - [`store_args`]: `--store` and its options, parsed once for every host.

pub mod collector;
pub mod keyvalue;
pub mod kv_world;
pub mod memory;
pub mod net;
pub mod store_args;
pub mod supervised;

/// The gate, world `gate-memory`, built by this crate's build script.
pub const GATE_MEMORY_WASM: &str = env!("RESUME_GATE_WASM");
/// The gate, world `gate-kv`, built by this crate's build script.
pub const GATE_KV_WASM: &str = env!("RESUME_GATE_KV_WASM");
