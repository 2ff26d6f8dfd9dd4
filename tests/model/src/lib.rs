//! What the property tests, the differential test and the fuzzer share, without wasmtime:
//! random operation sequences and their runner ([`ops`]), the reference model of what a
//! client was sent ([`model`]), what a store holds ([`held`]), and the native driver
//! ([`driver`]).

pub mod driver;
pub mod held;
pub mod model;
pub mod ops;
