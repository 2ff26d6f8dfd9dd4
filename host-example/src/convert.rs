//! Conversions between the component's WIT types (as wasmtime's `bindgen!` generates them)
//! and the core's types, which the transport and the tests speak.

use crate::types as wit;

resume_gate::wit_conversions!();
