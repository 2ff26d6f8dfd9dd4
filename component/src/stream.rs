//! The stream model: what the gate remembers about one logical SSE sequence.
//!
//! A stream is the SSE response to one POSTed request (origin `Request`) or a standalone GET
//! stream (origin `Standalone`). Its state says whether a reconnect may continue it; see
//! DESIGN.md "Stream model". Records are plain data so that any `Store` can hold them.

use crate::config::Millis;

/// Stream number within a session, allocated in increasing order from 1.
pub type StreamNo = u64;
/// Sequence number within a stream; 0 is the priming event, events count from 1.
pub type Seq = u64;

/// A JSON-RPC request id (MCP allows strings and integers).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RequestId {
    Number(i64),
    Text(String),
}

/// What a fresh stream for an HTTP request would be: GET → `Standalone`, POST → `Request`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Standalone,
    Request(RequestId),
}

impl Origin {
    pub fn request_id(&self) -> Option<&RequestId> {
        match self {
            Origin::Standalone => None,
            Origin::Request(id) => Some(id),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamState {
    /// A connection is attached and the final response has not been sent.
    Open,
    /// The connection dropped before the final response was sent.
    Resumable,
    /// The final response was emitted; a connection may or may not be attached.
    TerminalSent,
    /// The client acknowledged the terminal event (it reconnected with it as cursor).
    Completed,
    /// Cancelled, stranded, or kept without a connection past retention.
    Aborted,
    /// Replaced: its session was re-issued, or a newer standalone stream took its place.
    Superseded,
}

impl StreamState {
    /// Live streams may still be continued by a reconnect (check 7 of the table).
    pub fn is_live(self) -> bool {
        matches!(self, Self::Open | Self::Resumable | Self::TerminalSent)
    }

    /// Whether the stream still takes events from the host.
    pub fn takes_events(self) -> bool {
        matches!(self, Self::Open | Self::Resumable)
    }
}

/// Everything the gate keeps about a stream except its buffered events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamMeta {
    pub no: StreamNo,
    pub origin: Origin,
    pub state: StreamState,
    /// Bumped on every (re)attachment; a detach for an older attachment is ignored.
    pub attachment: u32,
    /// Highest sequence number issued (0: only the priming event).
    pub last_seq: Seq,
    /// Lowest sequence number still buffered; `last_seq + 1` when nothing is.
    pub first_buffered: Seq,
    /// Events and bytes currently buffered.
    pub buffered_events: u32,
    pub buffered_bytes: u64,
    /// Sequence number of the terminal event, once emitted.
    pub terminal_seq: Option<Seq>,
    /// Last emit, attach or detach: retention counts from here.
    pub last_active: Millis,
}

impl StreamMeta {
    pub fn new(no: StreamNo, origin: Origin, now: Millis) -> Self {
        Self {
            no,
            origin,
            state: StreamState::Open,
            attachment: 1,
            last_seq: 0,
            first_buffered: 1,
            buffered_events: 0,
            buffered_bytes: 0,
            terminal_seq: None,
            last_active: now,
        }
    }

    /// A stream without a connection expires `retention` after its last activity.
    pub fn expired(&self, now: Millis, retention: Millis) -> bool {
        matches!(self.state, StreamState::Resumable | StreamState::TerminalSent)
            && now.saturating_sub(self.last_active) > retention
    }

    /// The request a client provably still waits for: a request stream whose terminal the
    /// client was never shown to hold.
    pub fn stranded_request(&self) -> Option<RequestId> {
        self.origin.request_id().cloned()
    }
}

/// One buffered event, as it will be replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    pub seq: Seq,
    pub id: String,
    pub data: String,
}

impl StoredEvent {
    /// What the event costs against `max-bytes-per-stream`.
    pub fn cost(&self) -> u64 {
        (self.id.len() + self.data.len()) as u64
    }
}
