//! Making room: what the gate frees when a bound is reached, in a documented order, planned by
//! pure functions over what the store reports; the gate carries the plans out.
//!
//! - A session's stream list is full ([`plan_stream_drop`]): streams kept past retention are
//!   expired, then an eighth of the list goes, the oldest tombstones first, then the oldest
//!   streams whose response was sent; a call still running never does.
//! - A byte budget is short ([`next_to_free`]): one session's share (`max-bytes-per-session`)
//!   or the total (`max-total-bytes`). The buffers of answered streams go first (least recently
//!   active first: their client most likely has the result), then, for the total, the session
//!   idle longest that holds no work.
//! - A stream's buffer is over its bounds ([`evict_oldest`]): its own oldest events go.
//!
//! What cannot be freed is the caller's to handle: `over-budget` for a new session or stream,
//! an event sent but not buffered.

use crate::config::{Config, Millis};
use crate::event_id::EventId;
use crate::store::EVENT_OVERHEAD;
use crate::stream::{EventRef, Seq, StreamMeta, StreamNo, StreamState, StreamSummary};

/// The two byte bounds room is made in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Budget {
    /// `max-bytes-per-session`, for the session an operation works in.
    Session,
    /// `max-total-bytes`.
    Total,
}

/// Bytes `need` more would take `held` past `limit` by (0: they fit).
pub(crate) fn shortfall(held: u64, need: u64, limit: u64) -> u64 {
    held.saturating_add(need).saturating_sub(limit)
}

/// What to free next when a budget is short.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Free {
    /// This answered stream's buffer.
    AnsweredBuffer(String, StreamNo),
    /// The session idle longest that holds no work (total budget only).
    IdlestSession,
    /// Nothing more can be freed for this budget.
    Nothing,
}

/// The next thing to free in `budget`, given the oldest answered buffer the store has in it.
pub(crate) fn next_to_free(budget: Budget, oldest_answered: Option<(String, StreamNo)>) -> Free {
    match (oldest_answered, budget) {
        (Some((session, no)), _) => Free::AnsweredBuffer(session, no),
        (None, Budget::Total) => Free::IdlestSession,
        (None, Budget::Session) => Free::Nothing,
    }
}

/// What listing one more stream in a full session takes.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct DropPlan {
    /// Streams kept without a connection past retention: aborted first.
    pub expire: Vec<StreamNo>,
    /// The streams whose records go, first to go first; empty: every stream is a call still
    /// running.
    pub drop: Vec<StreamNo>,
}

/// How many records a full list of `max` frees at once: an eighth of it (at least one), so
/// that a busy session reads its streams' heads once per eighth of the list instead of on
/// every call (over a shared store, a read per head) and keeps the other seven eighths.
pub(crate) fn streams_freed_at_once(max: u32) -> usize {
    (max as usize / 8).max(1)
}

/// Up to `room` streams: the oldest tombstones (counting the streams `expire` ends), then the
/// oldest streams whose response was sent. A session answering many calls keeps each answered
/// one resumable until room is needed.
pub(crate) fn plan_stream_drop(
    listed: &[StreamSummary],
    now: Millis,
    retention: Millis,
    room: usize,
) -> DropPlan {
    let mut plan = DropPlan::default();
    // (0: a tombstone, 1: answered; then oldest first)
    let mut candidates = Vec::new();
    for st in listed {
        let state = if st.expired(now, retention) {
            plan.expire.push(st.no);
            StreamState::Aborted
        } else {
            st.state
        };
        match state {
            state if !state.is_live() => candidates.push((0u8, st.last_active, st.no)),
            StreamState::TerminalSent => candidates.push((1, st.last_active, st.no)),
            _ => {}
        }
    }
    // A selection, not a sort: `room` is small, and a sort's code would grow the component.
    while plan.drop.len() < room {
        let Some((i, _)) = candidates.iter().enumerate().min_by_key(|(_, c)| **c) else { break };
        plan.drop.push(candidates.swap_remove(i).2);
    }
    plan
}

/// The event just appended: its sequence number, its id's length, and its cost (id and data).
#[derive(Clone, Copy)]
pub(crate) struct JustAppended {
    pub seq: Seq,
    pub id_len: usize,
    pub cost: u32,
}

/// Drops the stream's oldest buffered events until it holds at most `max-events-per-stream`
/// and `max-bytes-per-stream` and `owed` more bytes were freed (what the memory budgets lack
/// for the event `just` appended); returns them, for their data to go. `data_len` tells a
/// buffered event's data length.
pub(crate) fn evict_oldest(
    stream: &mut StreamMeta,
    config: &Config,
    just: &JustAppended,
    mut owed: u64,
    data_len: &mut dyn FnMut(EventRef) -> u64,
) -> Vec<EventRef> {
    let JustAppended { seq, id_len, cost } = *just;
    let signed = config.signing_key.is_some();
    let mut evicted = Vec::new();
    while stream.buffered() > u64::from(config.max_events_per_stream)
        || stream.buffered_bytes > config.max_bytes_per_stream
        || owed > 0
    {
        let Some(old) = stream.pop_oldest() else { break };
        let old_cost = if old.seq == seq {
            cost
        } else {
            let len = EventId::formatted_len(stream.no, old.seq, signed) as u64 + data_len(old);
            u32::try_from(len).unwrap_or(u32::MAX)
        };
        stream.buffered_bytes = stream.buffered_bytes.saturating_sub(u64::from(old_cost));
        evicted.push(old);
        // An older id is no longer than the new one: this undercounts what is freed.
        let freed = u64::from(old_cost).saturating_sub(id_len as u64) + EVENT_OVERHEAD;
        owed = owed.saturating_sub(freed);
    }
    evicted
}
