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

mod memory {
    use super::*;

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

    /// A session whose call's instance died (its stream still open, never detached) holds no
    /// work once its lease passed and the retention since its last event did: it is reclaimed
    /// then, not kept forever.
    #[test]
    fn a_session_whose_writer_died_is_reclaimed_after_lease_and_retention() {
        let kv = MemoryKv::new();
        let mut gate = gate(1, &kv);
        let c = gate.config().clone();
        gate.open_session("crashed", 0, [1; 8]).unwrap();
        let call = gate.open_stream("crashed", Origin::Request(RequestId::Number(1)), 0).unwrap();
        gate.emit("crashed", call.stream, "progress".into(), 0).unwrap();
        assert!(c.retention_ms > c.lease_ms);
        let within = c.retention_ms;
        assert_eq!(gate.open_session("newcomer", within, [2; 8]), Err(GateError::TooManySessions));
        let info = gate.open_session("newcomer", within + 1, [2; 8]).unwrap();
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
        assert!(small <= 30, "{small} calls per admission");
    }
}
