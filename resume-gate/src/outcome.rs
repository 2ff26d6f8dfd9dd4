//! What the gate's operations return to a host: events to write, a stream opened, a
//! reconnect's decision, a poll, a writer's check. Plain data, so that every embedding (the
//! WIT conversions, the transport, the tests) speaks the same types.

use crate::reason::StaleReason;
use crate::stream::{RequestId, Seq, StreamNo};

/// An event for the host to write as one SSE frame (`id:`, optional `retry:`, `data:`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub id: String,
    pub stream: StreamNo,
    pub seq: Seq,
    /// Empty for a priming event.
    pub data: String,
    /// Set on priming events when the config has a `retry` hint.
    pub retry_ms: Option<u32>,
    /// The stream's final JSON-RPC response: the host closes the response after it.
    pub terminal: bool,
}

/// A stream just opened: write `priming` first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opened {
    pub stream: StreamNo,
    /// Pass back to `detach` when this connection ends.
    pub attachment: u32,
    pub priming: Event,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    pub epoch: u64,
    /// The session reclaimed to make room for this one.
    pub reclaimed: Option<String>,
}

/// What a poll of a stream found: events recorded since the host's last one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Polled {
    /// The stream's events after the given sequence number, in order.
    pub events: Vec<Event>,
    /// Stop following: the terminal is among `events`, the stream ended, another connection
    /// took it over, or events after the cursor were evicted (the client's next reconnect
    /// gets the verdict).
    pub done: bool,
    /// The request's writer is gone (its lease expired): after `events`, the host answers
    /// these requests with the stranded error and stops following (`done` is set).
    pub stranded: Vec<RequestId>,
}

/// What the writer of a stream asks before it writes to its connection (`stream-status`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamStatus {
    /// The asking connection is still the stream's: no resume took the stream over and it has
    /// not ended. Write to it only while this holds.
    pub attached: bool,
    /// The stream still takes events: its call runs on (not cancelled, given up or answered).
    pub running: bool,
    /// Requests of a batch stream the client cancelled: skip them, answer the others.
    pub cancelled: Vec<RequestId>,
}

/// What `emit` or `terminal` recorded: the event's id and sequence number. The host writes
/// the frame from these and the data it passed in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub id: String,
    pub seq: Seq,
}

impl Recorded {
    /// The whole event, for a host that keeps events rather than writing them at once.
    pub fn into_event(self, stream: StreamNo, data: String, terminal: bool) -> Event {
        Event { id: self.id, stream, seq: self.seq, data, retry_ms: None, terminal }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resumption {
    pub stream: StreamNo,
    /// This connection's attachment; any older one is detached (take-over).
    pub attachment: u32,
    /// The `seq` of the cursor's event: `events` start after it. A host that follows the
    /// stream by `poll` polls from the last event it wrote, or from here.
    pub cursor_seq: Seq,
    /// Every event after the cursor, in order, exactly once.
    pub events: Vec<Event>,
    /// The last event is the terminal one: close the response after writing it.
    pub includes_terminal: bool,
    /// The request's writer is gone (its lease expired): after `events`, the host answers
    /// these requests with the stranded error and closes the response. The stream is aborted.
    pub stranded: Vec<RequestId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreshStart {
    pub reason: StaleReason,
    pub opened: Opened,
    /// Requests the client provably still waits for; the host answers each with an error.
    pub stranded: Vec<RequestId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Resume(Resumption),
    Fresh(FreshStart),
}
