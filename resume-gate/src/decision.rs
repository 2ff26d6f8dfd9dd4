//! The decision table of DESIGN.md, in one function, in the table's order.
//!
//! `decide` only reads: it looks at the cursor, the session and (from check 5 on) the stream
//! the cursor names, and returns a `Verdict`. Check 11, the owner lease, is this project's
//! addition to the table: a call whose instance died is answered, not waited for. The gate applies the verdict. Keeping the checks
//! here, top to bottom, each with its reason, is the point of this module: a newcomer reads
//! the table once, in one place.

use crate::config::Millis;
use crate::error::StoreError;
use crate::event_id::{EventId, SigningKey};
use crate::reason::StaleReason;
use crate::session::SessionMeta;
use crate::stream::{Origin, RequestId, Seq, StreamMeta, StreamNo, StreamState};

/// What the table decided. `V` is the store's version of the stream record it loaded, for
/// the compare-and-swap that applies the verdict.
#[derive(Debug)]
pub(crate) enum Verdict<V> {
    /// Replay every buffered event after `after` on `stream`; with `stranded`, the stream's
    /// writer is gone: the stream is aborted after the replay and the request gets the error.
    Resume { stream: StreamMeta, version: V, after: Seq, stranded: Vec<RequestId> },
    /// Start a fresh stream. `source` is the cursor's stream where the gate still knows it.
    Fresh { reason: StaleReason, source: Option<Source<V>> },
}

/// The stream a stale cursor came from, and what the verdict does to it.
#[derive(Debug)]
pub(crate) struct Source<V> {
    pub stream: StreamMeta,
    pub version: V,
    /// The state the stream moves to, if it changes.
    pub becomes: Option<StreamState>,
    /// The requests whose final response the client provably lacks.
    pub stranded: Vec<RequestId>,
}

/// Everything the table looks at besides the stream record.
pub(crate) struct Reconnect<'a> {
    pub cursor: &'a [u8],
    pub origin: &'a Origin,
    pub session: &'a SessionMeta,
    pub key: Option<&'a SigningKey>,
    pub now: Millis,
    pub retention: Millis,
    /// `max-detached-ms`: a call nobody was attached to for longer was given up.
    pub max_detached: Millis,
}

/// The decision table. `stream_of` loads a stream of this session with its version; it is
/// called at most once.
pub(crate) fn decide<V>(
    r: &Reconnect<'_>,
    stream_of: impl FnOnce(StreamNo) -> Result<Option<(StreamMeta, V)>, StoreError>,
) -> Result<Verdict<V>, StoreError> {
    use StaleReason::*;
    let fresh = |reason| Ok(Verdict::Fresh { reason, source: None });

    // 1. The id parses: any bytes, any length, never a panic.
    let Some(id) = EventId::parse(r.cursor) else {
        return fresh(Malformed);
    };
    // 2. Its MAC verifies, when a signing key is configured.
    if let Some(key) = r.key
        && !key.verifies(&id)
    {
        return fresh(Forged);
    }
    // 3. It was minted for this session: never a replay across sessions.
    if id.session != r.session.tag {
        return fresh(OtherSession);
    }
    // 4. Its epoch is the session's current one: nothing survives a restart or re-issue.
    if id.epoch != r.session.epoch {
        return fresh(EpochChanged);
    }
    // 5. Its stream exists in this session, in this epoch.
    let Some((stream, version)) = stream_of(id.stream)?.filter(|(st, _)| st.epoch == r.session.epoch) else {
        return fresh(Unknown);
    };

    // 6. Resumption is always a GET: a POST gets a fresh stream for its own request.
    if *r.origin != Origin::Standalone {
        return fresh(PostNeverResumes);
    }
    // The client lacks the final response unless its cursor is at or past the terminal.
    let lacks_final = stream.terminal_seq.is_none_or(|t| id.seq < t);
    let stranded = if lacks_final { stream.stranded_requests() } else { Vec::new() };
    // 7. The stream is open, resumable or terminal-sent; one kept too long (past retention, or
    // a call nobody was attached to past `max-detached`) is aborted.
    if stream.expired(r.now, r.retention) || stream.abandoned(r.now, r.max_detached) {
        return settle(stream, version, Aborted, Some(StreamState::Aborted), stranded);
    }
    match stream.state {
        StreamState::Completed => return fresh(Completed),
        StreamState::Aborted => return settle(stream, version, Aborted, None, stranded),
        // A cancelled request gets no response at all, not even the stranded error.
        StreamState::Cancelled => return settle(stream, version, Aborted, None, Vec::new()),
        StreamState::Superseded => return settle(stream, version, Superseded, None, stranded),
        StreamState::Open | StreamState::Resumable | StreamState::TerminalSent => {}
    }
    // 8. The sequence number was actually issued on that stream. One ahead of it on a call
    // whose writer is gone (its lease passed) and that has no result was handed out and then
    // lost — the store went back in time (an older snapshot, a replica promoted) — so the
    // client's request can never be answered there: it is stranded. (A cursor ahead of a
    // live or answered stream is a client's own invention: nothing is named.)
    if id.seq > stream.last_seq {
        let lost = stream.terminal_seq.is_none() && stream.writer_lost(r.now);
        let stranded = if lost { stream.stranded_requests() } else { Vec::new() };
        return settle(stream, version, Unknown, None, stranded);
    }
    // 9. The cursor is not the terminal event itself: the client already has the result.
    if stream.terminal_seq == Some(id.seq) {
        return settle(stream, version, Completed, Some(StreamState::Completed), Vec::new());
    }
    // 10. Every event after the cursor is still buffered: never a partial replay.
    if id.seq.saturating_add(1) < stream.first_buffered {
        return settle(stream, version, Evicted, Some(StreamState::Aborted), stranded);
    }
    // 11. The request's writer still holds its lease; if not, it died with its instance: the
    // client gets what was stored, then the stranded error, never a wait without end.
    let stranded = if stream.writer_lost(r.now) { stranded } else { Vec::new() };
    Ok(Verdict::Resume { stream, version, after: id.seq, stranded })
}

/// A fresh verdict for a cursor whose stream the gate knows: what becomes of that stream.
fn settle<V>(
    stream: StreamMeta,
    version: V,
    reason: StaleReason,
    becomes: Option<StreamState>,
    stranded: Vec<RequestId>,
) -> Result<Verdict<V>, StoreError> {
    Ok(Verdict::Fresh { reason, source: Some(Source { stream, version, becomes, stranded }) })
}
