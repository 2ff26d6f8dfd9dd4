//! The Spin app without Spin: the front composed with the gate (world `gate-kv`), served from
//! wasmtime's `wasi:http` with a fresh instance per request — what Spin does — and a
//! `wasi:keyvalue` draft2 store shared by all of them.
//!
//! # Layout
//!
//! - [`compose`]: plugs the gate's exports into the front's imports (`wac-graph`).
//! - [`keyvalue`]: the draft2 key-value host over one shared store (re-exported from
//!   `gate-host`, which host-example `--store` uses too).
//! - [`serve`]: the HTTP server: hyper in front, one wasmtime instance per request.
//! - [`variables`]: Spin's application variables (`allowed_hosts`), as the front reads them.
//! - [`kv_world`]: the gate-kv component on its own, with the same key-value host (for tests
//!   that drive many gate instances against one store; from `gate-host`).

pub mod compose;
pub mod serve;
pub mod variables;

pub use gate_host::{GATE_KV_WASM, keyvalue, kv_world};
/// The Spin front, built by this crate's build script.
pub const FRONT_WASM: &str = env!("SPIN_FRONT_WASM");
