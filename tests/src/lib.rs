//! The test harness shared by the end-to-end tests: random operation sequences, and one
//! driver per side (the native core, the component in wasmtime) so that the same sequence
//! can run on both and their outcomes be compared.
//!
//! # Layout
//!
//! - [`ops`]: operations, their proptest strategy, and [`ops::Run`], which resolves each
//!   operation against what a side has minted so far and records what came back.
//! - [`drivers`]: the `Driver` trait, the native core and the wasmtime component behind it.
//! - [`held`]: what a store holds, for the bound checks (memory and key-value stores).
//! - [`http`]: host-example served on a loopback port, and a raw HTTP/SSE client that can cut
//!   a connection at any byte.

pub mod drivers;
pub mod held;
pub mod http;
pub mod ops;
