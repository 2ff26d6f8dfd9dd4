//! Admission no client can monopolize: a flood of sessions never displaces one with work in
//! flight, a newcomer always gets in while some session is idle, and finding the session to
//! reclaim costs the same however many sessions there are — on the memory store and on the
//! key-value store alike.

use resume_gate::kv::{KvStore, MemoryKv};
use resume_gate::{Config, Decision, Gate, GateError, Origin, RequestId, Store};

const MINUTE: u64 = 60_000;

fn config(max_sessions: u32) -> Config {
    Config { max_sessions, ..Config::default() }
}

/// An honest client with a call in flight (its connection dropped, events buffered) and one
/// with a live GET stream, then a flood of ten times `max-sessions` new sessions.
fn a_flood_never_displaces_work_in_flight<S: Store>(mut gate: Gate<S>) {
    let max = gate.config().max_sessions;
    let mut now = 1_000_000;
    gate.open_session("honest", now, [1; 8]).unwrap();
    let call = gate.open_stream("honest", Origin::Request(RequestId::Number(1)), now).unwrap();
    let progress = gate.emit("honest", call.stream, "progress 1".into(), now).unwrap();
    gate.detach("honest", call.stream, call.attachment, now).unwrap();
    gate.open_session("listener", now, [2; 8]).unwrap();
    gate.open_stream("listener", Origin::Standalone, now).unwrap();

    let mut reclaimed = 0;
    for i in 0..10 * max {
        now += 1;
        let info = gate.open_session(&format!("flood-{i}"), now, [3; 8]).expect("a newcomer always gets in");
        reclaimed += u32::from(info.reclaimed.is_some());
        assert_ne!(info.reclaimed.as_deref(), Some("honest"));
        assert_ne!(info.reclaimed.as_deref(), Some("listener"));
    }
    assert_eq!(reclaimed, 10 * max - (max - 2), "every admission past the bound reclaimed one session");

    gate.terminal("honest", call.stream, "the result".into(), now).unwrap();
    let resumed = gate.reconnect("honest", progress.id.as_bytes(), Origin::Standalone, now).unwrap();
    let Decision::Resume(r) = resumed else { panic!("the honest call did not resume: {resumed:?}") };
    assert_eq!(r.events.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(), ["the result"]);
    assert!(gate.has_session("listener").unwrap());
}

/// When every session holds work, admission refuses (`503`) instead of taking one.
fn a_table_full_of_work_refuses<S: Store>(mut gate: Gate<S>) {
    let max = gate.config().max_sessions;
    for i in 0..max {
        let id = format!("busy-{i}");
        gate.open_session(&id, 0, [1; 8]).unwrap();
        gate.open_stream(&id, Origin::Standalone, 0).unwrap();
    }
    assert_eq!(gate.open_session("newcomer", MINUTE, [2; 8]), Err(GateError::TooManySessions));
    assert_eq!(gate.counters().unwrap().sessions, u64::from(max));
}

/// A session whose only work was a result written in full to its connection holds nothing: a
/// flood of `initialize` plus one `ping` each cannot lock newcomers out.
fn a_result_written_in_full_holds_nothing<S: Store>(mut gate: Gate<S>) {
    let max = gate.config().max_sessions;
    for i in 0..max {
        let id = format!("pinged-{i}");
        gate.open_session(&id, 0, [1; 8]).unwrap();
        let ping = gate.open_stream(&id, Origin::Request(RequestId::Number(1)), 0).unwrap();
        gate.terminal(&id, ping.stream, "{}".into(), 0).unwrap();
    }
    let info = gate.open_session("newcomer", 1, [2; 8]).expect("a newcomer gets in at once");
    assert!(info.reclaimed.is_some_and(|id| id.starts_with("pinged-")));
}

/// A result recorded while nobody was attached is owed to its client until retention.
fn a_result_nobody_received_holds_until_retention<S: Store>(mut gate: Gate<S>) {
    let retention = gate.config().retention_ms;
    gate.open_session("owed", 0, [1; 8]).unwrap();
    let call = gate.open_stream("owed", Origin::Request(RequestId::Number(1)), 0).unwrap();
    gate.detach("owed", call.stream, call.attachment, 0).unwrap();
    gate.terminal("owed", call.stream, "{}".into(), 0).unwrap();
    for i in 1..gate.config().max_sessions {
        gate.open_session(&format!("busy-{i}"), 0, [1; 8]).unwrap();
        gate.open_stream(&format!("busy-{i}"), Origin::Standalone, 0).unwrap();
    }
    assert_eq!(gate.open_session("newcomer", retention, [2; 8]), Err(GateError::TooManySessions));
    let info = gate.open_session("newcomer", retention + 1, [2; 8]).unwrap();
    assert_eq!(info.reclaimed.as_deref(), Some("owed"));
}

/// A call nobody is attached to holds its session for `max-detached` only; past it the call is
/// given up: its next event or heartbeat is refused (the tool stops), and its client's
/// reconnect starts fresh (`aborted`) naming the request, so it gets `-32001`.
fn an_abandoned_call_is_given_up_after_max_detached<S: Store>(mut gate: Gate<S>) {
    let max_detached = gate.config().max_detached();
    let mut cursors = Vec::new();
    for id in ["abandoned", "comes-back-late"] {
        gate.open_session(id, 0, [1; 8]).unwrap();
        let call = gate.open_stream(id, Origin::Request(RequestId::Number(7)), 0).unwrap();
        cursors.push((call.stream, gate.emit(id, call.stream, "progress 1".into(), 0).unwrap().id));
        gate.detach(id, call.stream, call.attachment, 0).unwrap();
    }
    for i in 2..gate.config().max_sessions {
        gate.open_session(&format!("busy-{i}"), 0, [1; 8]).unwrap();
        gate.open_stream(&format!("busy-{i}"), Origin::Standalone, 0).unwrap();
    }
    // Within max-detached the calls run on and keep their sessions.
    let (stream, _) = &cursors[0];
    gate.emit("abandoned", *stream, "progress 2".into(), max_detached).unwrap();
    assert_eq!(gate.open_session("newcomer", max_detached, [2; 8]), Err(GateError::TooManySessions));
    // Past it, they are given up.
    let later = max_detached + 1;
    assert_eq!(gate.renew_lease("abandoned", *stream, later), Err(GateError::StreamFinished));
    assert_eq!(gate.emit("abandoned", *stream, "progress 3".into(), later), Err(GateError::StreamFinished));
    let (_, cursor) = &cursors[1];
    let decision = gate.reconnect("comes-back-late", cursor.as_bytes(), Origin::Standalone, later).unwrap();
    let Decision::Fresh(f) = decision else { panic!("an abandoned call resumed: {decision:?}") };
    assert_eq!((f.reason, f.stranded), (resume_gate::StaleReason::Aborted, vec![RequestId::Number(7)]));
    let info = gate.open_session("newcomer", later, [2; 8]).unwrap();
    assert_eq!(info.reclaimed.as_deref(), Some("abandoned"));
}

mod memory {
    use super::*;

    #[test]
    fn a_result_written_in_full_holds_nothing() {
        super::a_result_written_in_full_holds_nothing(Gate::in_memory(config(16)).unwrap());
    }

    #[test]
    fn a_result_nobody_received_holds_until_retention() {
        super::a_result_nobody_received_holds_until_retention(Gate::in_memory(config(4)).unwrap());
    }

    #[test]
    fn an_abandoned_call_is_given_up_after_max_detached() {
        super::an_abandoned_call_is_given_up_after_max_detached(Gate::in_memory(config(4)).unwrap());
    }

    #[test]
    fn a_flood_never_displaces_work_in_flight() {
        super::a_flood_never_displaces_work_in_flight(Gate::in_memory(config(64)).unwrap());
    }

    #[test]
    fn a_table_full_of_work_refuses() {
        super::a_table_full_of_work_refuses(Gate::in_memory(config(16)).unwrap());
    }

    #[test]
    fn a_flood_of_ten_times_the_default_table_is_admitted() {
        let mut gate = Gate::in_memory(Config::default()).unwrap();
        let n = 10 * gate.config().max_sessions;
        for i in 0..n {
            gate.open_session(&format!("s-{i}"), u64::from(i), [1; 8]).unwrap();
        }
        assert_eq!(gate.store().stats().sessions, Config::default().max_sessions as usize);
    }
}

mod key_value {
    use super::*;

    fn gate(max_sessions: u32, kv: &MemoryKv) -> Gate<KvStore<MemoryKv>> {
        Gate::new(config(max_sessions), KvStore::new(kv.clone(), 7)).unwrap()
    }

    #[test]
    fn a_flood_never_displaces_work_in_flight() {
        super::a_flood_never_displaces_work_in_flight(gate(64, &MemoryKv::new()));
    }

    #[test]
    fn a_table_full_of_work_refuses() {
        super::a_table_full_of_work_refuses(gate(16, &MemoryKv::new()));
    }

    #[test]
    fn a_result_written_in_full_holds_nothing() {
        super::a_result_written_in_full_holds_nothing(gate(16, &MemoryKv::new()));
    }

    #[test]
    fn a_result_nobody_received_holds_until_retention() {
        super::a_result_nobody_received_holds_until_retention(gate(4, &MemoryKv::new()));
    }

    #[test]
    fn an_abandoned_call_is_given_up_after_max_detached() {
        super::an_abandoned_call_is_given_up_after_max_detached(gate(4, &MemoryKv::new()));
    }

    /// A session whose call's instance died (its stream still open, never detached) holds no
    /// work once its lease passed: it is reclaimed then, not kept forever.
    #[test]
    fn a_session_whose_writer_died_is_reclaimed_once_its_lease_passed() {
        let kv = MemoryKv::new();
        let mut gate = gate(1, &kv);
        let c = gate.config().clone();
        gate.open_session("crashed", 0, [1; 8]).unwrap();
        let call = gate.open_stream("crashed", Origin::Request(RequestId::Number(1)), 0).unwrap();
        gate.emit("crashed", call.stream, "progress".into(), 0).unwrap();
        assert_eq!(gate.open_session("newcomer", c.lease_ms, [2; 8]), Err(GateError::TooManySessions));
        let info = gate.open_session("newcomer", c.lease_ms + 1, [2; 8]).unwrap();
        assert_eq!(info.reclaimed.as_deref(), Some("crashed"));
    }

    /// Store calls per admission at a full table, for a table of `max` sessions.
    fn calls_per_admission(max: u32) -> u64 {
        let kv = MemoryKv::new();
        let mut gate = gate(max, &kv);
        for i in 0..max {
            gate.open_session(&format!("s-{i}"), 0, [1; 8]).unwrap();
        }
        let before = kv.calls();
        for i in 0..100 {
            gate.open_session(&format!("new-{i}"), 1, [1; 8]).unwrap();
        }
        (kv.calls() - before) / 100
    }

    #[test]
    fn admission_costs_the_same_at_any_table_size_and_lists_no_keys() {
        let (small, large) = (calls_per_admission(16), calls_per_admission(1024));
        assert_eq!(small, large, "calls per admission: {small} at 16 sessions, {large} at 1024");
        assert!(small <= 36, "{small} calls per admission");
    }
}
