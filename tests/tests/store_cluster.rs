//! host-example processes on a three-master Redis Cluster (`redis+cluster://`, Valkey with
//! `cluster-enabled yes`, the slots assigned by the test): sessions spread over the masters by
//! their hash tags, no command crosses slots, and a session's slot moved to another master
//! while its call runs (`MIGRATE`, clients meeting `ASK` then `MOVED`) loses and duplicates
//! nothing. The raw-HTTP scenarios and the TypeScript client run on a cluster too
//! (`two_host_examples_over_a_cluster` in `http_scenarios` and `js_clients`).

use serde_json::json;
use tests::http::{Client, Frame};
use tests::processes::ServerProcess;
use tests::redis_cluster::RedisCluster;

const WAIT: std::time::Duration = std::time::Duration::from_secs(15);

fn progress(frames: &[Frame]) -> Vec<u64> {
    frames.iter().filter_map(|f| f.json()["params"]["progress"].as_u64()).collect()
}

fn results(frames: &[Frame], id: i64) -> usize {
    frames.iter().map(Frame::json).filter(|v| v["id"] == json!(id) && v.get("result").is_some()).count()
}

#[test]
fn sessions_spread_over_the_masters_and_a_slot_moved_mid_call_loses_and_duplicates_nothing() {
    let cluster = RedisCluster::start();
    let url = cluster.url();
    let a = ServerProcess::host_example(&["--store", &url]);
    let b = ServerProcess::host_example(&["--store", &url]);
    let clients: Vec<Client> = (0..12).map(|_| Client::initialize(a.addr)).collect();
    for c in &clients {
        let done = c.call(2, "countdown", json!({"n": 1, "interval_ms": 0}), &[]).frames_until_closed(WAIT);
        assert_eq!(results(&done, 2), 1, "{done:?}");
    }
    let per_node = cluster.keys_per_node();
    assert!(per_node.iter().all(|n| *n > 0), "every master holds sessions: {per_node:?}");

    let c = &clients[0];
    let slot = cluster.slot(&format!("rg:rg/{{{}}}/s", c.session));
    let mut post = c.call(3, "countdown", json!({"n": 20, "interval_ms": 100}), &[]);
    let mut seen: Vec<Frame> = (0..4).map(|_| post.next_frame(WAIT).expect("priming and progress")).collect();
    let to = (cluster.owner(slot) + 1) % 3;
    // While the slot moves, its keys split between two masters: the call goes on writing.
    cluster.migrate(slot, to, || seen.push(post.next_frame(WAIT).expect("progress while the slot moves")));
    seen.extend((0..2).map(|_| post.next_frame(WAIT).expect("progress after the move")));
    drop(post);
    let on_b = Client { addr: b.addr, session: c.session.clone(), version: c.version };
    let appended = on_b.call(4, "append", json!({"text": "after the move"}), &[]).frames_until_closed(WAIT);
    assert_eq!(results(&appended, 4), 1, "{appended:?}");
    let cursor = seen.last().and_then(|f| f.id.clone()).expect("an event id");
    let rest = on_b.get(Some(&cursor)).frames_until_closed(WAIT);

    let mut all = progress(&seen);
    all.extend(progress(&rest));
    let mut unique = all.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!((all.len(), unique.len()), (20, 20), "every progress once: {all:?}");
    assert_eq!(results(&rest, 3), 1, "the result once, on the resume: {rest:?}");
    let journal = on_b.call(5, "journal", json!({}), &[]).frames_until_closed(WAIT);
    let lines: Vec<_> = journal
        .iter()
        .map(Frame::json)
        .filter_map(|v| v["result"]["structuredContent"]["lines"].as_array().cloned())
        .flatten()
        .collect();
    assert_eq!(lines, [json!("after the move")], "the append ran once: {journal:?}");
    let moved: Vec<String> = redis::cmd("CLUSTER")
        .arg("GETKEYSINSLOT")
        .arg(slot)
        .arg(100)
        .query(&mut cluster.nodes()[to].connection())
        .unwrap();
    assert!(moved.iter().any(|k| k.ends_with("/s")), "the session lives on its new master: {moved:?}");
}

#[test]
fn garbage_collection_scans_every_master() {
    let cluster = RedisCluster::start();
    let url = cluster.url();
    let a = ServerProcess::host_example(&["--store", &url]);
    for _ in 0..6 {
        let c = Client::initialize(a.addr);
        assert_eq!(c.call(2, "countdown", json!({"n": 0}), &[]).status, 200);
    }
    let kv = resume_gate_redis::RedisKv::connect(&url).unwrap().with_prefix("rg:");
    let listed = kv.keys().unwrap();
    let stored: usize = cluster.keys_per_node().iter().sum();
    assert_eq!(listed.len(), stored, "a listing covers every master: {listed:?}");
    let binary = tests::processes::built_binary("edge-host", "edge-host");
    let out = std::process::Command::new(binary).args(["collect-garbage", "--store", &url]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
