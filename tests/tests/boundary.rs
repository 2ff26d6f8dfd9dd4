//! Garbage across the component boundary: no input a client or host can send makes the
//! component trap (a trap would poison the instance and lose every session). Each call must
//! come back as a typed error or a `fresh` decision, and the instance must keep working.

use gate_host::memory::types::{Config, Decision, GateError, Origin, RequestId, StaleReason};
use proptest::prelude::*;
use tests::drivers::{Wasm, engine};

fn gate() -> Wasm {
    Wasm::new().expect("instantiate the component")
}

/// After the abuse, a normal drop-and-resume still works on the same instance.
fn still_works(w: &mut Wasm) {
    let (g, store) = w.instance.exports();
    g.call_open_session(&mut *store, "healthy").unwrap().unwrap();
    let origin = Origin::Request(RequestId::Text("after-abuse".into()));
    let opened = g.call_open_stream(&mut *store, "healthy", &origin).unwrap().unwrap();
    let e = g.call_on_emit(&mut *store, "healthy", opened.stream, "one").unwrap().unwrap();
    g.call_on_detach(&mut *store, "healthy", opened.stream, opened.attachment).unwrap().unwrap();
    let d = g.call_on_reconnect(&mut *store, "healthy", opened.priming.id.as_bytes(), &Origin::Standalone);
    match d.unwrap().unwrap() {
        Decision::Resume(r) => {
            let replayed: Vec<_> = r.events.iter().map(|x| (x.id.as_str(), x.seq, x.data.as_str())).collect();
            assert_eq!(replayed, vec![(e.id.as_str(), e.seq, "one")]);
        }
        Decision::Fresh(f) => panic!("expected a resume, got {:?}", f.reason),
    }
}

/// The imports of a component file, by name.
fn imports_of(path: &str) -> Vec<String> {
    let engine = wasmtime::Engine::default();
    let component = wasmtime::component::Component::from_file(&engine, path).unwrap();
    let ty = component.component_type();
    let mut imports: Vec<String> = ty.imports(&engine).map(|(name, _)| name.to_owned()).collect();
    imports.sort();
    imports
}

/// Issue 18's aim is 100 KB; these ceilings are where the artifacts stand, so that growth is a
/// decision, not an accident: 153 KB and 177 KB at the time of writing. (The memory world shed
/// the persistent buffer index with the small key-value records; the key-value world took on
/// garbage collection and the session count's check, ~+20 KB; exactly-once batches took three
/// exports, `join-stream`, `check-stream` and `release-stream`, ~+8 KB each world, and the
/// admission holds ~+3 KB, the memory store's reclaim index sharing the answered index's
/// B-tree code; the key-value world's byte budgets, ~+10 KB: the code that makes room was
/// dead there while that store counted no bytes.)
const MEMORY_WORLD_MAX_BYTES: usize = 156 << 10;
const KV_WORLD_MAX_BYTES: usize = 188 << 10;

#[test]
fn each_world_imports_only_a_clock_randomness_and_its_store_and_stays_small() {
    let bytes = std::fs::read(gate_host::GATE_MEMORY_WASM).unwrap();
    assert_eq!(
        &bytes[..8],
        &[0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00],
        "a component, not a core module"
    );
    assert!(bytes.len() <= MEMORY_WORLD_MAX_BYTES, "gate-memory is {} bytes", bytes.len());
    let kv_bytes = std::fs::metadata(gate_host::GATE_KV_WASM).unwrap().len() as usize;
    assert!(kv_bytes <= KV_WORLD_MAX_BYTES, "gate-kv is {kv_bytes} bytes");

    let (clock, random) = ("wasi:clocks/wall-clock@0.2.0", "wasi:random/random@0.2.0");
    assert_eq!(imports_of(gate_host::GATE_MEMORY_WASM), [clock, random]);
    assert_eq!(
        imports_of(gate_host::GATE_KV_WASM),
        [clock, "wasi:keyvalue/atomics@0.2.0-draft2", "wasi:keyvalue/store@0.2.0-draft2", random]
    );

    let engine = engine();
    let component = wasmtime::component::Component::from_file(&engine, gate_host::GATE_MEMORY_WASM).unwrap();
    let ty = component.component_type();
    let exports: Vec<String> = ty.exports(&engine).map(|(name, _)| name.to_owned()).collect();
    assert!(exports.contains(&"mcp:resume-gate/gate@0.1.0".to_owned()), "{exports:?}");
    assert!(exports.contains(&"mcp:resume-gate/types@0.1.0".to_owned()), "{exports:?}");
}

#[test]
fn huge_and_invalid_inputs_get_typed_errors_or_fresh_decisions_never_a_trap() {
    let mut w = gate();
    let (g, store) = w.instance.exports();
    let huge = "x".repeat(1 << 20);
    assert_eq!(g.call_open_session(&mut *store, &huge).unwrap(), Err(GateError::InvalidSessionId));
    assert_eq!(g.call_open_session(&mut *store, "").unwrap(), Err(GateError::InvalidSessionId));
    assert_eq!(g.call_open_session(&mut *store, "bad\nid").unwrap(), Err(GateError::InvalidSessionId));
    assert_eq!(g.call_end_session(&mut *store, "nobody").unwrap(), Err(GateError::UnknownSession));
    assert_eq!(g.call_has_session(&mut *store, &huge).unwrap(), Ok(false));
    assert_eq!(g.call_has_session(&mut *store, "nobody").unwrap(), Ok(false));
    assert_eq!(
        g.call_open_stream(&mut *store, &huge, &Origin::Standalone).unwrap(),
        Err(GateError::InvalidSessionId)
    );
    assert_eq!(g.call_on_emit(&mut *store, "nobody", 1, "x").unwrap(), Err(GateError::UnknownSession));
    assert_eq!(
        g.call_on_reconnect(&mut *store, "nobody", b"rg1", &Origin::Standalone).unwrap(),
        Err(GateError::UnknownSession)
    );

    g.call_open_session(&mut *store, "s").unwrap().unwrap();
    let request = Origin::Request(RequestId::Text(huge.clone()));
    assert_eq!(g.call_open_stream(&mut *store, "s", &request).unwrap(), Err(GateError::InvalidRequestId));
    let cursor = b"rg1".as_slice();
    assert_eq!(
        g.call_on_reconnect(&mut *store, "s", cursor, &request).unwrap(),
        Err(GateError::InvalidRequestId)
    );
    let request = Origin::Request(RequestId::Text("r".repeat(256)));
    let opened = g.call_open_stream(&mut *store, "s", &request).unwrap().unwrap();
    assert_eq!(g.call_on_emit(&mut *store, "s", u64::MAX, "x").unwrap(), Err(GateError::UnknownStream));
    assert_eq!(g.call_abort_stream(&mut *store, "s", 0).unwrap(), Err(GateError::UnknownStream));
    assert_eq!(g.call_on_detach(&mut *store, "s", u64::MAX, u32::MAX).unwrap(), Ok(()));
    assert_eq!(g.call_on_detach(&mut *store, "s", opened.stream, 0).unwrap(), Ok(()));
    let big = "y".repeat(8 << 20);
    let e = g.call_on_emit(&mut *store, "s", opened.stream, &big).unwrap().unwrap();
    assert_eq!(e.seq, 1, "an oversized event is still given an id and sent live");
    let d = g
        .call_on_reconnect(&mut *store, "s", opened.priming.id.as_bytes(), &Origin::Standalone)
        .unwrap()
        .unwrap();
    assert!(matches!(d, Decision::Fresh(ref f) if f.reason == StaleReason::Evicted), "{d:?}");

    let cursors: Vec<Vec<u8>> = vec![
        vec![],
        vec![0; 4 << 20],
        vec![0xff; 129],
        b"rg1.ffffffffffffffff.ffffffffffff.18446744073709551615.18446744073709551615".to_vec(),
        b"rg1.ffffffffffffffff.ffffffffffff.18446744073709551616.0".to_vec(),
        "rg1.é".as_bytes().to_vec(),
        huge.clone().into_bytes(),
    ];
    for cursor in cursors {
        let d = g.call_on_reconnect(&mut *store, "s", &cursor, &Origin::Standalone).unwrap().unwrap();
        assert!(matches!(d, Decision::Fresh(_)));
        let post = Origin::Request(RequestId::Number(i64::MIN));
        let _ = g.call_on_reconnect(&mut *store, "s", &cursor, &post).unwrap();
    }
    still_works(&mut w);
}

#[test]
fn invalid_configurations_are_refused_and_the_old_one_kept() {
    let mut w = gate();
    let (g, store) = w.instance.exports();
    let good = g.call_default_config(&mut *store).unwrap();
    let bad = [
        Config { max_events_per_stream: 0, ..good.clone() },
        Config { retention_ms: 0, ..good.clone() },
        Config { signing_key: Some(vec![]), ..good.clone() },
        Config { signing_key: Some(vec![1; 1 << 20]), ..good.clone() },
    ];
    for config in bad {
        assert!(matches!(g.call_configure(&mut *store, &config).unwrap(), Err(GateError::InvalidConfig(_))));
    }
    still_works(&mut w);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_calls_never_trap(
        calls in prop::collection::vec(
            (0u8..9, ".{0,40}", prop::collection::vec(any::<u8>(), 0..200), any::<u64>(), any::<u32>()),
            1..40,
        )
    ) {
        let mut w = gate();
        {
            let (g, store) = w.instance.exports();
            for (kind, text, bytes, n, a) in &calls {
                let session = if text.len() % 2 == 0 { "known" } else { text.as_str() };
                let trapped = match kind {
                    0 => g.call_open_session(&mut *store, session).map(drop),
                    1 => g.call_open_stream(&mut *store, session, &Origin::Request(RequestId::Text(text.clone()))).map(drop),
                    2 => g.call_on_emit(&mut *store, session, n % 4, text).map(drop),
                    3 => g.call_on_terminal(&mut *store, session, n % 4, text).map(drop),
                    4 => g.call_on_detach(&mut *store, session, n % 4, *a).map(drop),
                    5 => {
                        let ids: Vec<RequestId> = bytes.chunks(3).map(|c| RequestId::Text(String::from_utf8_lossy(c).into())).collect();
                        g.call_join_stream(&mut *store, session, n % 4, &ids).map(drop)
                    }
                    6 => g.call_check_stream(&mut *store, session, n % 4, *a).map(drop),
                    7 => g.call_release_stream(&mut *store, session, n % 4).map(drop),
                    _ => g.call_on_reconnect(&mut *store, session, bytes, &Origin::Standalone).map(drop),
                };
                prop_assert!(trapped.is_ok(), "trap: {:?}", trapped);
            }
        }
        still_works(&mut w);
    }
}

/// A host that still meets a trap (here: the host refuses the component more linear memory, so
/// its allocator fails) recreates the instance, answers with a store error (`503`, never
/// `404`), and serves on; the memory world's sessions went with the old instance.
#[test]
fn a_trap_recreates_the_instance_and_is_a_store_error_never_unknown_session() {
    use gate_host::memory::MemoryWorld;
    use gate_host::supervised::{MemoryMaker, Supervised};
    use mcp_transport::gate::GateApi;
    let maker = MemoryMaker { pre: tests::drivers::prepared_memory(), memory_limit: 8 << 20 };
    let mut host = Supervised::<MemoryWorld>::new(maker).unwrap();
    host.open_session("victim").unwrap();
    let origin = resume_gate::Origin::Request(resume_gate::RequestId::Number(1));
    let big = "x".repeat(256 << 10);
    let failure = (0..32)
        .find_map(|i| {
            let origin = resume_gate::Origin::Request(resume_gate::RequestId::Number(i));
            let stream = match host.open_stream("victim", &origin) {
                Ok(opened) => opened.stream,
                Err(e) => return Some(e),
            };
            (0..4).find_map(|_| host.emit("victim", stream, &big).err())
        })
        .expect("the memory cap is reached");
    assert!(matches!(failure, resume_gate::GateError::Store(_)), "{failure:?}");
    assert_eq!(host.has_session("victim"), Ok(false), "a new instance: the session went with the old one");
    host.open_session("after").unwrap();
    let opened = host.open_stream("after", &origin).unwrap();
    host.emit("after", opened.stream, "ok").unwrap();
}
