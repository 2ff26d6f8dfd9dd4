//! The gate: sessions, streams and the event log, driven by the host's calls.
//!
//! Every operation takes `now` (and `open_session` takes entropy) from the caller; the gate
//! reads no clock, draws no randomness and does no I/O. The reconnect decision itself lives in
//! `decision`, what is freed at a bound is planned in `room`; this module applies both. Every
//! change to a record is one attempt of `retry`: load, change, compare-and-swap, again on a
//! lost race.
//!
//! # Layout
//!
//! - this file: the `Gate` and its operations, each a thin entry that validates, counts an
//!   error, and hands over to the file of its concern;
//! - `sessions`: opening a session, admission, making room in the byte budgets;
//! - `streams`: opening, joining, listing, detaching, cancelling and ending streams, leases;
//! - `events`: recording an event on its stream, reading buffered events back;
//! - `reconnect`: applying the decision table's verdict.

mod events;
mod reconnect;
mod sessions;
mod streams;

use crate::config::{Config, Millis};
use crate::counters::Counters;
use crate::decision::{Reconnect, Verdict, decide};
use crate::error::GateError;
use crate::event_id::{EventId, SigningKey};
use crate::outcome::{
    Decision, Event, FreshStart, Opened, Polled, Recorded, Resumption, SessionInfo, StreamStatus,
};
use crate::room::{self, Budget, Free, JustAppended};
use crate::session::{SessionMeta, next_epoch, validate_session_id};
use crate::store::{
    Edit, MAX_ATTEMPTS, MemoryStore, Store, Swept, claim_cost, contention, event_cost, session_cost,
    stream_cost,
};
use crate::stream::{
    EventRef, MAX_BATCH_REQUESTS, Origin, RequestId, Seq, StreamMeta, StreamNo, StreamState, StreamSummary,
};

/// The stale-cursor gate over a state store.
///
/// Its methods, sorted as a host uses them (each takes the time, and returns a typed error,
/// never a panic):
///
/// - setting up: [`Gate::new`] (or [`Gate::in_memory`]), [`Gate::configure`];
/// - sessions: [`Gate::open_session`] on `initialize` (re-issue on an open id),
///   [`Gate::has_session`] for a request that makes no other call, [`Gate::end_session`] on
///   DELETE;
/// - a request's stream: [`Gate::open_stream`], then for a batch [`Gate::join_stream`]; while
///   its call runs, [`Gate::emit`] per message, [`Gate::renew_lease`] between them,
///   [`Gate::check_stream`] before writing where another instance may have resumed or cancelled
///   it; [`Gate::terminal`] for the response; [`Gate::release_stream`] if the request was refused
///   before it ran;
/// - the connection: [`Gate::detach`] when it ends; [`Gate::abort`] / [`Gate::abort_request`] on
///   `notifications/cancelled`;
/// - reconnecting: [`Gate::reconnect`] for every `Last-Event-ID`, and [`Gate::poll`] to follow a
///   stream whose events another instance records;
/// - off the request path: [`Gate::counters`], [`Gate::collect_garbage`].
#[derive(Debug)]
pub struct Gate<S: Store = MemoryStore> {
    pub(crate) config: Config,
    key: Option<SigningKey>,
    pub(crate) store: S,
    pub(crate) counters: Counters,
}

impl Gate<MemoryStore> {
    /// A gate keeping its state in memory.
    pub fn in_memory(config: Config) -> Result<Self, GateError> {
        Self::new(config, MemoryStore::new())
    }
}

impl<S: Store> Gate<S> {
    pub fn new(config: Config, mut store: S) -> Result<Self, GateError> {
        let key = signing_key(&config)?;
        store.set_hold(config.hold());
        Ok(Self { config, key, store, counters: Counters::default() })
    }

    /// Replaces the configuration; bounds apply from the next operation on. A new signing key
    /// makes every id minted under the old one `forged`.
    pub fn configure(&mut self, config: Config) -> Result<(), GateError> {
        let key = signing_key(&config)?;
        self.store.set_hold(config.hold());
        self.config = config;
        self.key = key;
        Ok(())
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// What this gate counted; never a store call, so a host can report it while its store
    /// stalls (a shared store's session count is the one this instance saw last).
    pub fn counters(&mut self) -> Result<Counters, GateError> {
        let mut c = self.counters.clone();
        c.sessions = self.store.sessions_seen();
        Ok(c)
    }

    /// Opens a session, or re-issues it: a new epoch, and every stream of the old one dropped,
    /// so that no id minted before can resume.
    pub fn open_session(
        &mut self,
        session: &str,
        now: Millis,
        entropy: [u8; 8],
    ) -> Result<SessionInfo, GateError> {
        let r = self.open_session_inner(session, now, entropy);
        self.counted(r)
    }

    /// Whether the session is open.
    pub fn has_session(&mut self, session: &str) -> Result<bool, GateError> {
        match self.session(session) {
            Ok(_) => Ok(true),
            Err(GateError::UnknownSession | GateError::InvalidSessionId) => Ok(false),
            Err(e) => self.counted(Err(e)),
        }
    }

    /// Ends a session: every later call for it gets `UnknownSession`.
    pub fn end_session(&mut self, session: &str) -> Result<(), GateError> {
        let r = self.session(session).and_then(|(s, _)| Ok(self.store.remove_session(&s)?));
        self.counted(r)
    }

    /// Opens a stream of `origin` in the session and returns its priming event.
    pub fn open_stream(&mut self, session: &str, origin: Origin, now: Millis) -> Result<Opened, GateError> {
        let r = origin
            .validate()
            .and_then(|()| self.session(session))
            .and_then(|(s, _)| self.open_stream_in(&s, origin, now));
        self.counted(r)
    }

    /// Adds the further requests of a 2025-03-26 batch to the request stream `stream` answers
    /// (opened for the batch's first request): claims each id in order, before any of them
    /// runs. `false` for an id already held in the session (earlier in the batch, or by
    /// another request): that request gets `-32600` and runs nothing.
    pub fn join_stream(
        &mut self,
        session: &str,
        stream: StreamNo,
        ids: &[RequestId],
        now: Millis,
    ) -> Result<Vec<bool>, GateError> {
        let r = ids
            .iter()
            .try_for_each(RequestId::validate)
            .and_then(|()| self.session(session))
            .and_then(|(s, _)| self.join_stream_in(&s, stream, ids, now));
        self.counted(r)
    }

    /// Whether the connection attached as `attachment` is still the stream's, whether the
    /// stream still takes events, and which of its batch's requests were cancelled: what the
    /// writer of a stream asks before it writes (it may run in another instance than the
    /// resume that took the stream over, or the cancel). Changes nothing.
    pub fn check_stream(
        &mut self,
        session: &str,
        stream: StreamNo,
        attachment: u32,
    ) -> Result<StreamStatus, GateError> {
        let r = self.session(session).and_then(|(s, _)| {
            let (st, _) = self.stream(&s, stream)?.ok_or(GateError::UnknownStream)?;
            Ok(StreamStatus {
                attached: st.state.is_live() && st.attachment == attachment,
                running: st.state.takes_events(),
                cancelled: st.cancelled,
            })
        });
        self.counted(r)
    }

    /// Forgets a request stream whose request was refused before it ran (the host answered it
    /// with an HTTP error): its record and its request ids' claims go, so a corrected retry
    /// may use the ids again. Only a stream that recorded nothing; else `stream-finished`.
    pub fn release_stream(&mut self, session: &str, stream: StreamNo) -> Result<(), GateError> {
        let r = self.release_stream_inner(session, stream);
        self.counted(r)
    }

    /// Records an event on a stream and returns its id.
    pub fn emit(
        &mut self,
        session: &str,
        stream: StreamNo,
        data: String,
        now: Millis,
    ) -> Result<Recorded, GateError> {
        let r = self.record(session, stream, data, false, now);
        self.counted(r)
    }

    /// Records the stream's final JSON-RPC response; the stream becomes terminal-sent.
    pub fn terminal(
        &mut self,
        session: &str,
        stream: StreamNo,
        data: String,
        now: Millis,
    ) -> Result<Recorded, GateError> {
        let r = self.record(session, stream, data, true, now);
        self.counted(r)
    }

    /// The connection of `attachment` ended. Idempotent; a stale attachment is ignored.
    pub fn detach(
        &mut self,
        session: &str,
        stream: StreamNo,
        attachment: u32,
        now: Millis,
    ) -> Result<(), GateError> {
        let r = self.detach_inner(session, stream, attachment, now);
        self.counted(r)
    }

    /// Cancels a stream (e.g. `notifications/cancelled`): it takes no more events and no
    /// reconnect resumes it.
    pub fn abort(&mut self, session: &str, stream: StreamNo) -> Result<(), GateError> {
        let r = self.abort_inner(session, stream);
        self.counted(r)
    }

    /// Cancels a JSON-RPC request (`notifications/cancelled`): its stream, or, in a batch
    /// stream, that request alone (the stream ends once each of its requests is cancelled).
    /// `false` when no live stream of the session answers that request.
    pub fn abort_request(&mut self, session: &str, id: &RequestId) -> Result<bool, GateError> {
        let r = self.abort_request_inner(session, id);
        self.counted(r)
    }

    /// The events recorded on a stream after `after`, for a host that follows the store
    /// instead of being handed events (per-request instances). Changes nothing.
    pub fn poll(
        &mut self,
        session: &str,
        stream: StreamNo,
        attachment: u32,
        after: Seq,
        now: Millis,
    ) -> Result<Polled, GateError> {
        let r = self.poll_inner(session, stream, attachment, after, now);
        self.counted(r)
    }

    /// The writer of a request stream is still running its call (a heartbeat between events):
    /// renews its lease. `StreamFinished` once the stream takes no more events (the call was
    /// cancelled or given up on): the writer stops then.
    pub fn renew_lease(&mut self, session: &str, stream: StreamNo, now: Millis) -> Result<(), GateError> {
        let r = self.renew_lease_inner(session, stream, now);
        self.counted(r)
    }

    /// One step of a pass that collects what instances killed mid-operation left in a shared
    /// store (see `Store::collect_garbage`); pass `next` back until it is `None`. For the
    /// host to run off the request path (e.g. on a timer).
    pub fn collect_garbage(&mut self, cursor: Option<&str>, now: Millis) -> Result<Swept, GateError> {
        let r = self.store.collect_garbage(cursor, now, self.config.lease_ms).map_err(GateError::from);
        self.counted(r)
    }

    /// Decides a reconnect with `Last-Event-ID` = `cursor` (raw header bytes).
    pub fn reconnect(
        &mut self,
        session: &str,
        cursor: &[u8],
        origin: Origin,
        now: Millis,
    ) -> Result<Decision, GateError> {
        let r = origin.validate().and_then(|()| self.reconnect_inner(session, cursor, origin, now));
        self.counted(r)
    }

    /// Runs `attempt` until it settles: `Some` is the answer, `None` a lost compare-and-swap
    /// race, retried from a fresh load, at most `MAX_ATTEMPTS` times.
    fn retry<T>(
        &mut self,
        mut attempt: impl FnMut(&mut Self) -> Result<Option<T>, GateError>,
    ) -> Result<T, GateError> {
        for _ in 0..MAX_ATTEMPTS {
            if let Some(done) = attempt(self)? {
                return Ok(done);
            }
        }
        Err(contention().into())
    }

    fn counted<T>(&mut self, r: Result<T, GateError>) -> Result<T, GateError> {
        if r.is_err() {
            self.counters.errors += 1;
        }
        r
    }

    fn session(&mut self, session: &str) -> Result<(SessionMeta, S::Version), GateError> {
        validate_session_id(session)?;
        self.store.session(session)?.ok_or(GateError::UnknownSession)
    }

    /// A stream of the session's current epoch; a record left by an earlier epoch is not one.
    pub(crate) fn stream(
        &mut self,
        session: &SessionMeta,
        no: StreamNo,
    ) -> Result<Option<(StreamMeta, S::Version)>, GateError> {
        Ok(self.store.stream(&session.id, no)?.filter(|(st, _)| st.epoch == session.epoch))
    }
}

impl<S: Store> Gate<S> {}

fn signing_key(config: &Config) -> Result<Option<SigningKey>, GateError> {
    config.validate()?;
    match &config.signing_key {
        None => Ok(None),
        Some(k) => {
            SigningKey::new(k).map(Some).ok_or_else(|| GateError::InvalidConfig("signing-key refused".into()))
        }
    }
}
