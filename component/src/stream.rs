//! The stream model: what the gate remembers about one logical SSE sequence.
//!
//! A stream is the SSE response to one POSTed request (origin `Request`) or a standalone GET
//! stream (origin `Standalone`). Its state says whether a reconnect may continue it; see
//! DESIGN.md "Stream model". Records are plain data so that any `Store` can hold them.

use imbl::Vector;
use serde::{Deserialize, Serialize};

use crate::config::Millis;

/// Stream number within a session, allocated in increasing order from 1.
pub type StreamNo = u64;
/// Sequence number within a stream; 0 is the priming event, events count from 1.
pub type Seq = u64;

/// A JSON-RPC request id (MCP allows strings and integers).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RequestId {
    Number(i64),
    Text(String),
}

/// Longest text request id the gate stores (an id is kept with its stream and its claim).
pub const MAX_REQUEST_ID_LEN: usize = 256;

impl RequestId {
    pub fn validate(&self) -> Result<(), crate::error::GateError> {
        match self {
            RequestId::Text(s) if s.len() > MAX_REQUEST_ID_LEN => {
                Err(crate::error::GateError::InvalidRequestId)
            }
            _ => Ok(()),
        }
    }
}

/// What a fresh stream for an HTTP request would be: GET → `Standalone`, POST → `Request`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Origin {
    Standalone,
    Request(RequestId),
}

impl Origin {
    pub fn validate(&self) -> Result<(), crate::error::GateError> {
        self.request_id().map_or(Ok(()), RequestId::validate)
    }

    pub fn request_id(&self) -> Option<&RequestId> {
        match self {
            Origin::Standalone => None,
            Origin::Request(id) => Some(id),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StreamState {
    /// A connection is attached and the final response has not been sent.
    Open,
    /// The connection dropped before the final response was sent.
    Resumable,
    /// The final response was emitted; a connection may or may not be attached.
    TerminalSent,
    /// The client acknowledged the terminal event (it reconnected with it as cursor).
    Completed,
    /// Stranded (evicted past a cursor) or kept without a connection past retention: the
    /// client may still wait for its response, so a reconnect answers the request with an error.
    Aborted,
    /// Cancelled by the client (`notifications/cancelled`) or the host: no response is ever
    /// sent for it, not even an error (MCP: a cancelled request gets no response).
    Cancelled,
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

/// Names an event's data in the store; unique within its stream (see `Store::put_event`).
pub type EventKey = u64;

/// One buffered event as the stream record indexes it: the data lives under `key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Buffered {
    pub key: EventKey,
    /// What the event costs against `max-bytes-per-stream` (id plus data).
    pub cost: u32,
}

/// Everything the gate keeps about a stream except the data of its buffered events.
///
/// The record is the stream's single source of truth and every change to it is one atomic
/// save (a compare-and-swap in a key-value store): an event is published by the save that
/// puts it in `buffer`, after its data was written under its own key.
///
/// Operations other than an emit load a copy of the record and save it back, so `buffer` is a
/// persistent vector: a copy shares its chunks with the original, and a resume costs the same
/// whether the stream buffers ten events or a million. (An emit edits the memory store's
/// record in place; the key-value store still moves the whole index: see issue 15.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamMeta {
    pub no: StreamNo,
    /// The session epoch the stream was opened in; a stream of another epoch does not exist.
    pub epoch: u64,
    pub origin: Origin,
    pub state: StreamState,
    /// Bumped on every (re)attachment; a detach for an older attachment is ignored.
    pub attachment: u32,
    /// Highest sequence number issued (0: only the priming event).
    pub last_seq: Seq,
    /// Sequence number of `buffer[0]`; `last_seq + 1` when nothing is buffered.
    pub first_buffered: Seq,
    /// The buffered events, oldest first, with consecutive sequence numbers.
    pub buffer: Vector<Buffered>,
    pub buffered_bytes: u64,
    /// Sequence number of the terminal event, once emitted.
    pub terminal_seq: Option<Seq>,
    /// Last emit, attach or detach: retention counts from here.
    pub last_active: Millis,
    /// Until when the request's writer (the instance running its call) holds the stream: each
    /// emit and heartbeat renews it. Past it the writer is presumed gone (see `writer_lost`).
    pub lease_until: Millis,
}

/// The few fields of a stream record that choosing a stream to drop looks at: a store that
/// holds records in memory reads them in place instead of copying every record of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamSummary {
    pub no: StreamNo,
    pub epoch: u64,
    pub state: StreamState,
    pub last_active: Millis,
}

impl StreamSummary {
    pub fn of(meta: &StreamMeta) -> Self {
        Self { no: meta.no, epoch: meta.epoch, state: meta.state, last_active: meta.last_active }
    }

    /// As [`StreamMeta::expired`].
    pub fn expired(&self, now: Millis, retention: Millis) -> bool {
        matches!(self.state, StreamState::Resumable | StreamState::TerminalSent)
            && now.saturating_sub(self.last_active) > retention
    }
}

impl StreamMeta {
    pub fn new(no: StreamNo, epoch: u64, origin: Origin, now: Millis, lease: Millis) -> Self {
        Self {
            no,
            epoch,
            origin,
            state: StreamState::Open,
            attachment: 1,
            last_seq: 0,
            first_buffered: 1,
            buffer: Vector::new(),
            buffered_bytes: 0,
            terminal_seq: None,
            last_active: now,
            lease_until: now.saturating_add(lease),
        }
    }

    /// A request still running whose writer stopped renewing its lease: it died with its
    /// instance, and the client would otherwise wait for a response that never comes.
    pub fn writer_lost(&self, now: Millis) -> bool {
        self.origin.request_id().is_some() && self.state.takes_events() && now > self.lease_until
    }

    /// A stream without a connection expires `retention` after its last activity.
    pub fn expired(&self, now: Millis, retention: Millis) -> bool {
        StreamSummary::of(self).expired(now, retention)
    }

    /// The request a client provably still waits for: a request stream whose terminal the
    /// client was never shown to hold.
    pub fn stranded_request(&self) -> Option<RequestId> {
        self.origin.request_id().cloned()
    }

    /// The sequence number of the buffered event stored under `key`.
    pub fn seq_of(&self, key: EventKey) -> Option<Seq> {
        let i = self.buffer.iter().position(|b| b.key == key)?;
        Some(self.first_buffered.saturating_add(i as Seq))
    }

    /// The buffered events after `after`, with their sequence numbers (index arithmetic: the
    /// buffer's sequence numbers are consecutive).
    pub fn buffered_after(&self, after: Seq) -> impl Iterator<Item = (Seq, Buffered)> + '_ {
        let skip = after.saturating_add(1).saturating_sub(self.first_buffered);
        let skip = usize::try_from(skip).unwrap_or(usize::MAX).min(self.buffer.len());
        self.buffer
            .skip(skip)
            .into_iter()
            .enumerate()
            .map(move |(i, b)| (self.first_buffered + (skip + i) as Seq, b))
    }

    /// Moves the stream to a finished state and forgets its buffer; returns the keys whose
    /// data the store may now delete. The record stays as a tombstone.
    pub fn finish(&mut self, state: StreamState) -> Vec<EventKey> {
        self.state = state;
        self.first_buffered = self.last_seq.saturating_add(1);
        self.buffered_bytes = 0;
        std::mem::take(&mut self.buffer).into_iter().map(|b| b.key).collect()
    }
}
