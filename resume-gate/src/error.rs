//! Typed errors: the hot path returns a small enum, never a panic.
//!
//! `GateError` is mirrored one to one by the WIT `gate-error` variant, so a host sees exactly
//! what the core decided. Each variant names the HTTP answer a host is expected to give.

use core::fmt;

/// Why a gate operation was refused. What the operation itself would have done did not
/// happen; room made for it first (answered buffers freed, an idle session reclaimed) stays
/// made, and `on-reconnect` documents its one exception.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateError {
    /// The configuration is unusable (host start-up error).
    InvalidConfig(String),
    /// The session id is empty, longer than 128 bytes, or not visible ASCII (HTTP 400).
    InvalidSessionId,
    /// The session is not open in the gate: never opened, ended or reclaimed (HTTP 404).
    UnknownSession,
    /// The stream number does not name a stream of this session (a host bug).
    UnknownStream,
    /// The stream already sent its terminal event, or was aborted or superseded: it takes no
    /// more events.
    StreamFinished,
    /// `on-terminal` on a standalone stream: only request streams end with a response.
    NotARequestStream,
    /// A JSON-RPC request id may open only one stream per session (JSON-RPC error -32600).
    DuplicateRequestId,
    /// A text request id longer than 256 bytes (JSON-RPC error -32600).
    InvalidRequestId,
    /// A stream answers at most 256 requests of one batch (JSON-RPC error -32600).
    BatchTooLarge,
    /// `max-sessions` reached and every session holds work (HTTP 503).
    TooManySessions,
    /// `max-total-bytes` reached and nothing could be freed (HTTP 503).
    OverBudget,
    /// `max-streams-per-session` reached and every stream is still live (HTTP 503).
    TooManyStreams,
    /// The state store failed; nothing was decided (HTTP 503).
    Store(String),
}

impl fmt::Display for GateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidConfig(why) => write!(f, "invalid gate configuration: {why}"),
            Self::InvalidSessionId => f.write_str("invalid session id"),
            Self::UnknownSession => f.write_str("unknown session"),
            Self::UnknownStream => f.write_str("unknown stream"),
            Self::StreamFinished => f.write_str("stream already finished"),
            Self::NotARequestStream => f.write_str("a standalone stream has no terminal event"),
            Self::DuplicateRequestId => f.write_str("request id already used in this session"),
            Self::InvalidRequestId => f.write_str("request id longer than 256 bytes"),
            Self::BatchTooLarge => f.write_str("too many requests in one batch"),
            Self::TooManySessions => f.write_str("too many sessions"),
            Self::OverBudget => f.write_str("the gate's memory budget is spent"),
            Self::TooManyStreams => f.write_str("too many streams in this session"),
            Self::Store(why) => write!(f, "state store failure: {why}"),
        }
    }
}

impl std::error::Error for GateError {}

/// A failure of the backing store (I/O, a lost compare-and-swap race that kept losing, …).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError(pub String);

impl From<StoreError> for GateError {
    fn from(e: StoreError) -> Self {
        GateError::Store(e.0)
    }
}
