//! A real MCP Streamable HTTP server whose every event id, replay and stale-cursor decision
//! comes from the resume-gate component in wasmtime.
//!
//! The component is embedded by `gate-host` (`memory` for the state in the instance,
//! `kv_world` over a shared store with `--store`), supervised so that a trap costs one request;
//! what one HTTP exchange means is the shared `mcp-transport` (the transport's `Server`, then an
//! `Exchange` per SSE response). This crate is the shell: sockets, timers, the runtime, the
//! journal file.
//!
//! # Layout
//!
//! - [`app`]: the server's state: the gate instances, the transport, the journal, the streams
//!   whose calls run here;
//! - [`instances`]: one gate instance, or a pool over a shared store, and who waits: no
//!   call waits for another session's store round trip;
//! - [`http`]: the axum handler, the router, serving a listener;
//! - [`serving`]: tokio tasks and timers for an SSE response's `Exchange`;
//! - [`connection`]: one SSE response body;
//! - [`journal`]: the `append` tool's journal, in a file or the shared store;
//! - [`tasks`]: 2026-07-28 calls run as tasks: their records (memory, or the shared store)
//!   and the runner;
//! - [`metrics`]: `/metrics` (`--metrics`);
//! - `main.rs`: the command line (`serve`, `demo`).

pub mod app;
pub mod connection;
pub mod http;
pub mod idle;
pub mod instances;
pub mod journal;
pub mod metrics;
pub mod serving;
pub mod tasks;

pub use app::{App, Settings};
pub use instances::Instances;
pub use journal::Journal;
