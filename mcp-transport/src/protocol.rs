//! Protocol revisions: which ones we speak, and what each changes for the transport.

/// Newest first.
pub const SUPPORTED: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
pub const LATEST: &str = SUPPORTED[0];
/// What a request without `MCP-Protocol-Version` is assumed to speak (spec: 2025-03-26).
pub const ASSUMED: &str = "2025-03-26";

/// Our spelling of `version`, if we speak it.
pub fn supported(version: &str) -> Option<&'static str> {
    SUPPORTED.iter().copied().find(|v| *v == version)
}

/// The version `initialize` answers with: the client's if we speak it, else our latest.
pub fn negotiate(requested: Option<&str>) -> &'static str {
    requested.and_then(supported).unwrap_or(LATEST)
}

/// Priming events (an id and empty data first) go only to 2025-11-25 and later.
pub fn sends_priming(version: &str) -> bool {
    version >= "2025-11-25"
}

/// The stateless revision: no sessions, no resumption, no GET stream.
pub const STATELESS: &str = "2026-07-28";

/// The one revision with JSON-RPC batches (removed in 2025-06-18); also what a request
/// without `MCP-Protocol-Version` speaks.
pub const BATCHES: &str = "2025-03-26";
