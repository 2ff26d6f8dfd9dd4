//! The gate's bounds, in one place.
//!
//! Every buffer the gate owns is bounded by a field here; the defaults are sized for one
//! long-lived server process. `validate` refuses settings that would make a bound meaningless
//! (a zero bound, a retention of zero) so that a host finds its mistake at start-up, not when
//! the first reconnect is refused.

use crate::error::GateError;

/// Milliseconds on the host's wall clock; the gate never reads a clock itself.
pub type Millis = u64;

/// How long streams keep their session from being reclaimed (see `StreamMeta::holds_until`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hold {
    /// `retention-ms`: how long an answer nobody was attached to receive stays owed.
    pub retention: Millis,
    /// `max-detached-ms`: how long a stream without a connection stays owed.
    pub max_detached: Millis,
}

/// Bounds and knobs of a gate. See `wit/gate.wit` for the host-facing description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Events kept for replay per stream; older ones are evicted first.
    pub max_events_per_stream: u32,
    /// Bytes (event id + data) kept for replay per stream; older events are evicted first.
    pub max_bytes_per_stream: u64,
    /// Stream records per session, including the tombstones of finished streams.
    pub max_streams_per_session: u32,
    /// Bytes one session may hold (its records, claims and buffered events), where the store
    /// counts them: no client takes more than this share of `max_total_bytes`.
    pub max_bytes_per_session: u64,
    /// Sessions the gate tracks at once; when full, the session idle longest that holds no
    /// work is reclaimed (see `Store::idlest_session`).
    pub max_sessions: u32,
    /// Bytes the gate keeps in all (event data, ids, records, claims), where the store counts
    /// them (the memory store does).
    pub max_total_bytes: u64,
    /// How long a stream without a live connection stays resumable after its last activity.
    pub retention_ms: Millis,
    /// How long a request's writer holds its stream without an emit or heartbeat; past it a
    /// reconnect replays what was stored and answers the request with the stranded error.
    pub lease_ms: Millis,
    /// How long a stream may go without a connection before it stops keeping its session and,
    /// for a call, before the call is given up (the stream aborted, the request stranded);
    /// `None`: `lease_ms`.
    pub max_detached_ms: Option<Millis>,
    /// The SSE `retry` hint put on priming events.
    pub retry_ms: Option<u32>,
    /// With a key, every event id carries an HMAC-SHA256 tag and unsigned or altered ids are
    /// refused as `forged`.
    pub signing_key: Option<Vec<u8>>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_events_per_stream: 1024,
            max_bytes_per_stream: 1 << 20,
            max_streams_per_session: 64,
            max_bytes_per_session: 16 << 20,
            max_sessions: 4096,
            max_total_bytes: 256 << 20,
            retention_ms: 5 * 60 * 1000,
            lease_ms: Self::DEFAULT_LEASE_MS,
            max_detached_ms: None,
            retry_ms: Some(1000),
            signing_key: None,
        }
    }
}

/// Longest signing key accepted; HMAC hashes longer keys anyway.
const MAX_KEY_LEN: usize = 1024;
/// Shortest signing key accepted: anything shorter is guessable.
const MIN_KEY_LEN: usize = 16;

impl Config {
    /// The default `lease_ms`: long enough for a busy instance, short enough for a client.
    pub const DEFAULT_LEASE_MS: Millis = 10_000;

    /// `max_detached_ms`, or the lease when unset.
    pub fn max_detached(&self) -> Millis {
        self.max_detached_ms.unwrap_or(self.lease_ms)
    }

    /// How long streams keep their session from being reclaimed.
    pub fn hold(&self) -> Hold {
        Hold { retention: self.retention_ms, max_detached: self.max_detached() }
    }

    pub fn validate(&self) -> Result<(), GateError> {
        let invalid = |what: &str| Err(GateError::InvalidConfig(what.to_owned()));
        if self.max_events_per_stream == 0 {
            return invalid("max-events-per-stream must be at least 1");
        }
        if self.max_bytes_per_stream == 0 {
            return invalid("max-bytes-per-stream must be at least 1");
        }
        if self.max_streams_per_session == 0 {
            return invalid("max-streams-per-session must be at least 1");
        }
        if self.max_bytes_per_session == 0 {
            return invalid("max-bytes-per-session must be at least 1");
        }
        if self.max_sessions == 0 {
            return invalid("max-sessions must be at least 1");
        }
        if self.retention_ms == 0 {
            return invalid("retention-ms must be at least 1");
        }
        if self.lease_ms == 0 {
            return invalid("lease-ms must be at least 1");
        }
        if self.max_detached_ms == Some(0) {
            return invalid("max-detached-ms must be at least 1");
        }
        if self.max_total_bytes == 0 {
            return invalid("max-total-bytes must be at least 1");
        }
        if let Some(key) = &self.signing_key
            && !(MIN_KEY_LEN..=MAX_KEY_LEN).contains(&key.len())
        {
            return invalid("signing-key must be 16 to 1024 bytes");
        }
        Ok(())
    }
}
