//! The two gate components and the Spin app as OCI artifacts: pushed by `resume-gate-oci` (the
//! layout `wkg oci push` writes, with its libraries) to a registry that wants credentials
//! (`tests::oci_registry`, from the distribution spec), pulled back by digest, and run:
//! host-example with each gate component (`--component`), edge-host with the app (`--app`).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use tests::http::Client;
use tests::oci_registry::{Registry, digest_of};
use tests::processes::{ServerProcess, built_binary};
use tests::redis::RedisServer;

const USER: &str = "ci";
const PASSWORD: &str = "pw-that-must-not-leak-7d3f";

/// `resume-gate-oci ARGS` with (or without) the registry's credentials: exit status, stdout
/// and stderr. Neither output may ever show the password.
fn oci(args: &[&str], credentials: bool) -> (bool, String, String) {
    let mut cmd = Command::new(built_binary("resume-gate-oci", "resume-gate-oci"));
    cmd.args(args).env_remove("REGISTRY_USERNAME").env_remove("REGISTRY_PASSWORD");
    if credentials {
        cmd.env("REGISTRY_USERNAME", USER).env("REGISTRY_PASSWORD", PASSWORD);
    }
    let out = cmd.output().expect("run resume-gate-oci");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        !stdout.contains(PASSWORD) && !stderr.contains(PASSWORD),
        "the password leaked: {stdout}{stderr}"
    );
    (out.status.success(), stdout, stderr)
}

/// Pushes `file` to `repository:tag`; the reference pinned by digest it printed.
fn push(registry: &Registry, file: &Path, repository: &str, tag: &str) -> String {
    let to = format!("{}/{repository}:{tag}", registry.host());
    let (ok, stdout, stderr) = oci(&["push", file.to_str().unwrap(), &to], true);
    assert!(ok, "push {}: {stderr}", file.display());
    let pinned = stdout.trim().to_owned();
    assert!(pinned.starts_with(&format!("{}/{repository}@sha256:", registry.host())), "{pinned}");
    pinned
}

fn pull(pinned: &str, out: &Path) -> Vec<u8> {
    let (ok, _, stderr) = oci(&["pull", pinned, "--out", out.to_str().unwrap()], true);
    assert!(ok, "pull {pinned}: {stderr}");
    std::fs::read(out).unwrap()
}

/// A `tools/call` answered through the server at `client`.
fn call_answers(client: &Client) {
    let mut post = client.call(1, "countdown", json!({"n": 1}), &[]);
    assert_eq!(post.status, 200);
    let frames = post.frames_until_closed(Duration::from_secs(15));
    let results: Vec<Value> = frames.iter().map(|f| f.json()).filter(|v| v.get("result").is_some()).collect();
    assert_eq!(results.len(), 1, "{frames:?}");
}

#[test]
fn the_components_and_the_spin_app_go_to_a_registry_and_come_back_by_digest_to_run() {
    let registry = Registry::start_on(0, Some((USER, PASSWORD)));
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app.wasm");
    let composed = Command::new(built_binary("edge-host", "edge-host"))
        .args(["compose", "--out", app.to_str().unwrap()])
        .output()
        .expect("run edge-host compose");
    assert!(composed.status.success(), "{}", String::from_utf8_lossy(&composed.stderr));

    let artifacts = [
        (Path::new(gate_host::GATE_MEMORY_WASM), "resume-gate/gate"),
        (Path::new(gate_host::GATE_KV_WASM), "resume-gate/gate-kv"),
        (app.as_path(), "resume-gate/spin-app"),
    ];
    let mut pulled = Vec::new();
    for (file, repository) in artifacts {
        let original = std::fs::read(file).unwrap();
        let pinned = push(&registry, file, repository, "0.1.0");
        let digest = pinned.rsplit_once('@').unwrap().1;
        // What `wkg oci push` writes: an image manifest, the Wasm config, one Wasm layer.
        let (media_type, manifest) = registry.manifest(repository, digest).expect("the manifest is stored");
        assert_eq!(media_type, "application/vnd.oci.image.manifest.v1+json");
        let manifest: Value = serde_json::from_slice(&manifest).unwrap();
        assert_eq!(manifest["config"]["mediaType"], "application/vnd.wasm.config.v0+json");
        let layers = manifest["layers"].as_array().unwrap();
        assert_eq!(layers.len(), 1, "{manifest}");
        assert_eq!(layers[0]["mediaType"], "application/wasm");
        assert_eq!(layers[0]["digest"], digest_of(&original));
        let out = dir.path().join(format!("{}.wasm", repository.replace('/', "-")));
        assert_eq!(pull(&pinned, &out), original, "{repository} came back as it went");
        pulled.push((out, pinned));
    }

    // A digest keeps naming what it named when its tag moves on.
    let moved = push(&registry, Path::new(gate_host::GATE_KV_WASM), "resume-gate/gate", "0.1.0");
    assert_ne!(moved, pulled[0].1);
    let again = dir.path().join("again.wasm");
    assert_eq!(pull(&pulled[0].1, &again), std::fs::read(gate_host::GATE_MEMORY_WASM).unwrap());

    // Each runs where it belongs.
    let gate = pulled[0].0.to_str().unwrap();
    let host = ServerProcess::host_example(&["--component", gate]);
    call_answers(&Client::initialize(host.addr));
    let redis = RedisServer::start();
    let gate_kv = pulled[1].0.to_str().unwrap();
    let host = ServerProcess::host_example(&["--store", &redis.url(), "--component", gate_kv]);
    call_answers(&Client::initialize(host.addr));
    let edge = ServerProcess::edge_host(&["--app", pulled[2].0.to_str().unwrap()]);
    call_answers(&Client::initialize(edge.addr));

    // The wrong world is refused at start, by name.
    let wrong = Command::new(built_binary("host-example", "host-example"))
        .args(["--port", "0", "--component", gate_kv])
        .output()
        .expect("run host-example");
    assert!(!wrong.status.success());
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(stderr.contains("not the gate's memory world"), "{stderr}");
}

#[test]
fn a_registry_that_wants_credentials_gets_them_and_nobody_reads_without() {
    let registry = Registry::start_on(0, Some((USER, PASSWORD)));
    let pinned = push(&registry, Path::new(gate_host::GATE_MEMORY_WASM), "resume-gate/gate", "0.1.0");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gate.wasm");
    let (ok, _, stderr) = oci(&["pull", &pinned, "--out", out.to_str().unwrap()], false);
    assert!(!ok, "an anonymous pull got through");
    assert!(stderr.contains("Not authorized") && stderr.contains("REGISTRY_USERNAME"), "{stderr}");
    assert!(!out.exists());
    let sent: Vec<String> = registry.log().into_iter().filter(|l| l.contains("[Basic")).collect();
    assert!(!sent.is_empty(), "the push authenticated: {:?}", registry.log());
}

#[test]
fn what_is_not_a_component_or_not_a_reference_is_refused_clearly() {
    let registry = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let not_wasm = dir.path().join("notes.txt");
    std::fs::write(&not_wasm, "not a component").unwrap();
    let to = format!("{}/resume-gate/gate:0.1.0", registry.host());
    let (ok, _, stderr) = oci(&["push", not_wasm.to_str().unwrap(), &to], false);
    assert!(!ok);
    assert!(stderr.contains("is it a component?"), "{stderr}");
    let (ok, _, stderr) = oci(&["pull", "not a reference!", "--out", "x.wasm"], false);
    assert!(!ok);
    assert!(stderr.contains("not an OCI reference"), "{stderr}");
    let unknown = format!("{}/resume-gate/gate@sha256:{}", registry.host(), "0".repeat(64));
    let (ok, _, stderr) =
        oci(&["pull", &unknown, "--out", dir.path().join("x.wasm").to_str().unwrap()], false);
    assert!(!ok);
    assert!(stderr.contains("404") || stderr.contains("MANIFEST_UNKNOWN"), "{stderr}");
}
