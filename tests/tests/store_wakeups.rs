//! Followers over Redis wait for the store's wake-ups instead of polling it: counted by the
//! store itself (`INFO commandstats`), and timed against the safety-net poll they would
//! otherwise wait for.

use serde_json::json;
use tests::http::Client;
use tests::processes::ServerProcess;
use tests::redis::RedisServer;

const WAIT: std::time::Duration = std::time::Duration::from_secs(15);

#[test]
fn a_hundred_idle_gets_cost_the_store_a_few_commands_each_not_a_poll_every_25_ms() {
    let redis = RedisServer::start();
    let host = ServerProcess::host_example(&["--store", &redis.url()]);
    let clients: Vec<Client> = (0..100).map(|_| Client::initialize(host.addr)).collect();
    redis.reset_command_counts();
    let mut gets: Vec<_> = clients.iter().map(|c| c.get(None)).collect();
    assert!(gets.iter().all(|g| g.status == 200));
    // Each follows for its 10 s, then ends with a `retry`.
    let started = std::time::Instant::now();
    for get in &mut gets {
        let frames = get.frames_until_closed(WAIT);
        assert!(frames.last().is_some_and(|f| f.retry.is_some()), "{frames:?}");
    }
    assert!(started.elapsed() >= std::time::Duration::from_secs(8), "they were held open");
    let counted = redis.command_counts();
    let total: u64 = counted.iter().map(|(_, n)| n).sum();
    eprintln!("100 idle GETs over 10 s: {total} commands: {counted:?}");
    // Each (21 when written): opening the standalone stream (its number, its record, the
    // session's reads and swap, the byte counts), one poll when it subscribes and one
    // safety-net poll (two reads each), its detach. Polling every 25 ms was ~640 each.
    assert!(total <= 100 * 24, "{total} commands: {counted:?}");
}

#[test]
fn a_resume_on_another_process_gets_each_event_when_the_store_announces_it() {
    let redis = RedisServer::start();
    let url = redis.url();
    let a = ServerProcess::host_example(&["--store", &url]);
    let b = ServerProcess::host_example(&["--store", &url]);
    let on_a = Client::initialize(a.addr);
    let mut post = on_a.call(2, "countdown", json!({"n": 2, "interval_ms": 1000}), &[]);
    let priming = post.next_frame(WAIT).expect("the priming event");
    drop(post);
    let on_b = Client { addr: b.addr, session: on_a.session.clone(), version: on_a.version };
    let resumed = std::time::Instant::now();
    let mut get = on_b.get(priming.id.as_deref());
    assert_eq!(get.status, 200);
    let frames = get.frames_until_closed(WAIT);
    let took = resumed.elapsed();
    let results: Vec<_> = frames.iter().map(|f| f.json()).filter(|v| v.get("result").is_some()).collect();
    assert_eq!(results.len(), 1, "{frames:?}");
    // The call ends ~2 s after it started; a follower that waited for its safety-net poll
    // (`Timing::WOKEN_POLL_MS`, 5 s) would have had it no sooner than 5 s after the resume.
    assert!(took < std::time::Duration::from_millis(4500), "the result came after {took:?}");
}
