//! resume-gate decides, for every MCP Streamable HTTP reconnect, whether its `Last-Event-ID`
//! is a valid continuation point of a live stream of this session and epoch (then it replays
//! exactly the missed events) or stale (then a fresh stream starts and nothing is replayed).
//! It also owns the bounded event buffer and mints the event ids.
//!
//! The core is fully deterministic: it reads no clock, draws no randomness and does no I/O.
//! Every operation takes `now` from the caller, and opening a session takes the entropy for its
//! epoch. With the `component` feature the same crate also builds the component that exports the WIT interface
//! `mcp:resume-gate/gate` (see `wit/gate.wit`); the glue reads time and randomness from WASI.
//!
//! # Layout
//!
//! - [`decision`]: the decision table of DESIGN.md, checks 1–11 in one function, in order, and
//!   what a reconnect returns.
//! - [`gate`]: the operations a host calls (`open_session`, `open_stream`, `emit`,
//!   `terminal`, `detach`, `abort`, `renew_lease`, `poll`, `reconnect`) and the bounds they
//!   keep; `room`: what it frees when a bound is reached.
//! - [`stream`], [`session`]: the stream model and the session it belongs to.
//! - [`event_id`]: minting, signing and the total parser of event ids.
//! - [`store`]: the `Store` trait and the in-memory store.
//! - [`kv`]: the store over a shared key-value store (`wasi:keyvalue`), for per-request hosts.
//! - [`config`], [`counters`], [`error`]: bounds, metrics, typed errors.
//! - `component` (features `component`, `component-kv`): the wit-bindgen glue.
//! - [`wit_conversions!`]: WIT types ↔ core types, for hosts and fronts that bind the WIT.

pub mod config;
pub mod counters;
pub mod decision;
pub mod error;
pub mod event_id;
pub mod gate;
pub mod kv;
mod room;
pub mod session;
pub mod store;
pub mod stream;
mod wit_convert;

#[cfg(feature = "component")]
mod component;

pub use config::{Config, Millis};
pub use counters::Counters;
pub use decision::{Decision, FreshStart, Resumption, StaleReason};
pub use error::{GateError, StoreError};
pub use gate::{Event, Gate, Opened, Polled, Recorded, SessionInfo, StreamStatus};
pub use session::{MAX_SESSION_ID_LEN, validate_session_id};
pub use store::{MemoryStats, MemoryStore, Store, Swept};
pub use stream::{
    EventRef, Hold, MAX_BATCH_REQUESTS, MAX_REQUEST_ID_LEN, Origin, RequestId, Seq, StreamNo, StreamState,
};
