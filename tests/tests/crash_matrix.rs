//! The crash matrix of the key-value store: an instance stops after its N-th key-value call —
//! for every N of every operation — and another instance carries on over the same store, as
//! when a serverless instance is killed mid-request.
//!
//! Asserted after each kill point: garbage collection (`collect-garbage`, run as a host runs it,
//! in passes a lease apart) leaves no orphan key — no key that no live record leads to — and
//! no request-id claim without its stream; it deletes nothing live: no acknowledged event is
//! lost, sequence numbers stay consecutive without duplicates, no event crosses into another
//! session, the other session is untouched, and a stream the interrupted operation could not
//! have ended still resumes; the session count equals the live session records again. Printed:
//! the orphans and count drift a kill leaves before collection
//! (`cargo test -p tests --test crash_matrix -- --nocapture`).

use std::collections::BTreeSet;

use resume_gate::kv::{
    KeyKind, Kv, KvStore, MemoryKv, Watched, claim_key, event_key, is_global_key, is_record, parse_key,
    read_record, session_key, stream_key,
};
use resume_gate::session::SessionMeta;
use resume_gate::stream::StreamMeta;
use resume_gate::{Config, Decision, Gate, GateError, Origin, RequestId, StoreError};

/// A `Kv` that answers `left` calls, then none: the instance died. With `collecting`, a whole
/// garbage-collection pass runs over the same store at the same time before each call:
/// collection racing an operation at its most exposed points.
struct Stopping {
    kv: MemoryKv,
    left: u64,
    collecting: bool,
}

impl Stopping {
    fn call(&mut self) -> Result<(), StoreError> {
        if self.left == 0 {
            return Err(StoreError("the instance stopped".into()));
        }
        self.left -= 1;
        if self.collecting {
            let mut collector = Gate::new(config(), KvStore::new(self.kv.clone(), 97)).unwrap();
            let mut cursor = None;
            loop {
                let swept = collector.collect_garbage(cursor.as_deref(), NOW).expect("collect");
                cursor = swept.next;
                if cursor.is_none() {
                    break;
                }
            }
        }
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
    fn list_keys(&mut self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>), StoreError> {
        self.call()?;
        self.kv.list_keys(cursor)
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
    Gate::new(config(), KvStore::new(Stopping { kv: kv.clone(), left, collecting: false }, seed)).unwrap()
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
}

/// Full passes of garbage collection as a host runs them, each a lease after the one before,
/// until one collects nothing (at least two: a claim is collected at its second look); returns
/// the keys collected.
fn collect_garbage(kv: &MemoryKv) -> u32 {
    let mut g = healthy(kv, 98);
    let (mut now, mut total) = (NOW, 0);
    for pass in 0..6 {
        now += config().lease_ms + 1;
        let (mut cursor, mut removed) = (None, 0);
        loop {
            let swept = g.collect_garbage(cursor.as_deref(), now).expect("a healthy store");
            removed += swept.removed;
            cursor = swept.next;
            if cursor.is_none() {
                break;
            }
        }
        total += removed;
        if removed == 0 && pass > 0 {
            return total;
        }
    }
    panic!("garbage collection does not settle");
}

/// Asserts what must hold after any kill point; returns what is measured.
fn check(kv: &MemoryKv, b: &Baseline, op: &str, kill: u64, may_end: bool) -> Findings {
    let at = format!("{op}, stopped after call {kill}");
    let (left, drift) = (orphans(kv).len(), count_drifts(kv));
    collect_garbage(kv);
    assert_eq!(orphans(kv), Vec::<String>::new(), "{at}: garbage collection leaves no orphan");
    assert_eq!(unclaimed(kv), Vec::<String>::new(), "{at}: every listed request holds its claim");
    assert!(!count_drifts(kv), "{at}: the session count is the sessions' records");
    let mut g = healthy(kv, 99);
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
    assert!(!blocked_claim, "{at}: a request id is claimed by no stream");
    Findings { orphans: left, count_drift: drift }
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

/// Claims that a listed stream of a live session should hold but that are gone (a duplicate of
/// its request id would then be admitted).
fn unclaimed(kv: &MemoryKv) -> Vec<String> {
    let keys: BTreeSet<String> = kv.snapshot().into_iter().map(|(k, _)| k).collect();
    let mut missing = Vec::new();
    for (_, v) in records(kv, None, is_session) {
        let Some(s) = read_record::<SessionMeta>(&v) else { continue };
        for (_, v) in records(kv, Some(&s.id), is_stream) {
            let Some(st) = read_record::<StreamMeta>(&v) else { continue };
            if let (true, Origin::Request(id)) =
                (s.streams.contains(&st.no) && st.epoch == s.epoch, &st.origin)
            {
                missing.extend(Some(claim_key(&s.id, id)).filter(|k| !keys.contains(k)));
            }
        }
    }
    missing
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
    // A live session's counters and queue slot are reachable from its id.
    let of_live_session = |k: &str| {
        parse_key(k).is_some_and(|(id, kind)| {
            matches!(kind, KeyKind::StreamCounter | KeyKind::QueueSlot | KeyKind::Bytes)
                && sessions.iter().any(|s| s.id == id)
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
    println!("{:<42} {:>6} {:>22} {:>12}", "operation", "kills", "left orphans (kills)", "count drift");
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
        let (mut orphaned, mut drifts) = (0, 0);
        for kill in 0..calls {
            let kv = MemoryKv::new();
            let b = baseline(&kv);
            let interrupted = op(&mut stopping(&kv, 7, kill), &b);
            assert!(interrupted.is_err(), "{name} stopped after call {kill} cannot have finished");
            let f = check(&kv, &b, name, kill, may_end);
            orphaned += usize::from(f.orphans > 0);
            drifts += usize::from(f.count_drift);
        }
        kill_points += calls;
        println!("{name:<42} {calls:>6} {orphaned:>22} {drifts:>12}");
    }
    println!("{kill_points} kill points");
    assert!(kill_points > 50, "every call of every operation is a kill point");
}

#[test]
fn garbage_collection_between_any_two_calls_of_any_operation_takes_nothing_in_flight() {
    let live = |kv: &MemoryKv| -> Vec<(String, Vec<u8>)> {
        let marks = |k: &str| {
            k == "rg/count-check" || parse_key(k).is_some_and(|(_, kind)| kind == KeyKind::ClaimMark)
        };
        kv.snapshot().into_iter().filter(|(k, _)| !marks(k)).collect()
    };
    for (name, op, _) in operations() {
        let alone = MemoryKv::new();
        let b = baseline(&alone);
        op(&mut healthy(&alone, 7), &b).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let raced = MemoryKv::new();
        let b = baseline(&raced);
        let racing = Stopping { kv: raced.clone(), left: u64::MAX, collecting: true };
        let mut g = Gate::new(config(), KvStore::new(racing, 7)).unwrap();
        op(&mut g, &b).unwrap_or_else(|e| panic!("{name} with collection between its calls: {e:?}"));
        assert_eq!(live(&raced), live(&alone), "{name}: collection took something in flight");
    }
}
