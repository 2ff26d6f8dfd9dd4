//! Random operation sequences over a few sessions, and `Run`, which plays them on a driver.
//!
//! Operations name things by position (the k-th id minted so far, the k-th stream opened) so
//! that one sequence means the same on every side even though each side mints its own ids.

use proptest::prelude::*;
use resume_gate::event_id::EventId;
use resume_gate::{Config, Decision, Event, GateError, Opened, Origin, RequestId, StreamNo};

use crate::driver::Driver;

pub const SESSIONS: [&str; 3] = ["session-a", "session-b", "session-c"];
pub const T0: u64 = 1_700_000_000_000;

#[derive(Clone, Debug)]
pub enum OriginPick {
    Get,
    Post(u8),
}

#[derive(Clone, Debug)]
pub enum CursorPick {
    /// The k-th id this side minted (mod their number).
    Issued(usize),
    /// The k-th id with one byte replaced.
    Mutated(usize, usize, u8),
    /// The k-th id with its stream and sequence numbers replaced.
    Crafted(usize, u8, u8),
    /// Any bytes.
    Garbage(Vec<u8>),
}

#[derive(Clone, Debug)]
pub enum Op {
    OpenSession(u8),
    EndSession(u8),
    OpenStream(u8, OriginPick),
    /// Emit `n` bytes of data on the k-th stream opened.
    Emit(usize, u16),
    Terminal(usize),
    /// Detach the k-th stream, with its latest attachment or a stale one.
    Detach(usize, bool),
    Abort(usize),
    Reconnect(u8, CursorPick, OriginPick),
    Advance(u32),
}

/// Small bounds, so that eviction, expiry and reclaiming happen within a short sequence.
pub fn small_config(signed: bool) -> Config {
    Config {
        max_events_per_stream: 4,
        max_bytes_per_stream: 600,
        max_streams_per_session: 4,
        max_bytes_per_session: 256 << 20,
        max_sessions: 2,
        retention_ms: 1_000,
        lease_ms: 700,
        max_detached_ms: None,
        max_total_bytes: 256 << 20,
        retry_ms: Some(500),
        signing_key: signed.then(|| b"property-test signing key".to_vec()),
    }
}

/// `small_config` with memory budgets smaller than what its other bounds allow, so that
/// freeing answered buffers, reclaiming for bytes and `over-budget` happen too, for one
/// session and in all.
pub fn tight_budget_config(signed: bool) -> Config {
    Config { max_total_bytes: 3_000, max_bytes_per_session: 1_800, ..small_config(signed) }
}

fn origin() -> impl Strategy<Value = OriginPick> {
    prop_oneof![3 => Just(OriginPick::Get), 2 => (0u8..6).prop_map(OriginPick::Post)]
}

fn cursor() -> impl Strategy<Value = CursorPick> {
    prop_oneof![
        8 => any::<usize>().prop_map(CursorPick::Issued),
        1 => (any::<usize>(), any::<usize>(), any::<u8>()).prop_map(|(k, i, b)| CursorPick::Mutated(k, i, b)),
        2 => (any::<usize>(), 0u8..8, 0u8..8).prop_map(|(k, s, q)| CursorPick::Crafted(k, s, q)),
        1 => prop::collection::vec(any::<u8>(), 0..160).prop_map(CursorPick::Garbage),
    ]
}

pub fn op() -> impl Strategy<Value = Op> {
    let session = 0u8..SESSIONS.len() as u8;
    prop_oneof![
        2 => session.clone().prop_map(Op::OpenSession),
        1 => session.clone().prop_map(Op::EndSession),
        4 => (session.clone(), origin()).prop_map(|(s, o)| Op::OpenStream(s, o)),
        8 => (any::<usize>(), 0u16..300).prop_map(|(k, n)| Op::Emit(k, n)),
        2 => any::<usize>().prop_map(Op::Terminal),
        3 => (any::<usize>(), any::<bool>()).prop_map(|(k, fresh)| Op::Detach(k, fresh)),
        1 => any::<usize>().prop_map(Op::Abort),
        8 => (session, cursor(), origin()).prop_map(|(s, c, o)| Op::Reconnect(s, c, o)),
        2 => prop_oneof![1u32..200, 900u32..1200, 2900u32..3200].prop_map(Op::Advance),
    ]
}

/// A sequence that opens every session first, then does anything.
pub fn ops(max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..max).prop_map(|mut ops| {
        let mut all = vec![Op::OpenSession(0), Op::OpenSession(1)];
        all.append(&mut ops);
        all
    })
}

/// Operations decoded from raw bytes, for a fuzzer: every input is some sequence, and a
/// mutation of the input is a small change of the sequence. It opens two sessions first,
/// like [`ops`].
pub fn ops_from_bytes(data: &[u8]) -> Vec<Op> {
    let mut bytes = data.iter().copied();
    let mut next = move || bytes.next();
    let mut all = vec![Op::OpenSession(0), Op::OpenSession(1)];
    while let Some(tag) = next() {
        let b = next().unwrap_or(0);
        let c = next().unwrap_or(0);
        let session = b % SESSIONS.len() as u8;
        let origin = if c & 1 == 0 { OriginPick::Get } else { OriginPick::Post(c >> 5) };
        let op = match tag % 10 {
            0 => Op::OpenSession(session),
            1 => Op::EndSession(session),
            2 => Op::OpenStream(session, origin),
            3 => Op::Emit(usize::from(b), u16::from(c) * 2),
            4 => Op::Terminal(usize::from(b)),
            5 => Op::Detach(usize::from(b), c & 1 == 1),
            6 => Op::Abort(usize::from(b)),
            7 => {
                let cursor = match c % 4 {
                    0 | 1 => CursorPick::Issued(usize::from(b)),
                    2 => CursorPick::Mutated(usize::from(b), usize::from(c), next().unwrap_or(0)),
                    _ => CursorPick::Crafted(usize::from(b), c % 8, next().unwrap_or(0) % 8),
                };
                Op::Reconnect(session, cursor, origin)
            }
            8 => {
                let len = usize::from(b % 160);
                let garbage: Vec<u8> = std::iter::from_fn(&mut next).take(len).collect();
                Op::Reconnect(session, CursorPick::Garbage(garbage), origin)
            }
            _ => Op::Advance(match c % 3 {
                0 => 1 + u32::from(b),
                1 => 900 + u32::from(b),
                _ => 2900 + u32::from(b),
            }),
        };
        all.push(op);
    }
    all
}

/// An operation resolved against one side's history.
#[derive(Clone, Debug)]
pub enum Call {
    OpenSession(String),
    EndSession(String),
    OpenStream(String, Origin),
    Emit(String, StreamNo, String),
    Terminal(String, StreamNo, String),
    Detach(String, StreamNo, u32),
    Abort(String, StreamNo),
    Reconnect(String, Vec<u8>, Origin),
    Advance(u32),
}

/// What came back, in core types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Epochs are random: only success is compared.
    Session(Result<(), GateError>),
    Unit(Result<(), GateError>),
    Opened(Result<Opened, GateError>),
    Event(Result<Event, GateError>),
    Decision(Result<Decision, GateError>),
    Advanced,
}

/// A stream some side opened, by position.
#[derive(Clone, Debug)]
pub struct OpenedStream {
    pub session: String,
    pub stream: StreamNo,
    pub attachment: u32,
}

/// Plays operations on one driver, remembering what it minted.
pub struct Run<D> {
    pub driver: D,
    pub now: u64,
    pub issued: Vec<String>,
    pub streams: Vec<OpenedStream>,
    step: usize,
}

impl<D: Driver> Run<D> {
    pub fn new(mut driver: D, config: &Config) -> Self {
        driver.set_now(T0);
        driver.configure(config).expect("valid config");
        Self { driver, now: T0, issued: Vec::new(), streams: Vec::new(), step: 0 }
    }

    fn stream(&self, k: usize) -> OpenedStream {
        match self.streams.len() {
            0 => OpenedStream { session: SESSIONS[0].into(), stream: 1, attachment: 1 },
            n => self.streams[k % n].clone(),
        }
    }

    fn issued(&self, k: usize) -> Vec<u8> {
        match self.issued.len() {
            0 => b"rg1.none".to_vec(),
            n => self.issued[k % n].clone().into_bytes(),
        }
    }

    pub fn resolve(&self, op: &Op) -> Call {
        let session = |s: u8| SESSIONS[s as usize % SESSIONS.len()].to_owned();
        let origin = |o: &OriginPick| match o {
            OriginPick::Get => Origin::Standalone,
            OriginPick::Post(n) => Origin::Request(RequestId::Number(i64::from(*n))),
        };
        match op {
            Op::OpenSession(s) => Call::OpenSession(session(*s)),
            Op::EndSession(s) => Call::EndSession(session(*s)),
            Op::OpenStream(s, o) => Call::OpenStream(session(*s), origin(o)),
            Op::Emit(k, n) => {
                let st = self.stream(*k);
                Call::Emit(st.session, st.stream, format!("{}:{}", self.step, "d".repeat(*n as usize)))
            }
            Op::Terminal(k) => {
                let st = self.stream(*k);
                Call::Terminal(st.session, st.stream, format!("{}:result", self.step))
            }
            Op::Detach(k, latest) => {
                let st = self.stream(*k);
                let attachment = if *latest { st.attachment } else { st.attachment.wrapping_sub(1) };
                Call::Detach(st.session, st.stream, attachment)
            }
            Op::Abort(k) => {
                let st = self.stream(*k);
                Call::Abort(st.session, st.stream)
            }
            Op::Reconnect(s, c, o) => {
                let bytes = match c {
                    CursorPick::Issued(k) => self.issued(*k),
                    CursorPick::Mutated(k, i, b) => {
                        let mut id = self.issued(*k);
                        // Only bytes that are the same on every side: not the random epoch,
                        // nor the MAC that depends on it.
                        let positions: Vec<usize> =
                            (0..id.len()).filter(|&p| same_on_every_side(&id, p)).collect();
                        if let Some(byte) =
                            positions.get(i % positions.len().max(1)).and_then(|&p| id.get_mut(p))
                        {
                            *byte = *b;
                        }
                        id
                    }
                    CursorPick::Crafted(k, stream, seq) => {
                        let id = String::from_utf8(self.issued(*k)).unwrap_or_default();
                        let mut parts: Vec<String> = id.split('.').map(str::to_owned).collect();
                        if parts.len() >= 5 {
                            parts[3] = stream.to_string();
                            parts[4] = seq.to_string();
                        }
                        parts.join(".").into_bytes()
                    }
                    CursorPick::Garbage(bytes) => bytes.clone(),
                };
                Call::Reconnect(session(*s), bytes, origin(o))
            }
            Op::Advance(ms) => Call::Advance(*ms),
        }
    }

    /// Resolves and plays one operation. A component side panics if it traps.
    pub fn step(&mut self, op: &Op) -> (Call, Outcome) {
        let call = self.resolve(op);
        let outcome = self.call(&call);
        self.step += 1;
        (call, outcome)
    }

    pub fn call(&mut self, call: &Call) -> Outcome {
        let d = &mut self.driver;
        match call {
            Call::OpenSession(s) => Outcome::Session(d.open_session(s).map(|_| ())),
            Call::EndSession(s) => Outcome::Unit(d.end_session(s)),
            Call::OpenStream(s, o) => {
                let r = d.open_stream(s, o);
                if let Ok(opened) = &r {
                    self.opened(s, opened);
                }
                Outcome::Opened(r)
            }
            Call::Emit(s, no, data) => {
                let r = d.emit(s, *no, data);
                if let Ok(e) = &r {
                    self.issued.push(e.id.clone());
                }
                Outcome::Event(r.map(|e| e.into_event(*no, data.clone(), false)))
            }
            Call::Terminal(s, no, data) => {
                let r = d.terminal(s, *no, data);
                if let Ok(e) = &r {
                    self.issued.push(e.id.clone());
                }
                Outcome::Event(r.map(|e| e.into_event(*no, data.clone(), true)))
            }
            Call::Detach(s, no, a) => Outcome::Unit(d.detach(s, *no, *a)),
            Call::Abort(s, no) => Outcome::Unit(d.abort(s, *no)),
            Call::Reconnect(s, cursor, o) => {
                let r = d.reconnect(s, cursor, o);
                match &r {
                    Ok(Decision::Fresh(f)) => self.opened(s, &f.opened),
                    Ok(Decision::Resume(res)) => {
                        if let Some(st) =
                            self.streams.iter_mut().find(|st| st.session == *s && st.stream == res.stream)
                        {
                            st.attachment = res.attachment;
                        }
                    }
                    Err(_) => {}
                }
                Outcome::Decision(r)
            }
            Call::Advance(ms) => {
                self.now += u64::from(*ms);
                self.driver.set_now(self.now);
                Outcome::Advanced
            }
        }
    }

    fn opened(&mut self, session: &str, opened: &Opened) {
        self.issued.push(opened.priming.id.clone());
        self.streams.push(OpenedStream {
            session: session.into(),
            stream: opened.stream,
            attachment: opened.attachment,
        });
    }
}

/// Whether byte `p` of a minted id is independent of the side's randomness.
fn same_on_every_side(id: &[u8], p: usize) -> bool {
    const EPOCH: std::ops::Range<usize> = 4..20;
    let signed = EventId::parse(id).is_some_and(|parsed| parsed.mac.is_some());
    let mac_start = if signed { id.len().saturating_sub(33) } else { id.len() };
    !EPOCH.contains(&p) && p < mac_start
}

/// Replaces each epoch by its order of first appearance and each MAC by a marker, so that two
/// sides with different randomness can be compared field by field.
#[derive(Default)]
pub struct Normalizer {
    epochs: Vec<u64>,
}

impl Normalizer {
    pub fn id(&mut self, id: &str) -> String {
        let Some(parsed) = EventId::parse(id.as_bytes()) else {
            return format!("unparsable:{id}");
        };
        let n = match self.epochs.iter().position(|e| *e == parsed.epoch) {
            Some(n) => n,
            None => {
                self.epochs.push(parsed.epoch);
                self.epochs.len() - 1
            }
        };
        let signed = if parsed.mac.is_some() { ".signed" } else { "" };
        format!("epoch{n}.{}.{}.{}{signed}", hex::encode(parsed.session), parsed.stream, parsed.seq)
    }

    fn event(&mut self, e: &Event) -> Event {
        Event { id: self.id(&e.id), ..e.clone() }
    }

    fn opened(&mut self, o: &Opened) -> Opened {
        Opened { priming: self.event(&o.priming), ..o.clone() }
    }

    pub fn outcome(&mut self, o: &Outcome) -> Outcome {
        match o {
            Outcome::Opened(Ok(op)) => Outcome::Opened(Ok(self.opened(op))),
            Outcome::Event(Ok(e)) => Outcome::Event(Ok(self.event(e))),
            Outcome::Decision(Ok(Decision::Resume(r))) => {
                let mut r = r.clone();
                r.events = r.events.iter().map(|e| self.event(e)).collect();
                Outcome::Decision(Ok(Decision::Resume(r)))
            }
            Outcome::Decision(Ok(Decision::Fresh(f))) => {
                let mut f = f.clone();
                f.opened = self.opened(&f.opened);
                Outcome::Decision(Ok(Decision::Fresh(f)))
            }
            other => other.clone(),
        }
    }
}
