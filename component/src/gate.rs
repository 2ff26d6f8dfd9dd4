//! The gate: sessions, streams and the event log, driven by the host's calls.
//!
//! Every operation takes `now` (and `open_session` takes entropy) from the caller; the gate
//! reads no clock, draws no randomness and does no I/O. The reconnect decision itself lives in
//! `decision`, what is freed at a bound in `room`; this module applies both. Every change to
//! a record is one attempt of `retry`: load, change, compare-and-swap, again on a lost race.

use crate::config::{Config, Millis};
use crate::counters::Counters;
use crate::decision::{Decision, FreshStart, Reconnect, Resumption, Verdict, decide};
use crate::error::GateError;
use crate::event_id::{EventId, SigningKey};
use crate::room::Budget;
use crate::session::{SessionMeta, next_epoch, validate_session_id};
use crate::store::{
    EVENT_OVERHEAD, Edit, MAX_ATTEMPTS, MemoryStore, Store, Swept, claim_cost, contention, event_cost,
    session_cost, stream_cost,
};
use crate::stream::{
    EventRef, MAX_BATCH_REQUESTS, Origin, RequestId, Seq, StreamMeta, StreamNo, StreamState, StreamSummary,
};

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

/// How to append an event's data.
#[derive(Clone, Copy)]
struct NewEvent {
    terminal: bool,
    now: Millis,
    /// Bytes the memory budgets lack for it: the stream's own oldest events make them up.
    shortfall: u64,
}

/// What appending an event to its stream record came to.
enum Appended {
    Event {
        seq: Seq,
        id: String,
        evicted: Vec<EventRef>,
    },
    /// The stream was kept past retention: aborted now, its buffer to free.
    Expired(Vec<EventRef>),
    Refused(GateError),
}

/// The stale-cursor gate over a state store.
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

    pub fn counters(&mut self) -> Result<Counters, GateError> {
        let mut c = self.counters.clone();
        c.sessions = self.store.session_count()?;
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

    fn join_stream_in(
        &mut self,
        session: &SessionMeta,
        no: StreamNo,
        ids: &[RequestId],
        now: Millis,
    ) -> Result<Vec<bool>, GateError> {
        let (stream, _) = self.stream(session, no)?.ok_or(GateError::UnknownStream)?;
        if stream.origin.request_id().is_none() {
            return Err(GateError::NotARequestStream);
        }
        if !stream.state.takes_events() {
            return Err(GateError::StreamFinished);
        }
        if stream.batch.len().saturating_add(ids.len()) >= MAX_BATCH_REQUESTS {
            return Err(GateError::BatchTooLarge);
        }
        let cost: u64 = ids.iter().map(claim_cost).sum();
        if self.room_for(cost, now, &session.id)?.shortfall > 0 {
            return Err(GateError::OverBudget);
        }
        let mut claimed = Vec::with_capacity(ids.len());
        for id in ids {
            claimed.push(self.store.claim_request(&session.id, id)?);
        }
        let joined: Vec<RequestId> =
            ids.iter().zip(&claimed).filter(|(_, c)| **c).map(|(id, _)| id.clone()).collect();
        if joined.is_empty() {
            return Ok(claimed);
        }
        self.retry(|g| {
            let Some((mut stream, version)) = g.stream(session, no)? else {
                return Err(GateError::UnknownStream);
            };
            // Joined by an earlier attempt whose save committed but answered `cas-failed`.
            if stream.batch.ends_with(&joined) {
                return Ok(Some(()));
            }
            stream.batch.extend(joined.iter().cloned());
            if g.store.save_stream(&session.id, &stream, version)? {
                return Ok(Some(()));
            }
            Ok(None)
        })?;
        Ok(claimed)
    }

    fn release_stream_inner(&mut self, session: &str, no: StreamNo) -> Result<(), GateError> {
        let (s, _) = self.session(session)?;
        let (stream, _) = self.stream(&s, no)?.ok_or(GateError::UnknownStream)?;
        if stream.origin.request_id().is_none() {
            return Err(GateError::NotARequestStream);
        }
        if stream.last_seq > 0 || !stream.state.takes_events() {
            return Err(GateError::StreamFinished);
        }
        self.retry(|g| {
            let (mut s, version) = g.session(session)?;
            if !s.streams.contains(&no) {
                return Ok(Some(()));
            }
            s.streams.retain(|n| *n != no);
            if g.store.save_session(&s, version)? {
                return Ok(Some(()));
            }
            Ok(None)
        })?;
        self.store.remove_stream(session, &stream)?;
        Ok(())
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

    fn open_session_inner(
        &mut self,
        session: &str,
        now: Millis,
        entropy: [u8; 8],
    ) -> Result<SessionInfo, GateError> {
        validate_session_id(session)?;
        self.retry(|g| {
            let Some((old, version)) = g.store.session(session)? else {
                let mut reclaimed = None;
                if g.store.session_count()? >= u64::from(g.config.max_sessions) {
                    let id = g.reclaim_idlest_session(now, session)?;
                    reclaimed = Some(id.ok_or(GateError::TooManySessions)?);
                }
                let meta = SessionMeta::new(session, next_epoch(entropy, None), now);
                let room = g.make_room(Budget::Total, session_cost(session), now, session)?;
                if room.shortfall > 0 {
                    return Err(GateError::OverBudget);
                }
                reclaimed = reclaimed.or(room.reclaimed);
                g.store.create_session(&meta)?;
                return Ok(Some(SessionInfo { epoch: meta.epoch, reclaimed }));
            };
            let meta = SessionMeta {
                epoch: next_epoch(entropy, Some(old.epoch)),
                standalone: None,
                streams: Vec::new(),
                last_active: now,
                ..old.clone()
            };
            if g.store.save_session(&meta, version)? {
                for no in &old.streams {
                    if let Some((stream, _)) = g.store.stream(session, *no)? {
                        g.store.remove_stream(session, &stream)?;
                    }
                }
                return Ok(Some(SessionInfo { epoch: meta.epoch, reclaimed: None }));
            }
            Ok(None)
        })
    }

    /// The stream records a session lists.
    fn streams_of(&mut self, session: &SessionMeta) -> Result<Vec<StreamMeta>, GateError> {
        let mut streams = Vec::with_capacity(session.streams.len());
        for no in &session.streams {
            if let Some((st, _)) = self.stream(session, *no)? {
                streams.push(st);
            }
        }
        Ok(streams)
    }

    /// What choosing a stream to drop needs of each stream the session lists (this epoch's).
    fn stream_summaries(&mut self, session: &SessionMeta) -> Result<Vec<StreamSummary>, GateError> {
        let mut streams = self.store.stream_summaries(&session.id, &session.streams)?;
        streams.retain(|st| st.epoch == session.epoch);
        Ok(streams)
    }

    fn open_stream_in(
        &mut self,
        session: &SessionMeta,
        origin: Origin,
        now: Millis,
    ) -> Result<Opened, GateError> {
        if self.room_for(stream_cost(&origin), now, &session.id)?.shortfall > 0 {
            return Err(GateError::OverBudget);
        }
        if let Origin::Request(id) = &origin
            && !self.store.claim_request(&session.id, id)?
        {
            return Err(GateError::DuplicateRequestId);
        }
        let no = self.store.allocate_stream_no(&session.id)?;
        let meta = StreamMeta::new(no, session.epoch, session.tag, origin, now, self.config.lease_ms);
        self.store.create_stream(&session.id, &meta)?;
        match self.list_stream(session, &meta, now) {
            Ok(superseded) => {
                if let Some(previous) = superseded {
                    self.end_stream(session, previous, StreamState::Superseded)?;
                }
            }
            Err(e) => {
                self.store.remove_stream(&session.id, &meta)?;
                return Err(e);
            }
        }
        let id = EventId::mint(session.epoch, session.tag, no, 0, self.key.as_ref());
        let priming = Event {
            id: id.format(),
            stream: no,
            seq: 0,
            data: String::new(),
            retry_ms: self.config.retry_ms,
            terminal: false,
        };
        Ok(Opened { stream: no, attachment: meta.attachment, priming })
    }

    /// Adds a new stream to its session's list, making room by dropping the oldest tombstone
    /// (expiring streams kept past retention first), else the oldest terminal-sent stream.
    /// Returns the standalone stream it replaces.
    fn list_stream(
        &mut self,
        session: &SessionMeta,
        stream: &StreamMeta,
        now: Millis,
    ) -> Result<Option<StreamNo>, GateError> {
        self.retry(|g| {
            let (mut s, version) = g.session(&session.id)?;
            if s.epoch != session.epoch {
                return Err(GateError::UnknownSession);
            }
            // Listed by an earlier attempt whose save committed but answered `cas-failed`
            // (Spin's Redis backend): done, though the stream it replaced is not known.
            if s.streams.contains(&stream.no) {
                return Ok(Some(None));
            }
            if s.streams.len() >= g.config.max_streams_per_session as usize {
                let mut listed = g.stream_summaries(&s)?;
                let retention = g.config.retention_ms;
                // A session answering many calls keeps each answered one resumable until room
                // is needed; a call still running is never dropped. One pass: expire, then
                // note the oldest tombstone and the oldest answered stream.
                let (mut tombstone, mut answered) = (None, None);
                for st in &mut listed {
                    if st.expired(now, retention) {
                        g.end_stream(&s, st.no, StreamState::Aborted)?;
                        st.state = StreamState::Aborted;
                        g.counters.expired_streams += 1;
                    }
                    let oldest = match st.state {
                        state if !state.is_live() => &mut tombstone,
                        StreamState::TerminalSent => &mut answered,
                        _ => continue,
                    };
                    let key = (st.last_active, st.no);
                    if oldest.is_none_or(|o| key < o) {
                        *oldest = Some(key);
                    }
                }
                let (_, gone) = tombstone.or(answered).ok_or(GateError::TooManyStreams)?;
                if let Some((dropped, _)) = g.stream(&s, gone)? {
                    g.store.remove_stream(&s.id, &dropped)?;
                }
                if listed.len() == s.streams.len() {
                    s.streams.retain(|no| *no != gone);
                } else {
                    // Numbers whose record is gone (an instance died between two store calls).
                    let mut present: Vec<StreamNo> = listed.iter().map(|st| st.no).collect();
                    present.sort_unstable();
                    s.streams.retain(|no| *no != gone && present.binary_search(no).is_ok());
                }
            }
            s.streams.push(stream.no);
            let previous = match stream.origin {
                Origin::Standalone => s.standalone.replace(stream.no),
                Origin::Request(_) => None,
            };
            s.last_active = now;
            if g.store.save_session(&s, version)? {
                return Ok(Some(previous));
            }
            Ok(None)
        })
    }

    /// Moves a live stream to a finished state and frees its buffer; the record stays as a
    /// tombstone. Returns whether this call finished it.
    pub(crate) fn end_stream(
        &mut self,
        session: &SessionMeta,
        no: StreamNo,
        state: StreamState,
    ) -> Result<bool, GateError> {
        self.retry(|g| {
            let Some((mut stream, version)) = g.stream(session, no)? else {
                return Ok(Some(false));
            };
            if !stream.state.is_live() {
                return Ok(Some(false));
            }
            let freed = stream.finish(state);
            if g.store.save_stream(&session.id, &stream, version)? {
                g.store.delete_events(&session.id, no, &freed)?;
                return Ok(Some(true));
            }
            Ok(None)
        })
    }

    fn record(
        &mut self,
        session: &str,
        no: StreamNo,
        data: String,
        terminal: bool,
        now: Millis,
    ) -> Result<Recorded, GateError> {
        validate_session_id(session)?;
        // Bytes the budgets lack for this event once nothing else can be freed: the stream's
        // own oldest events go, or if they are too few, the event is not buffered. (A store
        // that does not count bytes needs no look at the session: the stream names its epoch.)
        let shortfall = match self.store.bytes_held(Some(session))? {
            None => 0,
            Some(_) => {
                self.store.session_stamp(session)?.ok_or(GateError::UnknownSession)?;
                self.room_for(event_cost(&data), now, session)?.shortfall
            }
        };
        let event = NewEvent { terminal, now, shortfall };
        let Some(appended) = self.append(session, no, data, &event)? else {
            return Err(match self.store.session_stamp(session)? {
                None => GateError::UnknownSession,
                Some(_) => GateError::UnknownStream,
            });
        };
        match appended {
            Appended::Event { seq, id, evicted } => {
                self.store.delete_events(session, no, &evicted)?;
                self.counters.evicted_events += evicted.len() as u64;
                self.counters.events_emitted += 1;
                Ok(Recorded { id, seq })
            }
            Appended::Expired(freed) => {
                self.store.delete_events(session, no, &freed)?;
                self.counters.expired_streams += 1;
                Err(GateError::StreamFinished)
            }
            Appended::Refused(e) => Err(e),
        }
    }

    /// Appends an event to its stream: one edit, in place on the memory store; the store
    /// writes the event's data before it publishes the record. `None`: no such stream.
    fn append(
        &mut self,
        session: &str,
        no: StreamNo,
        data: String,
        event: &NewEvent,
    ) -> Result<Option<Appended>, GateError> {
        let NewEvent { terminal, now, shortfall } = *event;
        let len = data.len();
        let (config, signing) = (&self.config, self.key.as_ref());
        let signed = signing.is_some();
        Ok(self.store.append_event(session, no, data, now, &mut |stream, key, data_len| {
            if terminal && stream.origin == Origin::Standalone {
                return Edit::Keep(Appended::Refused(GateError::NotARequestStream));
            }
            if stream.expired(now, config.retention_ms) || stream.abandoned(now, config.max_detached()) {
                return Edit::Save(Appended::Expired(stream.finish(StreamState::Aborted)));
            }
            if !stream.state.takes_events() {
                return Edit::Keep(Appended::Refused(GateError::StreamFinished));
            }
            let seq = stream.push(key);
            let id = EventId::mint(stream.epoch, stream.tag, no, seq, signing).format();
            let cost = u32::try_from(id.len() + len).unwrap_or(u32::MAX);
            stream.buffered_bytes = stream.buffered_bytes.saturating_add(u64::from(cost));
            stream.last_active = now;
            stream.lease_until = now.saturating_add(config.lease_ms);
            if terminal {
                stream.delivered = stream.state == StreamState::Open;
                stream.state = StreamState::TerminalSent;
                stream.terminal_seq = Some(seq);
            }
            let mut evicted = Vec::new();
            let mut owed = shortfall;
            while stream.buffered() > u64::from(config.max_events_per_stream)
                || stream.buffered_bytes > config.max_bytes_per_stream
                || owed > 0
            {
                let Some(old) = stream.pop_oldest() else { break };
                let old_cost = if old.seq == seq {
                    cost
                } else {
                    let len = EventId::formatted_len(no, old.seq, signed) as u64 + data_len(old);
                    u32::try_from(len).unwrap_or(u32::MAX)
                };
                stream.buffered_bytes = stream.buffered_bytes.saturating_sub(u64::from(old_cost));
                evicted.push(old);
                // An older id is no longer than this one: this undercounts what is freed.
                let freed = u64::from(old_cost).saturating_sub(id.len() as u64) + EVENT_OVERHEAD;
                owed = owed.saturating_sub(freed);
            }
            Edit::Append(Appended::Event { seq, id, evicted })
        })?)
    }

    fn detach_inner(
        &mut self,
        session: &str,
        no: StreamNo,
        attachment: u32,
        now: Millis,
    ) -> Result<(), GateError> {
        validate_session_id(session)?;
        self.retry(|g| {
            let Some((mut stream, version)) = g.store.stream(session, no)? else {
                return Ok(Some(()));
            };
            if stream.attachment != attachment || !stream.state.is_live() {
                return Ok(Some(()));
            }
            if stream.state == StreamState::Open {
                stream.state = StreamState::Resumable;
                stream.detached_at = Some(now);
            }
            stream.last_active = now;
            if g.store.save_stream(session, &stream, version)? {
                return Ok(Some(()));
            }
            Ok(None)
        })
    }

    fn abort_inner(&mut self, session: &str, no: StreamNo) -> Result<(), GateError> {
        let (s, _) = self.session(session)?;
        if self.stream(&s, no)?.is_none() {
            return Err(GateError::UnknownStream);
        }
        self.end_stream(&s, no, StreamState::Cancelled)?;
        Ok(())
    }

    fn abort_request_inner(&mut self, session: &str, id: &RequestId) -> Result<bool, GateError> {
        let (s, _) = self.session(session)?;
        let Some(no) =
            self.streams_of(&s)?.into_iter().find(|st| st.requests().any(|r| r == id)).map(|st| st.no)
        else {
            return Ok(false);
        };
        self.retry(|g| {
            let Some((mut stream, version)) = g.stream(&s, no)? else { return Ok(Some(false)) };
            if !stream.state.is_live() {
                return Ok(Some(false));
            }
            if !stream.cancelled.contains(id) {
                stream.cancelled.push(id.clone());
            }
            // One request, or every request of a batch, cancelled: the stream ends.
            if stream.requests().all(|r| stream.cancelled.contains(r)) {
                let freed = stream.finish(StreamState::Cancelled);
                if g.store.save_stream(&s.id, &stream, version)? {
                    g.store.delete_events(&s.id, no, &freed)?;
                    return Ok(Some(true));
                }
                return Ok(None);
            }
            Ok(g.store.save_stream(&s.id, &stream, version)?.then_some(true))
        })
    }

    /// The data of the buffered events after `after`, as events to write.
    fn replay(
        &mut self,
        session: &SessionMeta,
        stream: &StreamMeta,
        after: Seq,
    ) -> Result<Option<Vec<Event>>, GateError> {
        let events: Vec<EventRef> = stream.buffered_after(after).collect();
        let Some(data) = self.store.event_data(&session.id, stream.no, &events)? else {
            return Ok(None);
        };
        let events = events
            .iter()
            .map(|e| e.seq)
            .zip(data)
            .map(|(seq, data)| Event {
                id: EventId::mint(session.epoch, session.tag, stream.no, seq, self.key.as_ref()).format(),
                stream: stream.no,
                seq,
                data,
                retry_ms: None,
                terminal: Some(seq) == stream.terminal_seq,
            })
            .collect();
        Ok(Some(events))
    }

    fn poll_inner(
        &mut self,
        session: &str,
        no: StreamNo,
        attachment: u32,
        after: Seq,
        now: Millis,
    ) -> Result<Polled, GateError> {
        let (s, _) = self.session(session)?;
        self.retry(|g| {
            let Some((stream, _)) = g.stream(&s, no)? else {
                return Err(GateError::UnknownStream);
            };
            if stream.attachment != attachment
                || !stream.state.is_live()
                || after.saturating_add(1) < stream.first_buffered
            {
                return Ok(Some(Polled { events: Vec::new(), done: true, stranded: Vec::new() }));
            }
            // Data missing under a listed key means the record moved on since the load.
            if let Some(events) = g.replay(&s, &stream, after)? {
                let stranded = if stream.writer_lost(now) { stream.stranded_requests() } else { Vec::new() };
                let done = !stranded.is_empty()
                    || stream.terminal_seq.is_some() && events.last().is_none_or(|e| e.terminal);
                return Ok(Some(Polled { events, done, stranded }));
            }
            Ok(None)
        })
    }

    fn renew_lease_inner(&mut self, session: &str, no: StreamNo, now: Millis) -> Result<(), GateError> {
        let (s, _) = self.session(session)?;
        self.retry(|g| {
            let Some((mut stream, version)) = g.stream(&s, no)? else {
                return Err(GateError::UnknownStream);
            };
            if stream.abandoned(now, g.config.max_detached()) {
                // Nobody came back for the call in time: it is given up, and a later reconnect
                // gets the stranded error.
                let freed = stream.finish(StreamState::Aborted);
                if g.store.save_stream(session, &stream, version)? {
                    g.store.delete_events(session, no, &freed)?;
                    g.counters.expired_streams += 1;
                    return Err(GateError::StreamFinished);
                }
                return Ok(None);
            }
            if !stream.state.takes_events() {
                return Err(GateError::StreamFinished);
            }
            stream.lease_until = now.saturating_add(g.config.lease_ms);
            if g.store.save_stream(session, &stream, version)? {
                return Ok(Some(()));
            }
            Ok(None)
        })
    }

    fn reconnect_inner(
        &mut self,
        session: &str,
        cursor: &[u8],
        origin: Origin,
        now: Millis,
    ) -> Result<Decision, GateError> {
        let (s, _) = self.session(session)?;
        self.retry(|g| {
            let reconnect = Reconnect {
                cursor,
                origin: &origin,
                session: &s,
                key: g.key.as_ref(),
                now,
                retention: g.config.retention_ms,
                max_detached: g.config.max_detached(),
            };
            let store = &mut g.store;
            match decide(&reconnect, |no| store.stream(session, no))? {
                Verdict::Resume { mut stream, version, after, stranded } => {
                    let Some(events) = g.replay(&s, &stream, after)? else { return Ok(None) };
                    stream.attachment = stream.attachment.wrapping_add(1);
                    if stream.state == StreamState::Resumable {
                        stream.state = StreamState::Open;
                        stream.detached_at = None;
                    }
                    // The replay ends with the terminal: this connection gets the result.
                    stream.delivered |= stream.terminal_seq.is_some();
                    stream.last_active = now;
                    // The writer is gone: what it stored is replayed, and the stream ends here.
                    let freed =
                        if stranded.is_empty() { Vec::new() } else { stream.finish(StreamState::Aborted) };
                    if !g.store.save_stream(session, &stream, version)? {
                        return Ok(None);
                    }
                    g.store.delete_events(session, stream.no, &freed)?;
                    g.counters.resumes += 1;
                    g.counters.events_replayed += events.len() as u64;
                    Ok(Some(Decision::Resume(Resumption {
                        stream: stream.no,
                        attachment: stream.attachment,
                        cursor_seq: after,
                        includes_terminal: stream.terminal_seq.is_some(),
                        events,
                        stranded,
                    })))
                }
                Verdict::Fresh { reason, source } => {
                    // Refused before the source changes: a failed reconnect changes nothing.
                    // (`too-many-streams` cannot follow: a source that ends frees its slot.)
                    if g.room_for(stream_cost(&origin), now, session)?.shortfall > 0 {
                        return Err(GateError::OverBudget);
                    }
                    let mut stranded = Vec::new();
                    if let Some(mut source) = source {
                        if let Some(state) = source.becomes {
                            let freed = source.stream.finish(state);
                            if !g.store.save_stream(session, &source.stream, source.version)? {
                                return Ok(None);
                            }
                            g.store.delete_events(session, source.stream.no, &freed)?;
                        }
                        stranded = source.stranded;
                    }
                    let opened = g.open_stream_in(&s, origin.clone(), now)?;
                    g.counters.count_fresh(reason);
                    Ok(Some(Decision::Fresh(FreshStart { reason, opened, stranded })))
                }
            }
        })
    }
}

fn signing_key(config: &Config) -> Result<Option<SigningKey>, GateError> {
    config.validate()?;
    match &config.signing_key {
        None => Ok(None),
        Some(k) => {
            SigningKey::new(k).map(Some).ok_or_else(|| GateError::InvalidConfig("signing-key refused".into()))
        }
    }
}
