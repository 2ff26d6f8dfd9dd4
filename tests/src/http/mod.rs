//! The servers under test on a loopback port ([`servers`]) and a raw HTTP client that can cut
//! a connection at any byte ([`client`]).

pub mod client;
pub mod servers;

pub use client::*;
pub use servers::*;
