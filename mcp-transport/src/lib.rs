//! MCP Streamable HTTP (revisions 2025-03-26, 2025-06-18, 2025-11-25 and the stateless
//! 2026-07-28, on one endpoint), sans-IO.
//!
//! A host turns each HTTP request into an [`http::HttpRequest`], calls
//! [`server::Server::handle`] with its gate, and writes the [`reply::Reply`]; an SSE reply is
//! served by an [`exchange::Exchange`]. Nothing here
//! opens a socket, reads a clock or spawns a task, so the same crate serves the wasmtime host
//! (native) and a Spin front (`wasm32-wasip2`). The gate decides every resumption and mints
//! every event id; this crate only says which gate call an HTTP request means.
//!
//! # Layout
//!
//! - [`server`]: request → reply, in the spec's order of checks (method, headers, session);
//!   a 2026-07-28 request is served without a session and without the gate.
//! - [`calls`]: the requests a stream answers (a tool call, a batch's other requests).
//! - [`exchange`]: serving one SSE response, sans-IO: call order, following a stream,
//!   heartbeats, take-over, detaching — what every host would otherwise write again.
//! - [`errors`]: the one table from a gate error to an HTTP status and JSON-RPC code.
//! - [`gate`]: the `GateApi` trait a host implements over the component.
//! - `test_util` (feature `test-util`): `InProcess`, the core gate behind `GateApi` for the
//!   tests and the fuzzer.
//! - [`hosts`]: the names a server answers to (DNS-rebinding protection).
//! - [`jsonrpc`]: parsing and building JSON-RPC 2.0 messages.
//! - [`protocol`]: protocol revisions and what each one changes.
//! - [`sse`]: SSE frame encoding.
//! - [`tasks`]: 2026-07-28 calls run as tasks (the `io.modelcontextprotocol/tasks`
//!   extension): the record, its lease, and the answers to `tasks/*`, over a host's store.
//! - [`tools`]: the sample tools, run against a host's `ToolHost`; [`journal`]: the
//!   `append` tool's journal in a shared store.
//! - [`http`], [`reply`]: an HTTP request as the transport reads it, and its answer.

pub mod calls;
pub mod errors;
pub mod exchange;
pub mod gate;
pub mod hosts;
pub mod http;
pub mod journal;
pub mod jsonrpc;
pub mod protocol;
pub mod reply;
pub mod server;
pub mod sse;
pub mod tasks;
#[cfg(any(test, feature = "test-util"))]
pub mod test_util;
pub mod tools;

#[cfg(test)]
mod tests;
