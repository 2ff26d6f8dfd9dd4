//! The stream model: what the gate remembers about one logical SSE sequence.
//!
//! A stream is the SSE response to one POSTed request (origin `Request`) or a standalone GET
//! stream (origin `Standalone`). Its state says whether a reconnect may continue it; see
//! DESIGN.md "Stream model". Records are plain data so that any `Store` can hold them.

use serde::{Deserialize, Serialize};

use crate::config::{Hold, Millis};
use crate::event_id::SessionTag;

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
/// Most requests one stream answers (a 2025-03-26 batch, its origin's included).
pub const MAX_BATCH_REQUESTS: usize = 256;

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

/// Who stored an event's data: a key-value store's instance (its seed), `0` in memory.
pub type Writer = u64;

/// Where one event's data is stored: its writer, and the writer's number for it. A writer
/// stores an event's data once, before it knows the sequence number its publish will get, so
/// racing writers never clobber each other's data and a retried publish writes nothing again.
/// A writer numbers the events of one stream consecutively where it can, so that one run
/// names them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataKey {
    pub writer: Writer,
    pub n: u64,
}

/// A buffered event: its sequence number and where its data is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventRef {
    pub seq: Seq,
    pub key: DataKey,
}

/// From `from` on (until the next run), the buffered events' data is stored by `writer` under
/// its numbers `n`, `n + 1`, ….
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub from: Seq,
    pub writer: Writer,
    pub n: u64,
}

/// Everything the gate keeps about a stream except its events: the stream's *head*.
///
/// The head is the stream's single source of truth and every change to it is one atomic save
/// (a compare-and-swap in a key-value store). Events are stored under their own keys, named by
/// writer and the writer's number; the head says which sequence numbers are buffered and, as
/// runs, where their data is, so its size does not grow with the buffer (one run per change of
/// writer).
/// An event is published by the save that raises `last_seq` to it, after its data was written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamMeta {
    pub no: StreamNo,
    /// The session epoch the stream was opened in; a stream of another epoch does not exist.
    pub epoch: u64,
    /// The session's tag, for minting ids without loading the session.
    pub tag: SessionTag,
    pub origin: Origin,
    pub state: StreamState,
    /// Bumped on every (re)attachment; a detach for an older attachment is ignored.
    pub attachment: u32,
    /// Highest sequence number issued (0: only the priming event).
    pub last_seq: Seq,
    /// The oldest buffered event; `last_seq + 1` when nothing is buffered. The buffered events
    /// are `first_buffered..=last_seq`.
    pub first_buffered: Seq,
    /// Writers of the buffered events, oldest first; empty when nothing is buffered.
    pub runs: Vec<Run>,
    pub buffered_bytes: u64,
    /// Sequence number of the terminal event, once emitted.
    pub terminal_seq: Option<Seq>,
    /// Last emit, attach or detach: retention counts from here.
    pub last_active: Millis,
    /// Until when the request's writer (the instance running its call) holds the stream: each
    /// emit and heartbeat renews it. Past it the writer is presumed gone (see `writer_lost`).
    pub lease_until: Millis,
    /// The further requests of a 2025-03-26 batch this stream answers, in the order they were
    /// claimed (the origin's request is the first of the batch). Empty for one request.
    pub batch: Vec<RequestId>,
    /// Requests of a batch stream the client cancelled: they get no response; the others do.
    pub cancelled: Vec<RequestId>,
    /// When its connection ended while the stream still took events (`Resumable`): a call
    /// nobody is attached to is given up `max-detached-ms` later.
    pub detached_at: Option<Millis>,
    /// The terminal event was recorded while a connection was attached: the result was
    /// written in full, so the stream no longer keeps its session from being reclaimed.
    pub delivered: bool,
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
    pub fn new(
        no: StreamNo,
        epoch: u64,
        tag: SessionTag,
        origin: Origin,
        now: Millis,
        lease: Millis,
    ) -> Self {
        Self {
            no,
            epoch,
            tag,
            origin,
            state: StreamState::Open,
            attachment: 1,
            last_seq: 0,
            first_buffered: 1,
            runs: Vec::new(),
            buffered_bytes: 0,
            terminal_seq: None,
            last_active: now,
            lease_until: now.saturating_add(lease),
            batch: Vec::new(),
            cancelled: Vec::new(),
            detached_at: None,
            delivered: false,
        }
    }

    /// A request still running whose writer stopped renewing its lease: it died with its
    /// instance, and the client would otherwise wait for a response that never comes.
    pub fn writer_lost(&self, now: Millis) -> bool {
        self.origin.request_id().is_some() && self.state.takes_events() && now > self.lease_until
    }

    /// A call nobody has been attached to for longer than `max_detached`: given up, so that
    /// an abandoned call neither runs on nor keeps its session (the client that comes back
    /// later gets the stranded error).
    pub fn abandoned(&self, now: Millis, max_detached: Millis) -> bool {
        self.origin.request_id().is_some()
            && self.state == StreamState::Resumable
            && self.detached_at.is_some_and(|t| now.saturating_sub(t) > max_detached)
    }

    /// Until when this stream keeps its session from being reclaimed for room: while a
    /// connection is attached (a running call: while its writer holds the lease), while a
    /// detached stream may still be resumed (`max-detached`), and while an answer recorded with
    /// nobody attached is owed (`retention`). A result written in full holds nothing.
    pub fn holds_until(&self, hold: Hold) -> Millis {
        match self.state {
            StreamState::Open if self.origin.request_id().is_some() => self.lease_until,
            StreamState::Open => Millis::MAX,
            StreamState::Resumable => {
                self.detached_at.unwrap_or(self.last_active).saturating_add(hold.max_detached)
            }
            StreamState::TerminalSent if !self.delivered => self.last_active.saturating_add(hold.retention),
            _ => 0,
        }
    }

    /// The JSON-RPC requests this stream answers: its origin's, then a batch's others.
    pub fn requests(&self) -> impl Iterator<Item = &RequestId> {
        self.origin.request_id().into_iter().chain(&self.batch)
    }

    /// A stream without a connection expires `retention` after its last activity.
    pub fn expired(&self, now: Millis, retention: Millis) -> bool {
        StreamSummary::of(self).expired(now, retention)
    }

    /// The requests a client provably still waits for when it lacks the stream's terminal:
    /// every request the stream answers that was not cancelled (a cancelled request gets no
    /// response, not even an error). For a batch, a request answered before the cursor may be
    /// named too: an error for a request it holds the answer of is better than silence for
    /// one it lacks.
    pub fn stranded_requests(&self) -> Vec<RequestId> {
        self.requests().filter(|id| !self.cancelled.contains(id)).cloned().collect()
    }

    /// How many events are buffered.
    pub fn buffered(&self) -> u64 {
        self.last_seq.saturating_add(1).saturating_sub(self.first_buffered)
    }

    /// The buffered event `seq`, if it is buffered.
    pub fn event_ref(&self, seq: Seq) -> Option<EventRef> {
        if seq < self.first_buffered || seq > self.last_seq {
            return None;
        }
        let run = self.runs.iter().rev().find(|r| r.from <= seq)?;
        let n = run.n.wrapping_add(seq - run.from);
        Some(EventRef { seq, key: DataKey { writer: run.writer, n } })
    }

    /// Whether the data under `key` is a buffered event's.
    pub fn names(&self, key: DataKey) -> bool {
        self.runs.iter().enumerate().any(|(i, run)| {
            let end = self.runs.get(i + 1).map_or(self.last_seq, |next| next.from.saturating_sub(1));
            let (lo, hi) = (run.from.max(self.first_buffered), end.min(self.last_seq));
            let first = run.n.wrapping_add(lo.wrapping_sub(run.from));
            run.writer == key.writer && lo <= hi && key.n.wrapping_sub(first) <= hi - lo
        })
    }

    /// The buffered events after `after`, oldest first.
    pub fn buffered_after(&self, after: Seq) -> impl Iterator<Item = EventRef> + '_ {
        let from = after.saturating_add(1).max(self.first_buffered);
        (from..=self.last_seq).filter_map(|seq| self.event_ref(seq))
    }

    /// Issues the next sequence number to the event whose data is under `key` and buffers it.
    pub fn push(&mut self, key: DataKey) -> Seq {
        let seq = self.last_seq.saturating_add(1);
        let continues = self
            .event_ref(self.last_seq)
            .is_some_and(|last| last.key.writer == key.writer && last.key.n.wrapping_add(1) == key.n);
        self.last_seq = seq;
        if !continues {
            self.runs.push(Run { from: seq, writer: key.writer, n: key.n });
        }
        seq
    }

    /// Drops the oldest buffered event from the buffer; returns it, for its data to go.
    pub fn pop_oldest(&mut self) -> Option<EventRef> {
        let oldest = self.event_ref(self.first_buffered)?;
        self.first_buffered = self.first_buffered.saturating_add(1);
        while self.runs.get(1).is_some_and(|r| r.from <= self.first_buffered) {
            self.runs.remove(0);
        }
        if self.first_buffered > self.last_seq {
            self.runs.clear();
        }
        Some(oldest)
    }

    /// Moves the stream to a finished state and forgets its buffer; returns the events whose
    /// data the store may now delete. The record stays as a tombstone.
    pub fn finish(&mut self, state: StreamState) -> Vec<EventRef> {
        let freed = self.buffered_after(0).collect();
        self.state = state;
        self.first_buffered = self.last_seq.saturating_add(1);
        self.buffered_bytes = 0;
        self.runs.clear();
        freed
    }
}
