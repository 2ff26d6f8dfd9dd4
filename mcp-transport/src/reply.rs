//! What the transport answers an HTTP request with: a plain reply, `202`, or an SSE stream the
//! host writes (its frames, then the requests it answers or the stream it follows). Every
//! host writes the same headers for each.

use resume_gate::{RequestId, StaleReason};

use crate::calls::PendingCall;
use crate::http::SESSION_HEADER;
use crate::jsonrpc::{self, INVALID_REQUEST};

/// A reply without a stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plain {
    pub status: u16,
    /// `application/json` when there is a body.
    pub body: Option<String>,
    pub session: Option<String>,
    /// For `405`.
    pub allow: Option<&'static str>,
    /// Seconds, for `503`.
    pub retry_after: Option<u32>,
    /// For the host's log, not the client: the session `initialize` reclaimed to make room.
    pub reclaimed: Option<String>,
}

impl Plain {
    /// The reply for a request body over [`MAX_BODY_BYTES`].
    pub fn payload_too_large() -> Self {
        rpc_plain(413, None, INVALID_REQUEST, "Payload Too Large: the request body exceeds 4 MiB")
    }

    /// The reply for a request body the connection failed to deliver.
    pub fn unreadable_body() -> Self {
        rpc_plain(400, None, INVALID_REQUEST, "Bad Request: the request body could not be read")
    }

    /// The response headers, besides the status: every host writes the same ones.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut h = Vec::new();
        if self.body.is_some() {
            h.push(("content-type", "application/json".to_owned()));
        }
        if let Some(s) = &self.session {
            h.push((SESSION_HEADER, s.clone()));
        }
        if let Some(allow) = self.allow {
            h.push(("allow", allow.to_owned()));
        }
        if let Some(seconds) = self.retry_after {
            h.push(("retry-after", seconds.to_string()));
        }
        h
    }
}

/// What the gate decided for a reconnect, for the host's structured log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionLog {
    pub resumed: bool,
    pub reason: Option<StaleReason>,
    pub replayed: usize,
    pub stranded: Vec<RequestId>,
}

/// An SSE reply: write `frames`, then close if `close`, else keep following `stream`.
#[derive(Clone, Debug, PartialEq)]
pub struct Stream {
    /// The gate's session; for a stateless-era stream, a random key of this response alone
    /// (what a host files it under), never sent to the client.
    pub session: String,
    /// A session-era stream: the gate records its events under ids a client resumes from.
    /// `false`: a stateless-era stream — nothing recorded, nothing resumable, and closing the
    /// connection cancels its calls.
    pub resumable: bool,
    /// For a stream held open without calls (`subscriptions/listen`): the response that ends
    /// it gracefully when the server closes it.
    pub farewell: Option<String>,
    pub stream: u64,
    pub attachment: u32,
    pub frames: Vec<String>,
    /// The `seq` of the last event in `frames`, or of the cursor when none was replayed: a
    /// host that follows the stream with `GateApi::poll` polls after it.
    pub follow_after: u64,
    pub close: bool,
    /// Requests to answer on the stream, in order (more than one only for a batch): run a
    /// tool call, or compute a batch's other answers, when its turn comes; the last one's
    /// response is the stream's terminal event (an empty one if it was cancelled).
    pub calls: Vec<PendingCall>,
    /// Requests of this session a batch's `notifications/cancelled` named.
    pub cancels: Vec<RequestId>,
    pub decision: Option<DecisionLog>,
}

impl Stream {
    /// The response headers: every host writes the same ones. Only a session-era stream names
    /// its session.
    pub fn headers(&self) -> Vec<(&'static str, &str)> {
        let mut h = vec![("content-type", "text/event-stream"), ("cache-control", "no-cache")];
        if self.resumable {
            h.push((SESSION_HEADER, self.session.as_str()));
        } else {
            // The 2026-07-28 transport asks for it: a buffering proxy would hold the events.
            h.push(("x-accel-buffering", "no"));
        }
        h
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Plain(Plain),
    Stream(Stream),
    /// `202 Accepted`; the client cancelled the requests in `cancels` (of this session).
    Accepted {
        session: String,
        cancels: Vec<RequestId>,
    },
    /// A task to create or a task request to answer (only when `ServerConfig::tasks`): the
    /// host answers it with [`crate::tasks::answer`] over its task store.
    Task(crate::tasks::TaskRequest),
}

pub(crate) fn plain(status: u16, body: Option<String>) -> Reply {
    Reply::Plain(Plain { status, body, ..Plain::default() })
}

pub(crate) fn rpc_plain(status: u16, id: Option<&RequestId>, code: i64, message: &str) -> Plain {
    Plain { status, body: Some(jsonrpc::error(id, code, message)), ..Plain::default() }
}

pub(crate) fn rpc_error(status: u16, id: Option<&RequestId>, code: i64, message: &str) -> Reply {
    Reply::Plain(rpc_plain(status, id, code, message))
}
