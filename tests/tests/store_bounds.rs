//! The byte budgets over Redis as in memory: sessions flood a real Valkey through host-example
//! processes, and the store itself is measured (its keys and their values' bytes), besides the
//! counts the gate keeps there.

use serde_json::json;
use tests::http::Client;
use tests::processes::ServerProcess;
use tests::redis::RedisServer;

const PER_SESSION: u64 = 128 << 10;
const TOTAL: u64 = 192 << 10;
/// What one event may take a budget past before it is made up (its id and key overhead).
const ONE_EVENT: u64 = 2 << 10;
/// What the gate charges a key besides its value at least (`kv::KEY_OVERHEAD`, 128, plus the
/// record's own overhead): the byte budget bounds a session's keys too.
const KEY_CHARGE: u64 = 128;

/// `countdown` calls of `n` steps, each progress notification carrying a 256-byte token.
fn flood(client: &Client, calls: i64, n: u64) {
    for id in 1..=calls {
        let body = json!({"jsonrpc": "2.0", "id": id + 10, "method": "tools/call", "params": {
            "name": "countdown", "arguments": {"n": n, "interval_ms": 0},
            "_meta": {"progressToken": format!("{id:0>256}")}}});
        let resp = client.post(&body, &[]);
        assert_eq!(resp.status, 200);
        let text = resp.body();
        assert!(
            text.contains("\"result\""),
            "every call is answered: {}",
            &text[text.len().saturating_sub(300)..]
        );
    }
}

/// A session's keys (under `prefix`) and the bytes their values hold.
fn held_by(redis: &RedisServer, prefix: &str, session: &str) -> (usize, u64) {
    let mut conn = redis.connection();
    let keys: Vec<String> =
        redis::cmd("KEYS").arg(format!("{prefix}rg/{{{session}}}/*")).query(&mut conn).unwrap();
    let bytes = keys.iter().map(|k| redis::cmd("STRLEN").arg(k).query::<u64>(&mut conn).unwrap()).sum();
    (keys.len(), bytes)
}

fn counter(redis: &RedisServer, key: &str) -> u64 {
    redis::cmd("GET").arg(key).query::<Option<u64>>(&mut redis.connection()).unwrap().unwrap_or(0)
}

#[test]
fn a_flooding_session_stays_within_its_byte_budget_and_the_total_within_its_own() {
    let redis = RedisServer::start();
    let (per, total) = (PER_SESSION.to_string(), TOTAL.to_string());
    let args = ["--store", &redis.url(), "--max-bytes-per-session", &per, "--max-total-bytes", &total];
    let host = ServerProcess::host_example(&args);
    let a = Client::initialize(host.addr);
    // 400 events of ~450 bytes (180 KB) and their keys: without the budget, more than a session
    // may hold.
    flood(&a, 5, 80);
    let (keys, bytes) = held_by(&redis, "rg:", &a.session);
    let counted = counter(&redis, &format!("rg:rg/{{{}}}/b", a.session));
    eprintln!("session a: {keys} keys, {bytes} bytes of values, {counted} bytes counted");
    assert!(counted <= PER_SESSION + ONE_EVENT, "counted {counted}");
    assert!(bytes <= PER_SESSION, "the store holds {bytes} bytes of the session's values");
    assert!(keys as u64 <= PER_SESSION / KEY_CHARGE, "{keys} keys");
    assert!(counted >= PER_SESSION / 2, "it was filled to its budget, not emptied: {counted}");

    // A second session floods too: the total holds, by taking what the idle first one holds.
    let b = Client::initialize(host.addr);
    flood(&b, 5, 80);
    let all = counter(&redis, "rg:rg/bytes");
    let (keys_a, bytes_a) = held_by(&redis, "rg:", &a.session);
    let (keys_b, bytes_b) = held_by(&redis, "rg:", &b.session);
    eprintln!("total counted {all}; a: {keys_a} keys, {bytes_a} bytes; b: {keys_b} keys, {bytes_b} bytes");
    assert!(all <= TOTAL + ONE_EVENT, "total counted {all}");
    assert!(bytes_a + bytes_b <= TOTAL, "the store holds {} bytes", bytes_a + bytes_b);
    assert!(bytes_b <= PER_SESSION, "b holds {bytes_b}");
    // Others are untouched by a's bound: a new session calls as ever.
    let c = Client::initialize(host.addr);
    assert_eq!(c.call(2, "countdown", json!({"n": 0}), &[]).status, 200);
}
