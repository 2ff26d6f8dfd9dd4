//! Property tests of the native core against the reference model (`tests::model`):
//! random operation sequences over three sessions, with small bounds so that eviction,
//! expiry, tombstones and session reclaiming all happen; over the memory store and the
//! key-value store, under a tight memory budget, and with any bytes as a cursor.

use proptest::prelude::*;
use resume_gate::kv::{Kv, KvStore, MemoryKv, Semantics};
use resume_gate::{Config, Decision, GateError, Origin};
use tests::drivers::InProcess;
use tests::held::KvView;
use tests::model::Model;
use tests::ops::{Op, Outcome, Run, ops, small_config, tight_budget_config};

const CASES: u32 = 2_000;

fn holds(ops: &[Op], signed: bool) -> Result<(), TestCaseError> {
    let config = small_config(signed);
    let mut run = Run::new(InProcess::with_config(config.clone()).expect("valid config"), &config);
    let mut model = Model::new(config, run.now);
    for op in ops {
        let (call, outcome) = run.step(op);
        model.check(&call, &outcome, run.driver.gate.store())?;
    }
    Ok(())
}

/// The same promises with the state in a key-value store; at the end, ending every session
/// leaves nothing behind but the session count, its change counter and check, and the
/// admission queue's two counters.
fn holds_over_kv(ops: &[Op], signed: bool, semantics: Semantics) -> Result<(), TestCaseError> {
    let config = small_config(signed);
    let kv = MemoryKv::with_semantics(semantics);
    let mut run = Run::new(
        InProcess::with_store(config.clone(), KvStore::new(kv.clone(), 7)).expect("valid config"),
        &config,
    );
    let mut model = Model::new(config.clone(), run.now);
    for op in ops {
        let (call, outcome) = run.step(op);
        model.check(&call, &outcome, &KvView(&kv))?;
    }
    // With no operation in flight every key is one a live record leads to: garbage collection,
    // however late, takes nothing (two passes: a claim is taken at its second look).
    let late = run.now + 2 * (config.lease_ms + 1);
    for now in [late, late + config.lease_ms + 1] {
        let mut cursor = None;
        loop {
            let swept = run.driver.gate.collect_garbage(cursor.as_deref(), now).expect("collect");
            prop_assert_eq!(swept.removed, 0, "collection took a live key");
            cursor = swept.next;
            if cursor.is_none() {
                break;
            }
        }
    }
    for session in model.sessions.keys() {
        run.driver.gate.end_session(session).ok();
    }
    let left: Vec<String> = kv
        .snapshot()
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| {
            !["rg/sessions", "rg/changes", "rg/count-check", "rg/bytes", "rg/q/head", "rg/q/tail"]
                .contains(&k.as_str())
        })
        .collect();
    prop_assert!(left.is_empty(), "keys left after every session ended: {left:?}");
    let total = kv.clone().increment("rg/bytes", 0).unwrap();
    prop_assert_eq!(total, 0, "bytes still counted after every session ended");
    Ok(())
}

/// Under a memory budget tighter than the other bounds: the budget holds after every step
/// (one event's data may pass through, never stay), every session boundary holds, and the only
/// refusals are the documented ones.
fn the_budget_holds(ops: &[Op]) -> Result<(), TestCaseError> {
    let config = tight_budget_config(false);
    let mut run = Run::new(InProcess::with_config(config.clone()).expect("valid config"), &config);
    for op in ops {
        let (call, outcome) = run.step(op);
        let refusal = match &outcome {
            Outcome::Session(Err(e)) | Outcome::Unit(Err(e)) => Some(e.clone()),
            Outcome::Opened(Err(e)) => Some(e.clone()),
            Outcome::Event(Err(e)) | Outcome::Decision(Err(e)) => Some(e.clone()),
            _ => None,
        };
        if let Some(e) = refusal {
            let allowed = matches!(
                e,
                GateError::OverBudget
                    | GateError::TooManySessions
                    | GateError::TooManyStreams
                    | GateError::UnknownSession
                    | GateError::UnknownStream
                    | GateError::StreamFinished
                    | GateError::DuplicateRequestId
                    | GateError::NotARequestStream
            );
            prop_assert!(allowed, "{call:?} refused with {e:?}");
        }
        let st = run.driver.gate.store().stats();
        prop_assert!(st.held <= config.max_total_bytes, "{call:?} left {} bytes held", st.held);
        let most = st.most_held_by_a_session;
        prop_assert!(most <= config.max_bytes_per_session, "{call:?} left {most} bytes in a session");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn the_memory_budget_holds_over_random_operation_sequences(ops in ops(80)) {
        the_budget_holds(&ops)?;
    }

    #[test]
    fn every_promise_holds_over_random_operation_sequences(ops in ops(80)) {
        holds(&ops, false)?;
    }

    #[test]
    fn every_promise_holds_with_signed_ids(ops in ops(80)) {
        holds(&ops, true)?;
    }

    #[test]
    fn every_promise_holds_over_a_key_value_store(ops in ops(80)) {
        holds_over_kv(&ops, false, Semantics::Sqlite)?;
    }

    #[test]
    fn every_promise_holds_over_a_store_that_answers_like_spins_redis(ops in ops(80)) {
        holds_over_kv(&ops, false, Semantics::Redis)?;
    }

    #[test]
    fn every_promise_holds_over_a_key_value_store_with_signed_ids(ops in ops(80)) {
        holds_over_kv(&ops, true, Semantics::Sqlite)?;
    }

    #[test]
    fn any_bytes_as_a_cursor_are_a_fresh_decision_never_a_panic(cursor in prop::collection::vec(any::<u8>(), 0..400)) {
        let mut gate = resume_gate::Gate::in_memory(Config::default()).unwrap();
        gate.open_session("s", 0, [1; 8]).unwrap();
        let d = gate.reconnect("s", &cursor, Origin::Standalone, 0).unwrap();
        prop_assert!(matches!(d, Decision::Fresh(_)));
    }
}
