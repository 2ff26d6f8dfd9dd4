//! The Node and Python packages themselves: they load the very component host-example
//! embeds (one build of the gate), their APIs pass their own tests over the real component,
//! and their `example` scripts serve MCP as a user starts them. The raw-HTTP scenarios and the
//! official clients run against both examples with every other server (`on_every_server!`).

use std::path::Path;
use std::process::Command;

use tests::workspace::output;

use serde_json::json;
use sha2::{Digest, Sha256};
use tests::http::{Client, Frame};
use tests::processes::ServerProcess;
use tests::sdk_hosts::{
    Store, node_dir, node_example_with, prepare_node, prepare_python, python_dir, python_example_with,
};

fn sha256(path: impl AsRef<Path>) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).expect("read the component")))
}

fn stamp_sha256(world: &str) -> String {
    let stamp = node_dir().join("gen").join(world).join("component.json");
    let stamp: serde_json::Value = serde_json::from_slice(&std::fs::read(stamp).unwrap()).unwrap();
    stamp["sha256"].as_str().expect("a sha256 in the stamp").to_owned()
}

#[test]
fn both_packages_load_the_component_host_example_embeds() {
    // As a user runs them: no override, so each script asks cargo for the component.
    output(Command::new(node_dir().join("example")).arg("prepare").env_remove("RESUME_GATE_WASM"));
    assert_eq!(
        stamp_sha256("memory"),
        sha256(gate_host::GATE_MEMORY_WASM),
        "Node: the gate-memory component"
    );
    assert_eq!(stamp_sha256("kv"), sha256(gate_host::GATE_KV_WASM), "Node: the gate-kv component");

    let printed =
        output(Command::new(python_dir().join("example")).arg("prepare").env_remove("RESUME_GATE_WASM"));
    let wasm = printed.lines().last().expect("the component's path").to_owned();
    assert_eq!(sha256(&wasm), sha256(gate_host::GATE_MEMORY_WASM), "Python: the gate-memory component");
    let reported = output(
        Command::new(python_dir().join(".venv/bin/python"))
            .args(["-c", "from resume_gate import Gate; print(Gate().component_sha256)"])
            .env("PYTHONPATH", python_dir())
            .env("RESUME_GATE_WASM", &wasm),
    );
    assert_eq!(reported.trim(), sha256(gate_host::GATE_MEMORY_WASM), "Python: the gate it runs");
}

#[test]
fn the_node_package_api_passes_its_tests_over_the_real_component() {
    prepare_node();
    // The declarations describe the API: a TypeScript user's code over them type-checks.
    output(Command::new("npx").args(["--no-install", "tsc", "-p", "test/types"]).current_dir(node_dir()));
    let out = output(Command::new("node").args(["--test", "test/"]).current_dir(node_dir()));
    println!("{out}");
    assert!(
        out.contains("# pass 18") && out.contains("# fail 0"),
        "eighteen passing tests expected: the batch tests through both SDKs"
    );
}

#[test]
fn the_python_package_api_passes_its_tests_over_the_real_component() {
    prepare_python();
    let out = output(
        Command::new(python_dir().join(".venv/bin/python"))
            .args(["-m", "pytest", "--pyargs", "resume_gate", "-p", "no:cacheprovider"])
            .current_dir(python_dir())
            .env("PYTHONPATH", python_dir())
            .env("RESUME_GATE_WASM", gate_host::GATE_MEMORY_WASM),
    );
    println!("{out}");
    assert!(out.contains("12 passed in"), "twelve passing tests expected");
}

/// `hosts/<lang>/example --port P`, the command the README gives, serves MCP: a session, a
/// call with progress, and a resume from its first event.
fn the_example_script_serves_mcp(script: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.txt");
    let mut cmd = Command::new(script);
    cmd.arg("--journal").arg(&journal).env("RESUME_GATE_WASM", gate_host::GATE_MEMORY_WASM);
    let server = ServerProcess::serve(cmd);
    let c = Client::initialize(server.addr);
    let mut post = c.call(1, "countdown", json!({"n": 2, "interval_ms": 50}), &[]);
    let wait = std::time::Duration::from_secs(10);
    let priming = post.next_frame(wait).expect("a priming event");
    assert!(priming.is_priming());
    drop(post);
    let rest = c.get(priming.id.as_deref()).frames_until_closed(wait);
    let progress: Vec<_> = rest.iter().filter_map(|f| f.json()["params"]["progress"].as_u64()).collect();
    assert_eq!(progress, [1, 2]);
    assert_eq!(rest.last().map(|f| f.json()["result"]["content"][0]["text"].clone()), Some(json!("done")));
}

#[test]
fn the_node_example_script_serves_mcp() {
    prepare_node();
    the_example_script_serves_mcp(&node_dir().join("example"));
}

#[test]
fn the_python_example_script_serves_mcp() {
    prepare_python();
    the_example_script_serves_mcp(&python_dir().join("example"));
}

/// A call cut before its result, left past the retention, never resumes and never leaves its
/// client waiting: the reconnect gets a fresh stream and the request's `-32001` error (the
/// gate names it stranded), through each SDK's transport. The call's late result is dropped.
fn a_call_left_past_retention_gets_its_32001_on_the_fresh_stream(server: ServerProcess) {
    let c = Client::initialize(server.addr);
    let mut post = c.call(9, "countdown", json!({"n": 1, "interval_ms": 1500}), &[]);
    let wait = std::time::Duration::from_secs(10);
    let priming = post.next_frame(wait).expect("a priming event");
    drop(post);
    std::thread::sleep(std::time::Duration::from_millis(700));
    let mut get = c.get(priming.id.as_deref());
    assert_eq!(get.status, 200);
    let mut frames = Vec::new();
    // Both, in either order: the Python SDK writes a replayed connection's priming event after
    // what the store replays into it.
    let both = |frames: &[Frame]| {
        frames.iter().any(Frame::is_priming) && frames.iter().any(|f| f.json()["id"] == json!(9))
    };
    while !both(&frames) {
        frames.push(
            get.next_frame(wait).unwrap_or_else(|| panic!("a priming event and the error: {frames:?}")),
        );
    }
    let error = frames.iter().map(|f| f.json()).find(|v| v["id"] == json!(9)).unwrap();
    assert_eq!(error["error"]["code"], json!(-32001), "{error}");
    assert!(frames.iter().all(|f| f.json()["params"]["progress"].is_null()), "nothing replayed: {frames:?}");
    std::thread::sleep(std::time::Duration::from_millis(1200));
    assert_eq!(get.next_frame(std::time::Duration::from_millis(300)), None, "the late result is not sent");
}

#[test]
fn a_call_left_past_retention_gets_its_32001_through_the_typescript_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let server = node_example_with(&dir.path().join("journal.txt"), Store::Gate, &["--retention-ms", "300"]);
    a_call_left_past_retention_gets_its_32001_on_the_fresh_stream(server);
}

#[test]
fn a_call_left_past_retention_gets_its_32001_through_the_python_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        python_example_with(&dir.path().join("journal.txt"), Store::Gate, &["--retention-ms", "300"]);
    a_call_left_past_retention_gets_its_32001_on_the_fresh_stream(server);
}
