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
//!   the verdict it returns; [`reason`]: why a reconnect starts fresh.
//! - [`gate`]: the `Gate` and the operations a host calls (`open_session`, `open_stream`,
//!   `join_stream`, `emit`, `terminal`, `detach`, `abort`, `renew_lease`, `check_stream`,
//!   `poll`, `reconnect`, …); [`outcome`]: what they return.
//! - `room`: what is freed when a bound is reached, planned by pure functions.
//! - [`stream`], [`session`]: the stream model and the session it belongs to.
//! - [`event_id`]: minting, signing and the total parser of event ids.
//! - [`store`]: the `Store` trait, what records cost, and the in-memory store.
//! - [`kv`]: the store over a shared key-value store (`wasi:keyvalue`), for per-request hosts.
//! - [`config`], [`counters`], [`error`]: bounds, metrics, typed errors.
//! - `component` (features `component`, `component-kv`): the wit-bindgen glue.
//! - [`wit_conversions!`]: WIT types ↔ core types, for hosts and fronts that bind the WIT.
//!
//! Dependencies point one way: `gate` uses `decision`, `room` and the stores; `decision` and
//! `room` use the model (`stream`, `session`) and never the gate.

pub mod config;
pub mod counters;
pub mod decision;
pub mod error;
pub mod event_id;
pub mod gate;
pub mod kv;
pub mod outcome;
pub mod reason;
mod room;
pub mod session;
pub mod store;
pub mod stream;
mod wit_convert;

#[cfg(feature = "component")]
mod component;

pub use config::{Config, Hold, Millis};
pub use counters::Counters;
pub use error::{GateError, StoreError};
pub use gate::Gate;
pub use outcome::{
    Decision, Event, FreshStart, Opened, Polled, Recorded, Resumption, SessionInfo, StreamStatus,
};
pub use reason::StaleReason;
pub use session::{MAX_SESSION_ID_LEN, validate_session_id};
pub use store::{MemoryStats, MemoryStore, Store, Swept};
pub use stream::{
    EventRef, MAX_BATCH_REQUESTS, MAX_REQUEST_ID_LEN, Origin, RequestId, Seq, StreamNo, StreamState,
};
