//! The crash matrix of the key-value store: an instance stops after its N-th key-value call —
//! for every N of every operation — and another instance carries on over the same store, as
//! when a serverless instance is killed mid-request.
//!
//! Asserted after each kill point: no acknowledged event is lost, sequence numbers stay
//! consecutive without duplicates, no event crosses into another session, the other session is
//! untouched, and a stream the interrupted operation could not have ended still resumes.
//! Measured and printed, not yet asserted (the current record layout leaves them behind; the
//! small-record layout of issue 15 is to collect them): orphan keys, a session counter that
//! drifts from the records, and a request-id claim without its stream
//! (`cargo test -p resume-gate-tests --test crash_matrix -- --nocapture`).

use std::collections::BTreeSet;

use resume_gate::kv::{
    KeyKind, Kv, KvStore, MemoryKv, Watched, claim_key, event_key, is_global_key, is_record, parse_key,
    read_record, session_key, stream_key,
};
use resume_gate::session::SessionMeta;
use resume_gate::stream::StreamMeta;
use resume_gate::{Config, Decision, Gate, GateError, Origin, RequestId, StoreError};

/// A `Kv` that answers `left` calls, then none: the instance died.
struct Stopping {
    kv: MemoryKv,
    left: u64,
}

impl Stopping {
    fn call(&mut self) -> Result<(), StoreError> {
        if self.left == 0 {
            return Err(StoreError("the instance stopped".into()));
        }
        self.left -= 1;
        Ok(())
    }
}

impl Kv for Stopping {
    type Handle = Watched;
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.call()?;
        self.kv.get(key)
    }
    fn set(&mut self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.call()?;
        self.kv.set(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        self.call()?;
        self.kv.delete(key)
    }
    fn increment(&mut self, key: &str, delta: i64) -> Result<i64, StoreError> {
        self.call()?;
        self.kv.increment(key, delta)
    }
    fn watch(&mut self, key: &str) -> Result<(Option<Vec<u8>>, Watched), StoreError> {
        self.call()?;
        self.kv.watch(key)
    }
    fn swap(&mut self, handle: Watched, value: &[u8]) -> Result<bool, StoreError> {
        self.call()?;
        self.kv.swap(handle, value)
    }
}

const A: &str = "session-a";
const B: &str = "session-b";
const NOW: u64 = 1_000;

fn config() -> Config {
    Config { max_sessions: 3, ..Config::default() }
}

fn healthy(kv: &MemoryKv, seed: u64) -> Gate<KvStore<Stopping>> {
    stopping(kv, seed, u64::MAX)
}

fn stopping(kv: &MemoryKv, seed: u64, left: u64) -> Gate<KvStore<Stopping>> {
    Gate::new(config(), KvStore::new(Stopping { kv: kv.clone(), left }, seed)).unwrap()
}

/// What the baseline acknowledged: a running call with three events (detached), an answered
/// call, a second session with two events, and an idle session (the table is then full).
struct Baseline {
    running: u64,
    running_priming: String,
    running_attachment: u32,
    answered_terminal: String,
    b_priming: String,
}

const RUNNING: [&str; 3] = ["a1", "a2", "a3"];
const OTHER: [&str; 2] = ["b1", "b2"];

fn baseline(kv: &MemoryKv) -> Baseline {
    let mut g = healthy(kv, 1);
    g.open_session(A, NOW, [1; 8]).unwrap();
    g.open_session(B, NOW, [2; 8]).unwrap();
    g.open_session("session-idle", NOW, [5; 8]).unwrap();
    let running = g.open_stream(A, Origin::Request(RequestId::Number(1)), NOW).unwrap();
    for data in RUNNING {
        g.emit(A, running.stream, data.into(), NOW).unwrap();
    }
    g.detach(A, running.stream, running.attachment, NOW).unwrap();
    let answered = g.open_stream(A, Origin::Request(RequestId::Number(2)), NOW).unwrap();
    let terminal = g.terminal(A, answered.stream, "result".into(), NOW).unwrap();
    let other = g.open_stream(B, Origin::Request(RequestId::Number(1)), NOW).unwrap();
    for data in OTHER {
        g.emit(B, other.stream, data.into(), NOW).unwrap();
    }
    g.detach(B, other.stream, other.attachment, NOW).unwrap();
    Baseline {
        running: running.stream,
        running_priming: running.priming.id,
        running_attachment: running.attachment + 1,
        answered_terminal: terminal.id,
        b_priming: other.priming.id,
    }
}

type Op = fn(&mut Gate<KvStore<Stopping>>, &Baseline) -> Result<(), GateError>;

/// The operations, and whether each may end the running call's stream when it commits.
fn operations() -> Vec<(&'static str, Op, bool)> {
    vec![
        (
            "open-session (new, table full: reclaims)",
            |g, _| g.open_session("session-c", NOW, [3; 8]).map(drop),
            false,
        ),
        ("open-session (re-issue)", |g, _| g.open_session(A, NOW, [4; 8]).map(drop), true),
        ("open-stream", |g, _| g.open_stream(A, Origin::Request(RequestId::Number(5)), NOW).map(drop), false),
        ("on-emit", |g, b| g.emit(A, b.running, "a4".into(), NOW).map(drop), false),
        ("on-terminal", |g, b| g.terminal(A, b.running, "done".into(), NOW).map(drop), false),
        (
            "on-reconnect (resume)",
            |g, b| g.reconnect(A, b.running_priming.as_bytes(), Origin::Standalone, NOW).map(drop),
            false,
        ),
        (
            "on-reconnect (completed)",
            |g, b| g.reconnect(A, b.answered_terminal.as_bytes(), Origin::Standalone, NOW).map(drop),
            false,
        ),
        ("on-detach", |g, b| g.detach(A, b.running, b.running_attachment, NOW), false),
        ("abort-stream", |g, b| g.abort(A, b.running), true),
        ("end-session", |g, _| g.end_session(A), true),
    ]
}

/// What a check found after one kill point.
#[derive(Default)]
struct Findings {
    orphans: usize,
    count_drift: bool,
    blocked_claim: bool,
}

/// Asserts what must hold after any kill point; returns what is measured.
fn check(kv: &MemoryKv, b: &Baseline, op: &str, kill: u64, may_end: bool) -> Findings {
    let mut g = healthy(kv, 99);
    let at = format!("{op}, stopped after call {kill}");
    // The other session is untouched: exactly its events, in order, never another session's.
    match g.reconnect(B, b.b_priming.as_bytes(), Origin::Standalone, NOW) {
        Ok(Decision::Resume(r)) => {
            let data: Vec<&str> = r.events.iter().map(|e| e.data.as_str()).collect();
            assert_eq!(data, OTHER, "{at}: the other session's events");
            assert!(r.events.iter().zip(1..).all(|(e, seq)| e.seq == seq), "{at}: consecutive");
        }
        other => panic!("{at}: the other session's stream no longer resumes: {other:?}"),
    }
    // The running call keeps every acknowledged event, unless the operation may have ended it.
    if g.has_session(A) == Ok(true) || !may_end {
        match g.reconnect(A, b.running_priming.as_bytes(), Origin::Standalone, NOW) {
            Ok(Decision::Resume(r)) => {
                let data: Vec<&str> = r.events.iter().map(|e| e.data.as_str()).collect();
                assert!(data.len() <= RUNNING.len() + 1, "{at}: at most the interrupted event more");
                assert_eq!(&data[..RUNNING.len()], RUNNING, "{at}: acknowledged events");
                assert!(r.events.iter().zip(1..).all(|(e, seq)| e.seq == seq), "{at}: consecutive");
            }
            Ok(Decision::Fresh(f)) => assert!(may_end, "{at}: the running call ended: {:?}", f.reason),
            Err(e) => assert!(may_end, "{at}: {e:?}"),
        }
    }
    let blocked_claim = g.open_stream(A, Origin::Request(RequestId::Number(5)), NOW)
        == Err(GateError::DuplicateRequestId)
        && !listed_request(kv, 5);
    Findings { orphans: orphans(kv).len(), count_drift: count_drifts(kv), blocked_claim }
}

/// The live records of one kind (`session`: `None` for every session's).
fn records(kv: &MemoryKv, session: Option<&str>, kind: fn(KeyKind) -> bool) -> Vec<(String, Vec<u8>)> {
    kv.snapshot()
        .into_iter()
        .filter(|(k, v)| {
            is_record(v) && parse_key(k).is_some_and(|(s, k)| kind(k) && session.is_none_or(|want| s == want))
        })
        .collect()
}

fn is_session(kind: KeyKind) -> bool {
    kind == KeyKind::Session
}

fn is_stream(kind: KeyKind) -> bool {
    matches!(kind, KeyKind::Stream(_))
}

fn listed_request(kv: &MemoryKv, id: i64) -> bool {
    let Some(session) =
        records(kv, Some(A), is_session).first().and_then(|(_, v)| read_record::<SessionMeta>(v))
    else {
        return false;
    };
    records(kv, Some(A), is_stream)
        .iter()
        .filter_map(|(_, v)| read_record::<StreamMeta>(v))
        .any(|st| session.streams.contains(&st.no) && st.origin == Origin::Request(RequestId::Number(id)))
}

fn count_drifts(kv: &MemoryKv) -> bool {
    let counted = kv.clone().increment("rg/sessions", 0).unwrap();
    counted != records(kv, None, is_session).len() as i64
}

/// Keys no live record leads to: event data no stream lists, streams no session lists, claims
/// and counters of sessions that are gone.
fn orphans(kv: &MemoryKv) -> Vec<String> {
    let sessions: Vec<SessionMeta> =
        records(kv, None, is_session).iter().filter_map(|(_, v)| read_record(v)).collect();
    let mut reachable: BTreeSet<String> = BTreeSet::new();
    for s in &sessions {
        reachable.insert(session_key(&s.id));
        for no in &s.streams {
            let key = stream_key(&s.id, *no);
            let Some(st) = kv
                .snapshot()
                .into_iter()
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| read_record::<StreamMeta>(&v))
            else {
                continue;
            };
            reachable.insert(key);
            for event in st.buffered_after(0) {
                reachable.insert(event_key(&s.id, *no, event.key));
            }
            if let Origin::Request(id) = &st.origin {
                reachable.insert(claim_key(&s.id, id));
            }
        }
    }
    // A live session's counter and queue slot are reachable from its id.
    let of_live_session = |k: &str| {
        parse_key(k).is_some_and(|(id, kind)| {
            matches!(kind, KeyKind::StreamCounter | KeyKind::QueueSlot) && sessions.iter().any(|s| s.id == id)
        })
    };
    kv.snapshot()
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| !is_global_key(k) && !of_live_session(k) && !reachable.contains(k))
        .collect()
}

#[test]
fn an_instance_stopped_after_any_call_of_any_operation_loses_nothing_acknowledged() {
    let mut kill_points = 0;
    println!(
        "{:<42} {:>6} {:>8} {:>12} {:>14}",
        "operation", "kills", "orphans", "count drift", "blocked claim"
    );
    for (name, op, may_end) in operations() {
        let kv = MemoryKv::new();
        let b = baseline(&kv);
        let before = kv.calls();
        op(&mut healthy(&kv, 7), &b).unwrap_or_else(|e| panic!("{name} on a healthy store: {e:?}"));
        let calls = kv.calls() - before;
        assert!(
            orphans(&kv).is_empty() && !count_drifts(&kv),
            "{name} leaves a clean store when it completes"
        );
        let (mut orphaned, mut drifts, mut blocked) = (0, 0, 0);
        for kill in 0..calls {
            let kv = MemoryKv::new();
            let b = baseline(&kv);
            let interrupted = op(&mut stopping(&kv, 7, kill), &b);
            assert!(interrupted.is_err(), "{name} stopped after call {kill} cannot have finished");
            let f = check(&kv, &b, name, kill, may_end);
            orphaned += usize::from(f.orphans > 0);
            drifts += usize::from(f.count_drift);
            blocked += usize::from(f.blocked_claim);
        }
        kill_points += calls;
        println!("{name:<42} {calls:>6} {orphaned:>8} {drifts:>12} {blocked:>14}");
    }
    println!("{kill_points} kill points");
    assert!(kill_points > 50, "every call of every operation is a kill point");
}
