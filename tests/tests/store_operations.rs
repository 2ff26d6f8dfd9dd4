//! A Redis store run as an operator runs one: with a password (or an ACL user), stopped under
//! the hosts, shared by two deployments, with every key expiring: against a real Valkey with
//! `requirepass`, and host-example and edge-host as processes, their logs read as an operator
//! reads them.

use serde_json::json;
use tests::http::{Client, request};
use tests::processes::ServerProcess;
use tests::redis::RedisServer;

const PASSWORD: &str = "pw-Zq7-never-shown";

/// Everything a client can see of one round of calls: every status and body.
fn exchange(client: &Client) -> String {
    let mut seen = String::new();
    let mut record = |status: u16, body: String| seen.push_str(&format!("{status} {body}\n"));
    let resp = client.call(2, "append", json!({"text": "a line"}), &[]);
    record(resp.status, resp.body());
    let resp = client.call(3, "journal", json!({}), &[]);
    record(resp.status, resp.body());
    let resp = client.get(None);
    let status = resp.status;
    record(status, if status == 200 { String::new() } else { resp.body() });
    let init = request(
        client.addr,
        "POST",
        &[("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
        .to_string()
        .as_bytes(),
    );
    record(init.status, init.body());
    seen
}

fn password_never_shown(package: &str, url: &str, redis: &mut RedisServer) {
    let log = tempfile::NamedTempFile::new().unwrap();
    let host = ServerProcess::logged(package, &["--store", url, "--lease-ms", "1000"], log.path());
    let client = Client::initialize(host.addr);
    let working = exchange(&client);
    assert!(working.starts_with("200 "), "the store works: {working}");
    redis.stop();
    let failing = exchange(&client);
    assert!(failing.contains("503"), "a store that is down is 503: {failing}");
    redis.restart();
    let recovered = exchange(&client);
    drop(host);
    let logged = std::fs::read_to_string(log.path()).unwrap();
    for (what, text) in [("bodies", &working), ("bodies", &failing), ("bodies", &recovered), ("log", &logged)]
    {
        assert!(!text.contains(PASSWORD), "the password is in the {what}: {text}");
    }
    assert!(logged.contains("***@127.0.0.1"), "the log names the store, redacted: {logged}");
    assert!(failing.contains("***@127.0.0.1") || !failing.contains("redis://"), "{failing}");
}

#[test]
fn host_example_never_shows_the_stores_password() {
    let mut redis = RedisServer::start_with_password(PASSWORD);
    let url = redis.url();
    password_never_shown("host-example", &url, &mut redis);
}

#[test]
fn edge_host_never_shows_the_stores_password_and_logs_in_as_an_acl_user() {
    let mut redis = RedisServer::start_with_password(PASSWORD);
    let url = redis.acl_url();
    password_never_shown("edge-host", &url, &mut redis);
}

#[test]
fn a_wrong_password_is_refused_at_start_without_showing_it() {
    let redis = RedisServer::start_with_password(PASSWORD);
    let wrong = redis.url().replace(PASSWORD, "wrong-Zq7-secret");
    let binary = tests::processes::built_binary("host-example", "host-example");
    let out = std::process::Command::new(binary).args(["--store", &wrong, "--port", "0"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("--store") && !stderr.contains("wrong-Zq7-secret"), "{stderr}");
}

/// The keys under `prefix`, each with its time to live in ms (`-1`: none).
fn ttls(redis: &RedisServer, prefix: &str) -> Vec<(String, i64)> {
    let mut conn = redis.connection();
    let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{prefix}*")).query(&mut conn).unwrap();
    keys.into_iter().map(|k| (k.clone(), redis::cmd("PTTL").arg(&k).query(&mut conn).unwrap())).collect()
}

#[test]
fn every_key_a_session_writes_expires_and_only_the_global_counters_do_not() {
    let redis = RedisServer::start_with_password(PASSWORD);
    let args = ["--store", &redis.url(), "--session-idle-ms", "600000", "--store-prefix", "ops"];
    let host = ServerProcess::host_example(&args);
    let client = Client::initialize(host.addr);
    assert!(exchange(&client).starts_with("200 "));
    let resp = client.call(4, "countdown", json!({"n": 3, "interval_ms": 1}), &[]);
    assert_eq!(resp.status, 200);
    drop(resp.body());
    let keys = ttls(&redis, "");
    assert!(keys.len() > 8, "{keys:?}");
    // The journal's line counter expires too, renewed with each line: it goes with the last.
    const NEVER: [&str; 6] = [
        "ops:rg/sessions",
        "ops:rg/changes",
        "ops:rg/count-check",
        "ops:rg/bytes",
        "ops:rg/q/tail",
        "ops:rg/q/head",
    ];
    for (key, ttl) in &keys {
        assert!(key.starts_with("ops:"), "{key} is outside the deployment's prefix");
        if NEVER.contains(&key.as_str()) {
            assert_eq!(*ttl, -1, "{key} is a global counter");
        } else if key.ends_with("}/b") {
            // A session's byte count outlives its records, for garbage collection to settle.
            assert!((600_001..=1_200_000).contains(ttl), "{key} expires with its session ({ttl})");
        } else {
            assert!((1..=600_000).contains(ttl), "{key} has no expiry ({ttl})");
        }
    }
    assert!(keys.iter().any(|(k, _)| k.contains("/e/")), "events were written: {keys:?}");
}

#[test]
fn two_deployments_with_their_own_prefixes_never_meet_on_one_database() {
    let redis = RedisServer::start_with_password(PASSWORD);
    let url = redis.url();
    let a = ServerProcess::host_example(&["--store", &url, "--store-prefix", "deploy-a"]);
    let b = ServerProcess::host_example(&["--store", &url, "--store-prefix", "deploy-b"]);
    let on_a = Client::initialize(a.addr);
    assert_eq!(on_a.call(2, "append", json!({"text": "only a"}), &[]).status, 200);
    let stranger = Client { addr: b.addr, session: on_a.session.clone(), version: on_a.version };
    let resp = stranger.call(3, "journal", json!({}), &[]);
    assert_eq!(resp.status, 404, "a session of deployment a is unknown to b");
    let on_b = Client::initialize(b.addr);
    let journal = on_b.call(2, "journal", json!({}), &[]).body();
    assert!(!journal.contains("only a"), "b reads a's journal: {journal}");
    let keys = ttls(&redis, "");
    assert!(keys.iter().all(|(k, _)| k.starts_with("deploy-a:") || k.starts_with("deploy-b:")), "{keys:?}");
    assert!(keys.iter().any(|(k, _)| k.starts_with("deploy-b:")));
    // Garbage collection of one deployment scans only its own keys.
    let binary = tests::processes::built_binary("edge-host", "edge-host");
    let out = std::process::Command::new(binary)
        .args(["collect-garbage", "--store", &url, "--store-prefix", "deploy-b"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        ttls(&redis, "deploy-a:").len(),
        keys.iter().filter(|(k, _)| k.starts_with("deploy-a:")).count()
    );
    assert_eq!(on_a.call(4, "journal", json!({}), &[]).status, 200);
}

const WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// SIGTERM while a call runs on `host`: the call finishes, the process exits 0 and accepts
/// nothing more.
fn sigterm_lets_a_running_call_finish(mut host: ServerProcess) {
    let client = Client::initialize(host.addr);
    let mut call = client.call(2, "countdown", json!({"n": 5, "interval_ms": 200}), &[]);
    assert_eq!(call.status, 200);
    assert!(call.next_frame(WAIT).is_some_and(|f| f.is_priming()));
    host.terminate();
    let frames = call.frames_until_closed(WAIT);
    let results: Vec<_> = frames.iter().map(|f| f.json()).filter(|v| v.get("result").is_some()).collect();
    assert_eq!(results.len(), 1, "the running call finished: {frames:?}");
    let status = host.wait_exit(WAIT).expect("it exits once its call is done");
    assert!(status.success(), "{status:?}");
    assert!(std::net::TcpStream::connect(host.addr).is_err(), "nothing is accepted after SIGTERM");
}

#[test]
fn sigterm_lets_a_running_call_finish_then_exits_zero() {
    let redis = RedisServer::start();
    sigterm_lets_a_running_call_finish(ServerProcess::host_example(&[
        "--store",
        &redis.url(),
        "--drain-ms",
        "10000",
    ]));
}

#[test]
fn edge_host_on_sigterm_lets_a_running_call_finish_then_exits_zero() {
    let redis = RedisServer::start();
    sigterm_lets_a_running_call_finish(ServerProcess::edge_host(&[
        "--store",
        &redis.url(),
        "--drain-ms",
        "10000",
    ]));
}

#[test]
fn sigterm_past_the_drain_gives_a_call_up_so_another_process_answers_its_reconnect_at_once() {
    let redis = RedisServer::start();
    let url = redis.url();
    // A lease far longer than the test waits: only the drain's give-up can answer in time.
    let mut a = ServerProcess::host_example(&["--store", &url, "--drain-ms", "300", "--lease-ms", "60000"]);
    let b = ServerProcess::host_example(&["--store", &url, "--lease-ms", "60000"]);
    let on_a = Client::initialize(a.addr);
    let mut post = on_a.call(2, "countdown", json!({"n": 100, "interval_ms": 100}), &[]);
    let seen: Vec<_> = (0..3).map(|_| post.next_frame(WAIT).expect("priming and progress")).collect();
    a.terminate();
    let status = a.wait_exit(WAIT).expect("it exits after the drain");
    assert!(status.success(), "{status:?}");
    drop(post);
    let on_b = Client { addr: b.addr, session: on_a.session.clone(), version: on_a.version };
    let mut get = on_b.get(seen[2].id.as_deref());
    assert_eq!(get.status, 200);
    let frames = get.frames_until_closed(WAIT);
    let errors: Vec<_> = frames.iter().map(|f| f.json()).filter(|v| v.get("error").is_some()).collect();
    assert_eq!(errors.len(), 1, "the call's error, well before its lease: {frames:?}");
    assert_eq!((errors[0]["id"].clone(), errors[0]["error"]["code"].clone()), (json!(2), json!(-32001)));
}

/// `GET /metrics` over its own connection: the status, and how long the answer took.
fn scrape_metrics(addr: std::net::SocketAddr) -> (u16, std::time::Duration) {
    use std::io::{Read, Write};
    let started = std::time::Instant::now();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, started.elapsed())
}

#[test]
fn a_stalled_store_costs_each_call_its_own_timeout_and_metrics_answer_from_memory() {
    const TIMEOUT_MS: u64 = 3000;
    let redis = RedisServer::start();
    let timeout = TIMEOUT_MS.to_string();
    let host =
        ServerProcess::host_example(&["--store", &redis.url(), "--store-timeout-ms", &timeout, "--metrics"]);
    let clients: Vec<Client> = (0..10).map(|_| Client::initialize(host.addr)).collect();
    redis.pause(true);
    let started = std::time::Instant::now();
    let calls: Vec<_> = clients
        .into_iter()
        .map(|c| {
            std::thread::spawn(move || {
                let resp = c.call(2, "countdown", json!({"n": 0}), &[]);
                (resp.status, started.elapsed())
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (status, took) = scrape_metrics(host.addr);
    let answers: Vec<_> = calls.into_iter().map(|c| c.join().unwrap()).collect();
    redis.pause(false);
    assert_eq!(status, 200, "/metrics answers while the store stalls");
    // The guard: at once (well under one store timeout), and each call within its own
    // timeout plus a second (in turns, the tenth would take ten timeouts).
    assert!(took.as_millis() < u128::from(TIMEOUT_MS) / 2, "/metrics took {took:?}");
    for (status, after) in &answers {
        assert_eq!(*status, 503, "a stalled store is 503");
        assert!(after.as_millis() <= u128::from(TIMEOUT_MS + 1000), "a call took {after:?}: {answers:?}");
    }
    assert_eq!(Client::initialize(host.addr).call(3, "countdown", json!({"n": 0}), &[]).status, 200);
}
