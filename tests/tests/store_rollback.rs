//! A store that goes back in time — Redis restarted from an older snapshot, as an asynchronous
//! replica promoted would be — against host-example: no event id is handed out twice, no cursor
//! from before the rollback resumes into a stream made after it, and the calls whose events
//! were lost end with `-32001` instead of a wait without end.

use std::collections::HashSet;

use serde_json::{Value, json};
use tests::http::{Client, Frame};
use tests::processes::ServerProcess;
use tests::redis::RedisServer;

const WAIT: std::time::Duration = std::time::Duration::from_secs(15);

fn ids(frames: &[Frame]) -> Vec<String> {
    frames.iter().filter_map(|f| f.id.clone()).filter(|id| !id.is_empty()).collect()
}

fn lost(frames: &[Frame], request: i64) -> bool {
    frames
        .iter()
        .map(Frame::json)
        .any(|v: Value| v["id"] == json!(request) && v["error"]["code"] == json!(-32001))
}

#[test]
fn a_store_restored_from_an_older_snapshot_hands_no_id_out_twice_and_no_cursor_crosses() {
    // No append-only file: a restart brings back the last `SAVE`, nothing after it.
    let mut redis = RedisServer::start_in_memory();
    let host = ServerProcess::host_example(&["--store", &redis.url(), "--lease-ms", "2000"]);
    let client = Client::initialize(host.addr);
    let mut long = client.call(2, "countdown", json!({"n": 30, "interval_ms": 1000}), &[]);
    let mut before: Vec<Frame> = (0..2).map(|_| long.next_frame(WAIT).expect("priming, progress")).collect();
    let () = redis::cmd("SAVE").query(&mut redis.connection()).unwrap();
    before.extend((0..2).map(|_| long.next_frame(WAIT).expect("progress after the snapshot")));
    let answered =
        client.call(3, "countdown", json!({"n": 2, "interval_ms": 0}), &[]).frames_until_closed(WAIT);
    assert!(answered.iter().any(|f| f.json().get("result").is_some()));
    let seen: HashSet<String> = ids(&before).into_iter().chain(ids(&answered)).collect();

    // Right after an event, so that the next one finds the store restored.
    redis.restart();

    let rest = long.frames_until_closed(WAIT);
    assert!(lost(&rest, 2), "the running call whose events were lost gets -32001: {rest:?}");
    for id in ids(&rest) {
        assert!(!seen.contains(&id), "{id} was handed out twice");
    }
    let new = client.call(4, "countdown", json!({"n": 2, "interval_ms": 0}), &[]).frames_until_closed(WAIT);
    assert!(new.iter().any(|f| f.json().get("result").is_some()), "{new:?}");
    for id in ids(&new) {
        assert!(!seen.contains(&id), "{id} was handed out twice");
    }
    // A cursor of the answered call, whose stream the store lost: a fresh stream, never the
    // new call's events.
    let mut get = client.get(answered.last().and_then(|f| f.id.as_deref()));
    assert_eq!(get.status, 200);
    let crossed =
        get.next_frame(WAIT).into_iter().chain(get.next_frame(std::time::Duration::from_millis(500)));
    for frame in crossed {
        assert!(!new.iter().any(|n| n.id.is_some() && n.id == frame.id), "resumed into a newer stream");
        assert!(frame.json().get("result").is_none(), "a result crossed: {frame:?}");
    }
    drop(get);
    // The running call's last cursor, past what the store kept: its -32001 once the lease
    // its writer stopped renewing has passed.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let mut get = client.get(before.last().and_then(|f| f.id.as_deref()));
    assert_eq!(get.status, 200);
    let frames: Vec<Frame> =
        std::iter::from_fn(|| get.next_frame(std::time::Duration::from_secs(2))).take(3).collect();
    assert!(lost(&frames, 2), "{frames:?}");
}

/// `INFO replication` of `redis`, as text.
fn replication(redis: &RedisServer) -> String {
    redis::cmd("INFO").arg("replication").query(&mut redis.connection()).unwrap()
}

#[test]
fn with_store_durable_a_write_no_replica_has_fails_instead_of_being_acknowledged() {
    let primary = RedisServer::start_in_memory();
    let mut replica = RedisServer::start_in_memory();
    let addr = primary.addr();
    let () = redis::cmd("REPLICAOF")
        .arg(addr.ip().to_string())
        .arg(addr.port())
        .query(&mut replica.connection())
        .unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while !replication(&replica).contains("master_link_status:up") {
        assert!(std::time::Instant::now() < deadline, "the replica never synced: {}", replication(&replica));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let args = ["--store", &primary.url(), "--store-durable", "--store-timeout-ms", "1000"];
    let host = ServerProcess::host_example(&args);
    let client = Client::initialize(host.addr);
    let answered = client.call(2, "append", json!({"text": "kept by two"}), &[]).frames_until_closed(WAIT);
    assert!(answered.iter().any(|f| f.json().get("result").is_some()), "{answered:?}");
    let on_replica: Vec<String> = redis::cmd("KEYS").arg("rg:*").query(&mut replica.connection()).unwrap();
    assert!(on_replica.iter().any(|k| k.ends_with("/s")), "the replica has the session: {on_replica:?}");

    replica.stop();
    let started = std::time::Instant::now();
    let resp = client.call(3, "append", json!({"text": "kept by one"}), &[]);
    assert_eq!(resp.status, 503, "a write only the primary has is not acknowledged");
    let body = resp.body();
    assert!(body.contains("replica"), "{body}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
}
