//! `--session-idle-ms` with the state in host-example's own memory: a session idle past it is
//! ended, as a Redis store lets its keys expire; one holding an open response is not idle.

use serde_json::json;
use tests::http::Client;
use tests::processes::ServerProcess;

#[test]
fn a_session_idle_past_the_limit_is_ended_and_one_with_an_open_stream_is_not() {
    let host = ServerProcess::host_example(&["--session-idle-ms", "1000"]);
    let idle = Client::initialize(host.addr);
    let listening = Client::initialize(host.addr);
    assert_eq!(idle.call(2, "countdown", json!({"n": 0}), &[]).status, 200);
    let get = listening.get(None);
    assert_eq!(get.status, 200);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert_eq!(idle.call(3, "countdown", json!({"n": 0}), &[]).status, 404, "the idle session ended");
    assert_eq!(listening.call(2, "countdown", json!({"n": 0}), &[]).status, 200, "an open GET is activity");
    drop(get);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert_eq!(listening.call(3, "countdown", json!({"n": 0}), &[]).status, 404);
}
