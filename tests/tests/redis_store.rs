//! `resume-gate-redis` against a real server: the semantics the gate relies on. A
//! compare-and-swap answers success exactly when it wrote (Spin's own Redis backend does not),
//! a key absent when watched must still be absent, counters are atomic and read back through
//! `increment(key, 0)`, prefixes keep clients apart, and a restart is survived.

use std::collections::BTreeSet;

use resume_gate::kv::Kv;
use tests::redis::{RedisServer, fresh_kv, shared};

#[test]
fn a_swap_succeeds_exactly_when_it_wrote() {
    let mut kv = fresh_kv();
    kv.set("k", b"one").unwrap();
    let (seen, first) = kv.watch("k").unwrap();
    let (_, second) = kv.watch("k").unwrap();
    assert_eq!(seen.as_deref(), Some(&b"one"[..]));
    assert!(kv.swap(first, b"two").unwrap(), "the key held what was watched");
    assert!(!kv.swap(second, b"three").unwrap(), "the key changed since it was watched");
    assert_eq!(kv.get("k").unwrap().as_deref(), Some(&b"two"[..]), "the losing swap wrote nothing");
}

#[test]
fn a_key_absent_when_watched_must_still_be_absent() {
    let mut kv = fresh_kv();
    let (seen, first) = kv.watch("fresh").unwrap();
    let (_, second) = kv.watch("fresh").unwrap();
    assert_eq!(seen, None);
    assert!(kv.swap(first, b"a").unwrap());
    assert!(!kv.swap(second, b"b").unwrap(), "two creators: one wins");
    assert_eq!(kv.get("fresh").unwrap().as_deref(), Some(&b"a"[..]));
    let (_, watched) = kv.watch("fresh").unwrap();
    kv.delete("fresh").unwrap();
    assert!(!kv.swap(watched, b"c").unwrap(), "a key deleted since it was watched");
    assert_eq!(kv.get("fresh").unwrap(), None);
}

#[test]
fn racing_swaps_from_many_clients_each_win_exactly_when_they_wrote() {
    const CLIENTS: usize = 8;
    const ROUNDS: usize = 50;
    let base = fresh_kv();
    base.clone().set("counter", b"0").unwrap();
    let handles: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let mut kv = base.clone();
            std::thread::spawn(move || {
                let mut wins = Vec::new();
                for r in 0..ROUNDS {
                    loop {
                        let (value, watched) = kv.watch("counter").unwrap();
                        let n: u64 = String::from_utf8(value.unwrap())
                            .unwrap()
                            .split(':')
                            .next()
                            .unwrap()
                            .parse()
                            .unwrap();
                        if kv.swap(watched, format!("{}:{c}.{r}", n + 1).as_bytes()).unwrap() {
                            wins.push(n + 1);
                            break;
                        }
                    }
                }
                wins
            })
        })
        .collect();
    let wins: Vec<u64> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let distinct: BTreeSet<u64> = wins.iter().copied().collect();
    assert_eq!(distinct.len(), CLIENTS * ROUNDS, "every reported win wrote its own increment");
    assert_eq!(distinct.last(), Some(&((CLIENTS * ROUNDS) as u64)), "and every write reported a win");
}

#[test]
fn counters_are_atomic_and_read_through_a_zero_increment() {
    let base = fresh_kv();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let mut kv = base.clone();
            std::thread::spawn(move || (0..100).map(|_| kv.increment("n", 1).unwrap()).collect::<Vec<_>>())
        })
        .collect();
    let all: BTreeSet<i64> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    assert_eq!(all, (1..=400).collect(), "each increment got its own value");
    let mut kv = base.clone();
    assert_eq!(kv.increment("n", 0).unwrap(), 400);
    assert_eq!(kv.increment("absent", 0).unwrap(), 0);
}

#[test]
fn prefixes_keep_clients_apart() {
    let (mut a, mut b) = (fresh_kv(), fresh_kv());
    a.set("same", b"a").unwrap();
    b.set("same", b"b").unwrap();
    assert_eq!(a.get("same").unwrap().as_deref(), Some(&b"a"[..]));
    assert_eq!(a.keys().unwrap(), ["same"]);
    let other = shared().kv("*?[");
    assert!(other.keys().unwrap().is_empty(), "a prefix with glob characters matches literally");
}

#[test]
fn a_restart_fails_calls_meanwhile_and_keeps_the_data() {
    let mut server = RedisServer::start();
    let mut kv = server.kv("");
    kv.set("kept", b"yes").unwrap();
    server.stop();
    assert!(kv.get("kept").is_err(), "no server: an error, not an empty answer");
    server.restart();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let value = loop {
        match kv.get("kept") {
            Ok(v) => break v,
            Err(_) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(100))
            }
            Err(e) => panic!("the client never reconnected: {}", e.0),
        }
    };
    assert_eq!(value.as_deref(), Some(&b"yes"[..]));
}

/// The slot-deciding part of a key, as Redis Cluster computes it: the text between the first
/// `{` and the next `}`, when not empty; else the whole key.
fn hash_tag(key: &str) -> &str {
    key.find('{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.find('}').filter(|close| *close > 0).map(|close| &rest[..close])
        })
        .unwrap_or(key)
}

#[test]
fn every_key_of_a_session_carries_its_hash_tag_and_nothing_else_does() {
    use resume_gate::kv::{KeyKind, KvStore, is_global_key, parse_key};
    use resume_gate::{Config, Decision, Gate, Origin, RequestId};

    let kv = fresh_kv();
    let mut gate = Gate::new(Config::default(), KvStore::new(kv.clone(), 7)).unwrap();
    let sessions = ["plain", "a{b}c", "}{", "x/y%2F{z}", "%7B"];
    for (i, s) in sessions.iter().enumerate() {
        gate.open_session(s, 1, [i as u8; 8]).unwrap();
        let standalone = gate.open_stream(s, Origin::Standalone, 1).unwrap();
        let call = gate.open_stream(s, Origin::Request(RequestId::Text(format!("r{{{i}}}"))), 1).unwrap();
        gate.emit(s, call.stream, "progress".into(), 1).unwrap();
        gate.emit(s, standalone.stream, "note".into(), 1).unwrap();
        let resumed = gate.reconnect(s, call.priming.id.as_bytes(), Origin::Standalone, 2).unwrap();
        assert!(matches!(resumed, Decision::Resume(_)), "{s}: {resumed:?}");
    }
    let keys = kv.keys().unwrap();
    let mut kinds = std::collections::HashSet::new();
    let mut tags = BTreeSet::new();
    for key in &keys {
        if is_global_key(key) {
            continue;
        }
        let (session, kind) = parse_key(key).unwrap_or_else(|| panic!("{key}: outside the layout"));
        assert!(sessions.contains(&session.as_str()), "{key}: names {session:?}");
        let tag = hash_tag(key);
        assert!(!tag.contains(['{', '}', '/']), "{key}: the tag is the escaped id alone");
        assert_eq!(hash_tag(&resume_gate::kv::session_key(&session)), tag, "{key}: its session's tag");
        tags.insert(tag.to_owned());
        kinds.insert(std::mem::discriminant(&kind));
    }
    assert_eq!(tags.len(), sessions.len(), "one tag per session, no two alike");
    let every_kind = [
        KeyKind::Session,
        KeyKind::StreamCounter,
        KeyKind::QueueSlot,
        KeyKind::Bytes,
        KeyKind::Stream(1),
        KeyKind::Event(1),
        KeyKind::Claim,
    ];
    assert_eq!(kinds.len(), every_kind.len(), "every per-session kind was written: {keys:?}");
    for s in sessions {
        gate.end_session(s).unwrap();
    }
    let left: Vec<String> = kv.keys().unwrap().into_iter().filter(|k| !is_global_key(k)).collect();
    assert!(left.is_empty(), "keys of ended sessions: {left:?}");
}
