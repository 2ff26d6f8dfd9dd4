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
use crate::store::{MemoryStore, Store};
use crate::stream::{Origin, RequestId, Seq, StoredEvent, StreamMeta, StreamNo, StreamState};

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
    /// Every event after the cursor, in order, exactly once.
    pub events: Vec<Event>,
    /// The last event is the terminal one: close the response after writing it.
    pub includes_terminal: bool,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    pub epoch: u64,
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
        let r = self.session(session).and_then(|_| Ok(self.store.remove_session(session)?));
        self.counted(r)
    }

    /// Opens a stream of `origin` in the session and returns its priming event.
    pub fn open_stream(&mut self, session: &str, origin: Origin, now: Millis) -> Result<Opened, GateError> {
        let r = self.session(session).and_then(|mut s| self.open_stream_in(&mut s, origin, now));
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

    /// Decides a reconnect with `Last-Event-ID` = `cursor` (raw header bytes).
    pub fn reconnect(
        &mut self,
        session: &str,
        cursor: &[u8],
        origin: Origin,
        now: Millis,
    ) -> Result<Decision, GateError> {
        let r = self.reconnect_inner(session, cursor, origin, now);
        self.counted(r)
    }

    fn counted<T>(&mut self, r: Result<T, GateError>) -> Result<T, GateError> {
        if r.is_err() {
            self.counters.errors += 1;
        }
        r
    }

    fn session(&mut self, session: &str) -> Result<SessionMeta, GateError> {
        validate_session_id(session)?;
        self.store.session(session)?.ok_or(GateError::UnknownSession)
    }

    fn open_session_inner(
        &mut self,
        session: &str,
        now: Millis,
        entropy: [u8; 8],
    ) -> Result<SessionInfo, GateError> {
        validate_session_id(session)?;
        let meta = match self.store.session(session)? {
            Some(old) => {
                for stream in self.store.streams(session)? {
                    self.store.remove_stream(session, stream.no)?;
                }
                SessionMeta {
                    epoch: next_epoch(entropy, Some(old.epoch)),
                    standalone: None,
                    last_active: now,
                    ..old
                }
            }
            None => {
                if self.store.session_count()? >= u64::from(self.config.max_sessions) {
                    self.reclaim_idle_session(now)?;
                }
                SessionMeta::new(session, next_epoch(entropy, None), now)
            }
        };
        self.store.put_session(&meta)?;
        Ok(SessionInfo { epoch: meta.epoch })
    }

    /// Frees one slot by removing the longest-idle session with no attached stream.
    fn reclaim_idle_session(&mut self, now: Millis) -> Result<(), GateError> {
        let mut oldest: Option<(Millis, String)> = None;
        for s in self.store.sessions()? {
            let streams = self.store.streams(&s.id)?;
            if streams.iter().any(|st| st.state == StreamState::Open) {
                continue;
            }
            let last = streams.iter().map(|st| st.last_active).fold(s.last_active, Millis::max);
            if now.saturating_sub(last) > self.config.session_idle_ms
                // Ties break on the id: the choice never depends on the store's iteration order.
                && oldest.as_ref().is_none_or(|(t, id)| (last, &s.id) < (*t, id))
            {
                oldest = Some((last, s.id));
            }
        }
        let (_, id) = oldest.ok_or(GateError::TooManySessions)?;
        self.store.remove_session(&id)?;
        self.counters.reclaimed_sessions += 1;
        Ok(())
    }

    fn open_stream_in(
        &mut self,
        session: &mut SessionMeta,
        origin: Origin,
        now: Millis,
    ) -> Result<Opened, GateError> {
        let mut streams = self.store.streams(&session.id)?;
        let retention = self.config.retention_ms;
        for stream in streams.iter_mut().filter(|s| s.expired(now, retention)) {
            self.end_stream(&session.id, stream, StreamState::Aborted)?;
            self.counters.expired_streams += 1;
        }
        if let Origin::Request(id) = &origin
            && streams.iter().any(|s| s.origin.request_id() == Some(id))
        {
            return Err(GateError::DuplicateRequestId);
        }
        if streams.len() >= self.config.max_streams_per_session as usize {
            let tombstone = streams
                .iter()
                .filter(|s| !s.state.is_live())
                .min_by_key(|s| (s.last_active, s.no))
                .ok_or(GateError::TooManyStreams)?;
            self.store.remove_stream(&session.id, tombstone.no)?;
        }
        if origin == Origin::Standalone
            && let Some(previous) = session.standalone
            && let Some(previous) = streams.iter_mut().find(|s| s.no == previous && s.state.is_live())
        {
            self.end_stream(&session.id, previous, StreamState::Superseded)?;
        }

        let no = self.store.allocate_stream_no(&session.id)?;
        if origin == Origin::Standalone {
            session.standalone = Some(no);
        }
        session.last_active = now;
        self.store.put_session(session)?;
        let meta = StreamMeta::new(no, origin, now);
        self.store.put_stream(&session.id, &meta)?;

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

    /// Moves a stream to a finished state and frees its buffer; the record stays as a tombstone.
    fn end_stream(
        &mut self,
        session: &str,
        stream: &mut StreamMeta,
        state: StreamState,
    ) -> Result<(), GateError> {
        stream.state = state;
        stream.first_buffered = stream.last_seq.saturating_add(1);
        stream.buffered_events = 0;
        stream.buffered_bytes = 0;
        self.store.drop_events(session, stream.no)?;
        self.store.put_stream(session, stream)?;
        Ok(())
    }

    fn record(
        &mut self,
        session: &str,
        no: StreamNo,
        data: String,
        terminal: bool,
        now: Millis,
    ) -> Result<Event, GateError> {
        let s = self.session(session)?;
        let mut stream = self.store.stream(session, no)?.ok_or(GateError::UnknownStream)?;
        if terminal && stream.origin == Origin::Standalone {
            return Err(GateError::NotARequestStream);
        }
        if stream.expired(now, self.config.retention_ms) {
            self.end_stream(session, &mut stream, StreamState::Aborted)?;
            self.counters.expired_streams += 1;
        }
        if !stream.state.takes_events() {
            return Err(GateError::StreamFinished);
        }

        let seq = stream.last_seq.saturating_add(1);
        let id = EventId::mint(s.epoch, s.tag, no, seq, self.key.as_ref()).format();
        let event = Event { id, stream: no, seq, data, retry_ms: None, terminal };
        let stored = StoredEvent { seq, id: event.id.clone(), data: event.data.clone() };

        stream.last_seq = seq;
        stream.buffered_events = stream.buffered_events.saturating_add(1);
        stream.buffered_bytes = stream.buffered_bytes.saturating_add(stored.cost());
        stream.last_active = now;
        if terminal {
            stream.state = StreamState::TerminalSent;
            stream.terminal_seq = Some(seq);
        }
        self.store.push_event(session, no, stored)?;
        while stream.buffered_events > self.config.max_events_per_stream
            || stream.buffered_bytes > self.config.max_bytes_per_stream
        {
            let Some(old) = self.store.evict_oldest(session, no)? else {
                break;
            };
            stream.first_buffered = old.seq.saturating_add(1);
            stream.buffered_events = stream.buffered_events.saturating_sub(1);
            stream.buffered_bytes = stream.buffered_bytes.saturating_sub(old.cost());
            self.counters.evicted_events += 1;
        }
        self.store.put_stream(session, &stream)?;
        self.counters.events_emitted += 1;
        Ok(event)
    }

    fn detach_inner(
        &mut self,
        session: &str,
        no: StreamNo,
        attachment: u32,
        now: Millis,
    ) -> Result<(), GateError> {
        validate_session_id(session)?;
        let Some(mut stream) = self.store.stream(session, no)? else {
            return Ok(());
        };
        if stream.attachment != attachment || !stream.state.is_live() {
            return Ok(());
        }
        if stream.state == StreamState::Open {
            stream.state = StreamState::Resumable;
        }
        stream.last_active = now;
        self.store.put_stream(session, &stream)?;
        Ok(())
    }

    fn abort_inner(&mut self, session: &str, no: StreamNo) -> Result<(), GateError> {
        self.session(session)?;
        let mut stream = self.store.stream(session, no)?.ok_or(GateError::UnknownStream)?;
        if stream.state.is_live() {
            self.end_stream(session, &mut stream, StreamState::Aborted)?;
        }
        Ok(())
    }

    fn reconnect_inner(
        &mut self,
        session: &str,
        cursor: &[u8],
        origin: Origin,
        now: Millis,
    ) -> Result<Decision, GateError> {
        let mut s = self.session(session)?;
        let reconnect = Reconnect {
            cursor,
            origin: &origin,
            session: &s,
            key: self.key.as_ref(),
            now,
            retention: self.config.retention_ms,
        };
        let store = &mut self.store;
        let verdict = decide(&reconnect, |no| store.stream(session, no))?;
        match verdict {
            Verdict::Resume { mut stream, after } => {
                let events = self.store.events_after(session, stream.no, after)?;
                stream.attachment = stream.attachment.wrapping_add(1);
                if stream.state == StreamState::Resumable {
                    stream.state = StreamState::Open;
                }
                stream.last_active = now;
                self.store.put_stream(session, &stream)?;
                let terminal_seq = stream.terminal_seq;
                let events: Vec<Event> = events
                    .into_iter()
                    .map(|e| Event {
                        id: e.id,
                        stream: stream.no,
                        seq: e.seq,
                        data: e.data,
                        retry_ms: None,
                        terminal: Some(e.seq) == terminal_seq,
                    })
                    .collect();
                self.counters.resumes += 1;
                self.counters.events_replayed += events.len() as u64;
                Ok(Decision::Resume(Resumption {
                    stream: stream.no,
                    attachment: stream.attachment,
                    includes_terminal: terminal_seq.is_some(),
                    events,
                }))
            }
            Verdict::Fresh { reason, source } => {
                let mut stranded = None;
                if let Some(mut source) = source {
                    if let Some(state) = source.becomes {
                        self.end_stream(session, &mut source.stream, state)?;
                    }
                    stranded = source.stranded;
                }
                self.counters.count_fresh(reason);
                let opened = self.open_stream_in(&mut s, origin, now)?;
                Ok(Decision::Fresh(FreshStart { reason, opened, stranded }))
            }
        }
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
