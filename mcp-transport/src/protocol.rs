//! Protocol revisions: which ones we speak, and what each changes for the transport.
//!
//! Two eras share the endpoint. The *session* era (2025-03-26 to 2025-11-25) opens with
//! `initialize`, keeps an `Mcp-Session-Id` and resumes streams by `Last-Event-ID`: the gate's
//! era. The *stateless* era (2026-07-28) carries its version on every request, keeps no
//! session and resumes nothing: a closed response stream cancels its call.

/// The session era's revisions, newest first.
pub const SUPPORTED: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
pub const LATEST: &str = SUPPORTED[0];
/// Every revision this server speaks, newest first: what `server/discover` and an
/// unsupported-version error list.
pub const ALL: [&str; 4] = [STATELESS, SUPPORTED[0], SUPPORTED[1], SUPPORTED[2]];
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

/// The era a request speaks, by its `MCP-Protocol-Version`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// A session-era revision (our spelling of it).
    Sessions(&'static str),
    Stateless,
}

/// The era `version` belongs to; `None` for a revision we do not speak.
pub fn era(version: &str) -> Option<Era> {
    if version == STATELESS { Some(Era::Stateless) } else { supported(version).map(Era::Sessions) }
}

/// The one revision with JSON-RPC batches (removed in 2025-06-18); also what a request
/// without `MCP-Protocol-Version` speaks.
pub const BATCHES: &str = "2025-03-26";
