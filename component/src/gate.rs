//! The gate: sessions, streams and the event log, driven by the host's calls.
//!
//! Every operation takes `now` (and `open_session` takes entropy) from the caller; the gate
//! reads no clock, draws no randomness and does no I/O. The reconnect decision itself lives in
//! `decision`; this module applies it and keeps the bounds.

use crate::config::{Config, Millis};
use crate::counters::Counters;
use crate::decision::{Reconnect, StaleReason, Verdict, decide};
use crate::error::GateError;
use crate::event_id::{EventId, SigningKey};
use crate::session::{SessionMeta, next_epoch, validate_session_id};
use crate::store::{EVENT_OVERHEAD, MemoryStore, Store, event_cost, session_cost, stream_cost};
use crate::stream::{Buffered, EventKey, Origin, RequestId, Seq, StreamMeta, StreamNo, StreamState};

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
    /// this request with the stranded error and closes the response. The stream is aborted.
    pub stranded: Option<RequestId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreshStart {
    pub reason: StaleReason,
    pub opened: Opened,
    /// A request the client provably still waits for; the host answers it with an error.
    pub stranded: Option<RequestId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Resume(Resumption),
    Fresh(FreshStart),
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
    /// this request with the stranded error and stops following (`done` is set).
    pub stranded: Option<RequestId>,
}

/// What `make_room` achieved: the bytes still missing, and a session it reclaimed.
struct Room {
    shortfall: u64,
    reclaimed: Option<String>,
}

/// The two byte bounds `make_room` keeps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Budget {
    /// `max-bytes-per-session`, for the session an operation works in.
    Session,
    /// `max-total-bytes`.
    Total,
}

/// A lost compare-and-swap race is retried from a fresh load this many times.
const MAX_ATTEMPTS: usize = 64;

fn contention() -> GateError {
    GateError::Store(format!("record still contended after {MAX_ATTEMPTS} attempts"))
}
/// The stale-cursor gate over a state store.
#[derive(Debug)]
pub struct Gate<S: Store = MemoryStore> {
    config: Config,
    key: Option<SigningKey>,
    store: S,
    counters: Counters,
}

impl Gate<MemoryStore> {
    /// A gate keeping its state in memory.
    pub fn in_memory(config: Config) -> Result<Self, GateError> {
        Self::new(config, MemoryStore::new())
    }
}

impl<S: Store> Gate<S> {
    pub fn new(config: Config, store: S) -> Result<Self, GateError> {
        let key = signing_key(&config)?;
        Ok(Self { config, key, store, counters: Counters::default() })
    }

    /// Replaces the configuration; bounds apply from the next operation on. A new signing key
    /// makes every id minted under the old one `forged`.
    pub fn configure(&mut self, config: Config) -> Result<(), GateError> {
        let key = signing_key(&config)?;
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

    /// Records an event on a stream and returns it with its id.
    pub fn emit(
        &mut self,
        session: &str,
        stream: StreamNo,
        data: String,
        now: Millis,
    ) -> Result<Event, GateError> {
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
    ) -> Result<Event, GateError> {
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

    /// Aborts the stream of a JSON-RPC request (`notifications/cancelled`); `false` when the
    /// session has no live stream for that request.
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
    fn stream(
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
        for _ in 0..MAX_ATTEMPTS {
            let Some((old, version)) = self.store.session(session)? else {
                let mut reclaimed = None;
                if self.store.session_count()? >= u64::from(self.config.max_sessions) {
                    let id = self.reclaim_idlest_session(now, session)?;
                    reclaimed = Some(id.ok_or(GateError::TooManySessions)?);
                }
                let meta = SessionMeta::new(session, next_epoch(entropy, None), now);
                let room = self.make_room(Budget::Total, session_cost(session), now, session)?;
                if room.shortfall > 0 {
                    return Err(GateError::OverBudget);
                }
                reclaimed = reclaimed.or(room.reclaimed);
                self.store.create_session(&meta)?;
                return Ok(SessionInfo { epoch: meta.epoch, reclaimed });
            };
            let meta = SessionMeta {
                epoch: next_epoch(entropy, Some(old.epoch)),
                standalone: None,
                streams: Vec::new(),
                last_active: now,
                ..old.clone()
            };
            if self.store.save_session(&meta, version)? {
                for no in &old.streams {
                    if let Some((stream, _)) = self.store.stream(session, *no)? {
                        self.store.remove_stream(session, &stream)?;
                    }
                }
                return Ok(SessionInfo { epoch: meta.epoch, reclaimed: None });
            }
        }
        Err(contention())
    }

    /// Removes the session idle longest that holds no work, as the store nominates it (its
    /// index, or its queue, decides; see `Store::idlest_session`). `None` when every session
    /// holds work.
    fn reclaim_idlest_session(&mut self, now: Millis, except: &str) -> Result<Option<String>, GateError> {
        let retention = self.config.retention_ms;
        let Some(id) = self.store.idlest_session(now, retention, except)? else { return Ok(None) };
        let Some((victim, _)) = self.store.session(&id)? else { return Ok(None) };
        self.store.remove_session(&victim)?;
        self.counters.reclaimed_sessions += 1;
        Ok(Some(id))
    }

    /// Frees bytes until `need` more fit in both the session's `max-bytes-per-session` and
    /// `max-total-bytes`; see [`Gate::make_room`].
    fn room_for(&mut self, need: u64, now: Millis, session: &str) -> Result<Room, GateError> {
        let own = self.make_room(Budget::Session, need, now, session)?;
        let all = self.make_room(Budget::Total, need, now, session)?;
        Ok(Room { shortfall: own.shortfall.max(all.shortfall), reclaimed: all.reclaimed })
    }

    /// Frees bytes until `need` more fit in `budget`: answered streams' buffers first (within
    /// the session for its own budget), then, for the total, the session idle longest that
    /// holds no work (never `session`).
    fn make_room(
        &mut self,
        budget: Budget,
        need: u64,
        now: Millis,
        session: &str,
    ) -> Result<Room, GateError> {
        let (scope, limit) = match budget {
            Budget::Session => (Some(session), self.config.max_bytes_per_session),
            Budget::Total => (None, self.config.max_total_bytes),
        };
        let mut reclaimed = None;
        let mut shortfall = 0;
        for _ in 0..MAX_ATTEMPTS {
            let Some(held) = self.store.bytes_held(scope)? else {
                return Ok(Room { shortfall: 0, reclaimed });
            };
            shortfall = held.saturating_add(need).saturating_sub(limit);
            if shortfall == 0 {
                return Ok(Room { shortfall, reclaimed });
            }
            if let Some((owner, no)) = self.store.oldest_answered_buffer(scope)? {
                let Some((s, _)) = self.store.session(&owner)? else { continue };
                let evicted = self.stream(&s, no)?.map_or(0, |(st, _)| st.buffer.len() as u64);
                if self.end_stream(&s, no, StreamState::Aborted)? {
                    self.counters.evicted_events += evicted;
                }
                continue;
            }
            if budget == Budget::Session {
                break;
            }
            match self.reclaim_idlest_session(now, session)? {
                Some(id) => reclaimed = Some(id),
                None => break,
            }
        }
        Ok(Room { shortfall, reclaimed })
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
        let meta = StreamMeta::new(no, session.epoch, origin, now, self.config.lease_ms);
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
        for _ in 0..MAX_ATTEMPTS {
            let (mut s, version) = self.session(&session.id)?;
            if s.epoch != session.epoch {
                return Err(GateError::UnknownSession);
            }
            // Listed by an earlier attempt whose save committed but answered `cas-failed`
            // (Spin's Redis backend): done, though the stream it replaced is not known.
            if s.streams.contains(&stream.no) {
                return Ok(None);
            }
            if s.streams.len() >= self.config.max_streams_per_session as usize {
                let mut listed = self.streams_of(&s)?;
                let retention = self.config.retention_ms;
                for st in listed.iter_mut().filter(|st| st.expired(now, retention)) {
                    self.end_stream(&s, st.no, StreamState::Aborted)?;
                    st.state = StreamState::Aborted;
                    self.counters.expired_streams += 1;
                }
                // A session answering many calls keeps each answered one resumable until room
                // is needed; a call still running is never dropped.
                let oldest = |state: fn(StreamState) -> bool| {
                    listed.iter().filter(|st| state(st.state)).min_by_key(|st| (st.last_active, st.no))
                };
                let dropped = oldest(|state| !state.is_live())
                    .or_else(|| oldest(|state| state == StreamState::TerminalSent))
                    .ok_or(GateError::TooManyStreams)?;
                self.store.remove_stream(&s.id, dropped)?;
                let gone = dropped.no;
                let present: Vec<StreamNo> = listed.iter().map(|st| st.no).collect();
                s.streams.retain(|no| *no != gone && present.contains(no));
            }
            s.streams.push(stream.no);
            let previous = match stream.origin {
                Origin::Standalone => s.standalone.replace(stream.no),
                Origin::Request(_) => None,
            };
            s.last_active = now;
            if self.store.save_session(&s, version)? {
                return Ok(previous);
            }
        }
        Err(contention())
    }

    /// Moves a live stream to a finished state and frees its buffer; the record stays as a
    /// tombstone. Returns whether this call finished it.
    fn end_stream(
        &mut self,
        session: &SessionMeta,
        no: StreamNo,
        state: StreamState,
    ) -> Result<bool, GateError> {
        for _ in 0..MAX_ATTEMPTS {
            let Some((mut stream, version)) = self.stream(session, no)? else {
                return Ok(false);
            };
            if !stream.state.is_live() {
                return Ok(false);
            }
            let freed = stream.finish(state);
            if self.store.save_stream(&session.id, &stream, version)? {
                self.store.delete_events(&session.id, no, &freed)?;
                return Ok(true);
            }
        }
        Err(contention())
    }

    fn record(
        &mut self,
        session: &str,
        no: StreamNo,
        data: String,
        terminal: bool,
        now: Millis,
    ) -> Result<Event, GateError> {
        let (s, _) = self.session(session)?;
        let mut loaded = self.stream(&s, no)?.ok_or(GateError::UnknownStream)?;
        if terminal && loaded.0.origin == Origin::Standalone {
            return Err(GateError::NotARequestStream);
        }
        // Bytes the budgets lack for this event once nothing else can be freed: the stream's
        // own oldest events go, or if they are too few, the event is not buffered.
        let shortfall = self.room_for(event_cost(&data), now, session)?.shortfall;
        let mut key = None;
        for _ in 0..MAX_ATTEMPTS {
            let (mut stream, version) = loaded;
            if stream.expired(now, self.config.retention_ms) {
                if self.end_stream(&s, no, StreamState::Aborted)? {
                    self.counters.expired_streams += 1;
                }
                stream.state = StreamState::Aborted;
            }
            if !stream.state.takes_events() {
                if let Some(k) = key {
                    self.store.delete_events(session, no, &[k])?;
                }
                return Err(GateError::StreamFinished);
            }
            let k = match key {
                Some(k) => k,
                None => *key.insert(self.store.put_event(session, no, &data)?),
            };

            let seq = stream.last_seq.saturating_add(1);
            let id = EventId::mint(s.epoch, s.tag, no, seq, self.key.as_ref()).format();
            let cost = u32::try_from(id.len() + data.len()).unwrap_or(u32::MAX);
            stream.last_seq = seq;
            stream.buffer.push_back(Buffered { key: k, cost });
            stream.buffered_bytes = stream.buffered_bytes.saturating_add(u64::from(cost));
            stream.last_active = now;
            stream.lease_until = now.saturating_add(self.config.lease_ms);
            if terminal {
                stream.state = StreamState::TerminalSent;
                stream.terminal_seq = Some(seq);
            }
            let mut evicted = Vec::new();
            let mut owed = shortfall;
            while stream.buffer.len() > self.config.max_events_per_stream as usize
                || stream.buffered_bytes > self.config.max_bytes_per_stream
                || owed > 0
            {
                let Some(old) = stream.buffer.pop_front() else { break };
                stream.first_buffered = stream.first_buffered.saturating_add(1);
                stream.buffered_bytes = stream.buffered_bytes.saturating_sub(u64::from(old.cost));
                evicted.push(old.key);
                // An older id is no longer than this one: this undercounts what is freed.
                let freed = u64::from(old.cost).saturating_sub(id.len() as u64) + EVENT_OVERHEAD;
                owed = owed.saturating_sub(freed);
            }
            let saved = self.store.save_stream(session, &stream, version)?;
            let fresh = if saved { None } else { self.stream(&s, no)? };
            // A store may answer `cas-failed` after it committed (Spin's Redis backend): the
            // write was this one if the stream lists this event's key at its number.
            if saved || fresh.as_ref().is_some_and(|(st, _)| st.seq_of(k) == Some(seq)) {
                self.store.delete_events(session, no, &evicted)?;
                self.counters.evicted_events += evicted.len() as u64;
                self.counters.events_emitted += 1;
                return Ok(Event { id, stream: no, seq, data, retry_ms: None, terminal });
            }
            match fresh {
                Some(fresh) => loaded = fresh,
                None => {
                    self.store.delete_events(session, no, &[k])?;
                    return Err(GateError::UnknownStream);
                }
            }
        }
        if let Some(k) = key {
            self.store.delete_events(session, no, &[k])?;
        }
        Err(contention())
    }

    fn detach_inner(
        &mut self,
        session: &str,
        no: StreamNo,
        attachment: u32,
        now: Millis,
    ) -> Result<(), GateError> {
        validate_session_id(session)?;
        for _ in 0..MAX_ATTEMPTS {
            let Some((mut stream, version)) = self.store.stream(session, no)? else {
                return Ok(());
            };
            if stream.attachment != attachment || !stream.state.is_live() {
                return Ok(());
            }
            if stream.state == StreamState::Open {
                stream.state = StreamState::Resumable;
            }
            stream.last_active = now;
            if self.store.save_stream(session, &stream, version)? {
                return Ok(());
            }
        }
        Err(contention())
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
        for stream in self.streams_of(&s)? {
            if stream.origin.request_id() == Some(id) {
                return self.end_stream(&s, stream.no, StreamState::Cancelled);
            }
        }
        Ok(false)
    }

    /// The data of the buffered events after `after`, as events to write.
    fn replay(
        &mut self,
        session: &SessionMeta,
        stream: &StreamMeta,
        after: Seq,
    ) -> Result<Option<Vec<Event>>, GateError> {
        let (seqs, keys): (Vec<Seq>, Vec<EventKey>) =
            stream.buffered_after(after).map(|(seq, b)| (seq, b.key)).unzip();
        let Some(data) = self.store.event_data(&session.id, stream.no, &keys)? else {
            return Ok(None);
        };
        let events = seqs
            .into_iter()
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
        for _ in 0..MAX_ATTEMPTS {
            let Some((stream, _)) = self.stream(&s, no)? else {
                return Err(GateError::UnknownStream);
            };
            if stream.attachment != attachment
                || !stream.state.is_live()
                || after.saturating_add(1) < stream.first_buffered
            {
                return Ok(Polled { events: Vec::new(), done: true, stranded: None });
            }
            // Data missing under a listed key means the record moved on since the load.
            if let Some(events) = self.replay(&s, &stream, after)? {
                let stranded = stream.writer_lost(now).then(|| stream.stranded_request()).flatten();
                let done = stranded.is_some()
                    || stream.terminal_seq.is_some() && events.last().is_none_or(|e| e.terminal);
                return Ok(Polled { events, done, stranded });
            }
        }
        Err(contention())
    }

    fn renew_lease_inner(&mut self, session: &str, no: StreamNo, now: Millis) -> Result<(), GateError> {
        let (s, _) = self.session(session)?;
        for _ in 0..MAX_ATTEMPTS {
            let Some((mut stream, version)) = self.stream(&s, no)? else {
                return Err(GateError::UnknownStream);
            };
            if !stream.state.takes_events() {
                return Err(GateError::StreamFinished);
            }
            stream.lease_until = now.saturating_add(self.config.lease_ms);
            if self.store.save_stream(session, &stream, version)? {
                return Ok(());
            }
        }
        Err(contention())
    }

    fn reconnect_inner(
        &mut self,
        session: &str,
        cursor: &[u8],
        origin: Origin,
        now: Millis,
    ) -> Result<Decision, GateError> {
        let (s, _) = self.session(session)?;
        for _ in 0..MAX_ATTEMPTS {
            let reconnect = Reconnect {
                cursor,
                origin: &origin,
                session: &s,
                key: self.key.as_ref(),
                now,
                retention: self.config.retention_ms,
            };
            let mut version = None;
            let store = &mut self.store;
            let verdict = decide(&reconnect, |no| {
                Ok(store.stream(session, no)?.map(|(st, v)| {
                    version = Some(v);
                    st
                }))
            })?;
            match verdict {
                Verdict::Resume { mut stream, after, stranded } => {
                    let Some(version) = version else { continue };
                    let Some(events) = self.replay(&s, &stream, after)? else { continue };
                    stream.attachment = stream.attachment.wrapping_add(1);
                    if stream.state == StreamState::Resumable {
                        stream.state = StreamState::Open;
                    }
                    stream.last_active = now;
                    // The writer is gone: what it stored is replayed, and the stream ends here.
                    let freed =
                        if stranded.is_some() { stream.finish(StreamState::Aborted) } else { Vec::new() };
                    if !self.store.save_stream(session, &stream, version)? {
                        continue;
                    }
                    self.store.delete_events(session, stream.no, &freed)?;
                    self.counters.resumes += 1;
                    self.counters.events_replayed += events.len() as u64;
                    return Ok(Decision::Resume(Resumption {
                        stream: stream.no,
                        attachment: stream.attachment,
                        cursor_seq: after,
                        includes_terminal: stream.terminal_seq.is_some(),
                        events,
                        stranded,
                    }));
                }
                Verdict::Fresh { reason, source } => {
                    // Refused before the source changes: a failed reconnect changes nothing.
                    // (`too-many-streams` cannot follow: a source that ends frees its slot.)
                    if self.room_for(stream_cost(&origin), now, session)?.shortfall > 0 {
                        return Err(GateError::OverBudget);
                    }
                    let mut stranded = None;
                    if let Some(mut source) = source {
                        if let Some(state) = source.becomes {
                            let Some(version) = version else { continue };
                            let freed = source.stream.finish(state);
                            if !self.store.save_stream(session, &source.stream, version)? {
                                continue;
                            }
                            self.store.delete_events(session, source.stream.no, &freed)?;
                        }
                        stranded = source.stranded;
                    }
                    let opened = self.open_stream_in(&s, origin, now)?;
                    self.counters.count_fresh(reason);
                    return Ok(Decision::Fresh(FreshStart { reason, opened, stranded }));
                }
            }
        }
        Err(contention())
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
