//! Answering a stream's requests: one tool call, or a 2025-03-26 batch, in order, each
//! response recorded through the gate as it is produced.
//!
//! Written once for every host: a host supplies [`CallHost`] — how a recorded event reaches
//! its connection, whether a request was cancelled, what to do when the stream's state is
//! gone — and runs [`answer`]. The rules kept here:
//! - the last request's response is the stream's terminal event; if that request was
//!   cancelled, an empty terminal event ends the stream (a client ignores an event without
//!   data), since a cancelled request gets no response at all;
//! - a cancelled request runs no further and gets no response; the others are answered;
//! - a stream the gate ended (cancelled, given up) takes nothing more: the answering stops;
//! - a stream whose state vanished (the store flushed, the session reclaimed or ended) or a
//!   store that fails: every request not answered yet gets `-32001` on the connection at once,
//!   never a connection left open without an answer.

use resume_gate::{GateError, RequestId};

use crate::server::PendingCall;
use crate::tools::ToolHost;

/// What [`answer`] needs from the host of one stream's connection, besides running tools.
pub trait CallHost: ToolHost {
    /// Records `data` on the stream (`terminal`: as its final response) and writes its frame
    /// to the connection if the stream is still attached to it.
    fn record(&self, data: &str, terminal: bool) -> Result<(), GateError>;
    /// Whether the client cancelled request `id` (`notifications/cancelled`).
    fn cancelled(&self, id: &RequestId) -> bool;
    /// Request `id`'s turn begins (`None`: a malformed batch element): a host that stops a
    /// cancelled request's tool while it waits learns which one runs.
    fn starting(&self, id: Option<&RequestId>) {
        let _ = id;
    }
    /// The stream can take nothing more and these requests will never get their answer
    /// through it: write `-32001` for each to the connection and end it.
    fn lost(&self, ids: &[RequestId]);
}

/// How answering a stream's requests ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answered {
    /// Every request was answered or cancelled, the terminal event recorded.
    All,
    /// The gate ended the stream first (cancelled, given up, taken by a newer one).
    StreamFinished,
    /// The stream's state is gone or the store failed: the requests named got `-32001`.
    Lost(GateError),
}

/// Answers `calls` in order on the stream `host` writes; see the module docs.
pub async fn answer(calls: &[PendingCall], host: &impl CallHost) -> Answered {
    let Some(last) = calls.len().checked_sub(1) else { return Answered::All };
    for (i, pending) in calls.iter().enumerate() {
        let terminal = i == last;
        let cancelled = || pending.id().is_some_and(|id| host.cancelled(id));
        let response = if cancelled() {
            None
        } else {
            host.starting(pending.id());
            let response = pending.respond(host).await;
            // Cancelled while it ran: no response, whatever it produced.
            (!cancelled()).then_some(response)
        };
        let recorded = match response {
            Some(data) => host.record(&data, terminal),
            None if terminal => host.record("", true),
            None => Ok(()),
        };
        match recorded {
            Ok(()) => {}
            Err(GateError::StreamFinished) => return Answered::StreamFinished,
            Err(e) => {
                let unanswered: Vec<RequestId> = calls[i..]
                    .iter()
                    .filter_map(PendingCall::id)
                    .filter(|id| !host.cancelled(id))
                    .cloned()
                    .collect();
                host.lost(&unanswered);
                return Answered::Lost(e);
            }
        }
    }
    Answered::All
}
