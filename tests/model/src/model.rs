//! A small reference model of what a client was sent, for the property tests and the fuzzer.
//!
//! The model does not re-implement the decision table; it keeps the history (every id minted,
//! every event of every stream) and checks the promises:
//! - a resume happens only for an id the gate minted, of this session and epoch, on a GET, on
//!   a stream that was never ended, never at its terminal event;
//! - a resume returns exactly the events after the cursor, in order: never a partial replay,
//!   never an event of another stream or session;
//! - a cursor that should resume (live stream, events still within the bounds) does resume;
//! - ids of other sessions and epochs get `other-session` and `epoch-changed`;
//! - every bound holds after every operation.

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use resume_gate::event_id::EventId;
use resume_gate::{Config, Decision, Event, GateError, Origin, StaleReason, StreamNo};

use crate::held::Held;
use crate::ops::{Call, Outcome};

struct Minted {
    session: String,
    generation: u32,
    stream: StreamNo,
    seq: u64,
}

struct StreamHistory {
    origin: Origin,
    /// Every event ever emitted; seq n is at index n - 1.
    events: Vec<Event>,
    terminal: Option<u64>,
    first_buffered: u64,
    attached: bool,
    attachment: u32,
    last_active: u64,
    /// Until when its writer holds it (renewed by each event).
    lease_until: u64,
    /// When its connection ended before its terminal: a call left so for longer than
    /// `max-detached` is given up.
    detached_at: Option<u64>,
    /// Aborted, completed, superseded or evicted: never resumable again.
    ended: bool,
    /// The gate may have ended it (expiry, or a settle before a failed open): no liveness claim.
    uncertain: bool,
}

pub struct SessionHistory {
    generation: u32,
    streams: BTreeMap<StreamNo, StreamHistory>,
    /// Every stream the session opened, in opening order (numbers need not grow: over a
    /// key-value store they carry random bits).
    ever_opened: Vec<StreamNo>,
    standalone: Option<StreamNo>,
}

/// What a client was sent, and the promises each gate answer must keep.
pub struct Model {
    config: Config,
    now: u64,
    pub sessions: HashMap<String, SessionHistory>,
    minted: HashMap<String, Minted>,
    generations: HashMap<String, u32>,
}

impl Model {
    pub fn new(config: Config, now: u64) -> Self {
        Self { config, now, sessions: HashMap::new(), minted: HashMap::new(), generations: HashMap::new() }
    }

    fn mint(&mut self, session: &str, e: &Event) {
        let generation = self.sessions[session].generation;
        let m = Minted { session: session.to_owned(), generation, stream: e.stream, seq: e.seq };
        self.minted.insert(e.id.clone(), m);
    }

    fn open(
        &mut self,
        session: &str,
        origin: Origin,
        opened: &resume_gate::Opened,
    ) -> Result<(), TestCaseError> {
        let now = self.now;
        let s = self.sessions.get_mut(session).expect("opened in a known session");
        prop_assert!(!s.ever_opened.contains(&opened.stream), "stream numbers are never reused in a session");
        s.ever_opened.push(opened.stream);
        prop_assert_eq!(opened.priming.seq, 0);
        prop_assert!(opened.priming.data.is_empty());
        prop_assert_eq!(opened.priming.retry_ms, self.config.retry_ms);
        if origin == Origin::Standalone {
            if let Some(old) = s.standalone.and_then(|no| s.streams.get_mut(&no)) {
                old.ended = true;
            }
            s.standalone = Some(opened.stream);
        }
        let history = StreamHistory {
            origin,
            events: Vec::new(),
            terminal: None,
            first_buffered: 1,
            attached: true,
            attachment: opened.attachment,
            last_active: now,
            lease_until: now + self.config.lease_ms,
            detached_at: None,
            ended: false,
            uncertain: false,
        };
        s.streams.insert(opened.stream, history);
        self.mint(session, &opened.priming);
        Ok(())
    }

    /// Streams that sat without a connection past retention, and calls nobody was attached to
    /// past `max-detached`, may have been aborted by now.
    fn note_time(&mut self) {
        let (now, retention, max_detached) = (self.now, self.config.retention_ms, self.config.max_detached());
        for s in self.sessions.values_mut() {
            for st in s.streams.values_mut() {
                let detached = !st.attached || st.terminal.is_some();
                if detached && now.saturating_sub(st.last_active) > retention {
                    st.uncertain = true;
                }
                let call = matches!(st.origin, Origin::Request(_)) && st.terminal.is_none() && !st.attached;
                if call && st.detached_at.is_some_and(|t| now.saturating_sub(t) > max_detached) {
                    st.uncertain = true;
                }
            }
        }
    }

    fn record(
        &mut self,
        session: &str,
        stream: StreamNo,
        e: &Event,
        terminal: bool,
    ) -> Result<(), TestCaseError> {
        let (max_events, max_bytes, now) =
            (u64::from(self.config.max_events_per_stream), self.config.max_bytes_per_stream, self.now);
        let st = self.sessions.get_mut(session).and_then(|s| s.streams.get_mut(&stream));
        let st = st.expect("an event on a stream the model knows");
        prop_assert!(!st.ended && st.terminal.is_none(), "an ended stream took an event");
        prop_assert_eq!(e.seq, st.events.len() as u64 + 1, "sequence numbers are consecutive");
        prop_assert_eq!(e.terminal, terminal);
        st.events.push(e.clone());
        st.last_active = now;
        st.lease_until = now + self.config.lease_ms;
        if terminal {
            st.terminal = Some(e.seq);
        }
        // The buffer is the longest suffix within both bounds, and never grows back.
        let cost = |e: &Event| (e.id.len() + e.data.len()) as u64;
        loop {
            let kept = &st.events[(st.first_buffered - 1) as usize..];
            let bytes: u64 = kept.iter().map(cost).sum();
            if kept.is_empty() || (kept.len() as u64 <= max_events && bytes <= max_bytes) {
                break;
            }
            st.first_buffered += 1;
        }
        self.mint(session, e);
        Ok(())
    }

    fn check_reconnect(
        &mut self,
        session: &str,
        cursor: &[u8],
        origin: &Origin,
        outcome: &Result<Decision, GateError>,
    ) -> Result<(), TestCaseError> {
        let Some(s) = self.sessions.get(session) else {
            prop_assert_eq!(outcome, &Err(GateError::UnknownSession));
            return Ok(());
        };
        let generation = s.generation;
        let minted = std::str::from_utf8(cursor).ok().and_then(|c| self.minted.get(c));
        let ours = minted.filter(|m| m.session == session && m.generation == generation);
        let source = ours.and_then(|m| s.streams.get(&m.stream).map(|st| (m, st)));

        match outcome {
            Err(GateError::DuplicateRequestId | GateError::TooManyStreams) => {
                if let Some(m) = ours {
                    let no = m.stream;
                    if let Some(st) = self.sessions.get_mut(session).and_then(|s| s.streams.get_mut(&no)) {
                        st.uncertain = true;
                    }
                }
                return Ok(());
            }
            Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e:?}"))),
            Ok(Decision::Resume(r)) => {
                let Some((m, st)) = source else {
                    return Err(TestCaseError::fail(
                        "resumed a cursor not minted for this session and epoch",
                    ));
                };
                prop_assert_eq!(origin, &Origin::Standalone, "only a GET resumes");
                prop_assert!(!st.ended, "resumed an ended stream");
                prop_assert!(st.terminal != Some(m.seq), "resumed at the terminal event");
                prop_assert_eq!(r.stream, m.stream, "never a replay of another stream");
                prop_assert_eq!(
                    &r.events[..],
                    &st.events[m.seq as usize..],
                    "exactly the events after the cursor"
                );
                prop_assert_eq!(r.includes_terminal, st.terminal.is_some());
                // A request whose writer let its lease pass is replayed, then stranded.
                let writer_lost = matches!(st.origin, Origin::Request(_))
                    && st.terminal.is_none()
                    && self.now > st.lease_until;
                if !st.uncertain {
                    prop_assert_eq!(
                        !r.stranded.is_empty(),
                        writer_lost,
                        "stranded exactly when the lease passed"
                    );
                }
                if let Origin::Request(mine) = &st.origin {
                    prop_assert!(
                        r.stranded.iter().all(|id| id == mine),
                        "the stranded request is the stream's own"
                    );
                }
                let (no, attachment) = (m.stream, r.attachment);
                let now = self.now;
                let st = self.sessions.get_mut(session).and_then(|s| s.streams.get_mut(&no)).expect("known");
                st.attached = true;
                st.attachment = attachment;
                st.last_active = now;
                st.detached_at = None;
                st.ended |= !r.stranded.is_empty();
            }
            Ok(Decision::Fresh(f)) => {
                if let Some((m, st)) = source {
                    // An answered call may have made room for a later stream once the session
                    // had opened more streams than it keeps records.
                    let reclaimed = st.terminal.is_some()
                        && f.reason == StaleReason::Unknown
                        && s.ever_opened.last() != Some(&m.stream)
                        && s.ever_opened.len() >= self.config.max_streams_per_session as usize;
                    let should_resume = *origin == Origin::Standalone
                        && !st.ended
                        && !st.uncertain
                        && !reclaimed
                        && st.terminal != Some(m.seq)
                        && m.seq + 1 >= st.first_buffered;
                    prop_assert!(!should_resume, "a valid continuation point got fresh: {:?}", f.reason);
                } else if self.config.signing_key.is_none() || minted.is_some() {
                    if let Some(m) = minted {
                        let expected = if m.session != session {
                            StaleReason::OtherSession
                        } else if m.generation != generation {
                            StaleReason::EpochChanged
                        } else {
                            StaleReason::Unknown
                        };
                        prop_assert_eq!(f.reason, expected);
                    } else if EventId::parse(cursor).is_none() {
                        prop_assert_eq!(f.reason, StaleReason::Malformed);
                    }
                }
                let ends_source =
                    matches!(f.reason, StaleReason::Completed | StaleReason::Aborted | StaleReason::Evicted);
                if let Some(m) = ours
                    && ends_source
                {
                    let no = m.stream;
                    if let Some(st) = self.sessions.get_mut(session).and_then(|s| s.streams.get_mut(&no)) {
                        st.ended = true;
                    }
                }
                self.open(session, origin.clone(), &f.opened)?;
            }
        }
        Ok(())
    }

    /// Plays the model's side of one call and checks the gate's answer.
    pub fn check(&mut self, call: &Call, outcome: &Outcome, held: &impl Held) -> Result<(), TestCaseError> {
        self.note_time();
        match (call, outcome) {
            (Call::OpenSession(s), Outcome::Session(Ok(()))) => {
                let generation = self.generations.entry(s.clone()).or_insert(0);
                *generation += 1;
                let history = SessionHistory {
                    generation: *generation,
                    streams: BTreeMap::new(),
                    ever_opened: self.sessions.get(s).map(|h| h.ever_opened.clone()).unwrap_or_default(),
                    standalone: None,
                };
                self.sessions.insert(s.clone(), history);
                // A full gate may have reclaimed an idle session to make room.
                self.sessions.retain(|id, _| held.has_session(id));
            }
            (Call::OpenSession(_), Outcome::Session(Err(e))) => {
                prop_assert_eq!(e, &GateError::TooManySessions);
            }
            (Call::EndSession(s), Outcome::Unit(r)) => {
                prop_assert_eq!(r.is_ok(), self.sessions.remove(s).is_some());
            }
            (Call::OpenStream(s, o), Outcome::Opened(r)) => match r {
                Ok(opened) => self.open(s, o.clone(), opened)?,
                Err(GateError::UnknownSession) => prop_assert!(!self.sessions.contains_key(s)),
                Err(GateError::DuplicateRequestId) => {
                    let used = self.sessions[s].streams.values().any(|st| st.origin == *o);
                    prop_assert!(used, "refused a request id never used");
                }
                Err(e) => prop_assert_eq!(e, &GateError::TooManyStreams),
            },
            (Call::Emit(s, no, _) | Call::Terminal(s, no, _), Outcome::Event(r)) => match r {
                Ok(e) => self.record(s, *no, e, matches!(call, Call::Terminal(..)))?,
                Err(GateError::StreamFinished) => {
                    let st = &self.sessions[s].streams[no];
                    prop_assert!(
                        st.ended || st.uncertain || st.terminal.is_some(),
                        "a live stream refused an event"
                    );
                }
                Err(_) => {}
            },
            (Call::Detach(s, no, attachment), Outcome::Unit(_)) => {
                let now = self.now;
                if let Some(st) = self.sessions.get_mut(s).and_then(|h| h.streams.get_mut(no))
                    && st.attachment == *attachment
                    && !st.ended
                {
                    if st.attached && st.terminal.is_none() {
                        st.detached_at = Some(now);
                    }
                    st.attached = false;
                    st.last_active = now;
                }
            }
            (Call::Abort(s, no), Outcome::Unit(r)) => {
                if r.is_ok()
                    && let Some(st) = self.sessions.get_mut(s).and_then(|h| h.streams.get_mut(no))
                {
                    st.ended = true;
                }
            }
            (Call::Reconnect(s, cursor, o), Outcome::Decision(r)) => self.check_reconnect(s, cursor, o, r)?,
            (Call::Advance(ms), Outcome::Advanced) => self.now += u64::from(*ms),
            (call, outcome) => {
                return Err(TestCaseError::fail(format!("{call:?} answered {outcome:?}")));
            }
        }
        let st = held.stats();
        let c = &self.config;
        prop_assert!(st.sessions <= c.max_sessions as usize);
        prop_assert!(st.most_streams_in_a_session <= c.max_streams_per_session as usize);
        prop_assert!(st.most_events_in_a_stream <= c.max_events_per_stream as usize);
        prop_assert!(st.most_bytes_in_a_stream <= c.max_bytes_per_stream);
        Ok(())
    }
}
