//! `spin.toml` stays in step with the workspace: its build commands, run verbatim in a clean
//! copy of the repository as `spin build` runs them, make every file it names; the front and
//! gate it names are the files edge-host serves, with the store grant the gate needs. (The
//! `spin` CLI cannot be installed here; the app's components are served by edge-host.)

use std::path::Path;

use tests::workspace::{clean_copy, run_to_end};
use toml::Value;

fn manifest() -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let text = std::fs::read_to_string(root.join("spin.toml")).expect("spin.toml at the repository root");
    toml::from_str(&text).expect("spin.toml parses")
}

/// `path` relative to the repository root, as the manifest writes it.
fn relative(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    Path::new(path).strip_prefix(root).expect("built under the repository").display().to_string()
}

#[test]
fn the_manifest_routes_mcp_to_the_front_with_the_gate_as_its_dependency() {
    let m = manifest();
    assert_eq!(m["spin_manifest_version"].as_integer(), Some(2));
    let trigger = &m["trigger"]["http"][0];
    assert_eq!(trigger["route"].as_str(), Some("/mcp"));
    let id = trigger["component"].as_str().unwrap();
    let component = &m["component"][id];

    assert_eq!(component["source"].as_str().unwrap(), relative(edge_host::FRONT_WASM));
    let gate = &component["dependencies"]["mcp:resume-gate@0.1.0"];
    assert_eq!(gate["path"].as_str().unwrap(), relative(edge_host::GATE_KV_WASM));
    let wit = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit/gate.wit")).unwrap();
    assert!(wit.contains("package mcp:resume-gate@0.1.0;"), "the dependency names the WIT package");

    let stores: Vec<&str> =
        component["key_value_stores"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(stores, ["default"], "the bucket both components open");
    assert_eq!(component["dependencies_inherit_configuration"].as_bool(), Some(true));
}

#[test]
fn the_allowed_hosts_variable_defaults_to_the_localhost_names_edge_host_serves() {
    let m = manifest();
    let default = m["variables"]["allowed_hosts"]["default"].as_str().unwrap();
    let names: Vec<&str> = default.split(',').collect();
    assert_eq!(names, mcp_transport::hosts::LOCALHOST);
    assert_eq!(m["component"]["mcp"]["variables"]["allowed_hosts"].as_str(), Some("{{ allowed_hosts }}"));
    assert_eq!(edge_host::variables::ALLOWED_HOSTS, "allowed_hosts", "the name edge-host supplies");
    let max = m["variables"]["max_sessions"]["default"].as_str().unwrap();
    assert_eq!(max, resume_gate::Config::default().max_sessions.to_string(), "the gate's own default");
    assert_eq!(m["component"]["mcp"]["variables"]["max_sessions"].as_str(), Some("{{ max_sessions }}"));
    assert_eq!(m["component"]["mcp"]["variables"]["lease_ms"].as_str(), Some("{{ lease_ms }}"));
    let lease = m["variables"]["lease_ms"]["default"].as_str().unwrap();
    assert_eq!(lease, resume_gate::Config::DEFAULT_LEASE_MS.to_string(), "the gate's own default");
    assert_eq!(edge_host::variables::LEASE_MS, "lease_ms");
    assert_eq!(edge_host::variables::MAX_SESSIONS, "max_sessions");
    let detached = m["variables"]["max_detached_ms"]["default"].as_str().unwrap();
    assert_eq!(detached, "", "unset: the gate's own default, the lease");
    assert_eq!(resume_gate::Config::default().max_detached_ms, None);
    assert_eq!(m["component"]["mcp"]["variables"]["max_detached_ms"].as_str(), Some("{{ max_detached_ms }}"));
    assert_eq!(edge_host::variables::MAX_DETACHED_MS, "max_detached_ms");
    let batch = m["variables"]["max_batch"]["default"].as_str().unwrap();
    assert_eq!(batch, mcp_transport::server::DEFAULT_MAX_BATCH.to_string(), "the transport's own default");
    assert_eq!(m["component"]["mcp"]["variables"]["max_batch"].as_str(), Some("{{ max_batch }}"));
    assert_eq!(edge_host::variables::MAX_BATCH, "max_batch");
}

#[test]
fn the_build_commands_produce_the_files_the_manifest_names() {
    let m = manifest();
    let component = &m["component"]["mcp"];
    let commands: Vec<&str> =
        component["build"]["command"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(commands[0], "rustup target add wasm32-wasip2", "spin build installs the target first");
    // The gate is built by the same code as the build scripts' (`wasm_build::GATE_KV`).
    assert!(
        commands.contains(&"cargo run --locked -q -p wasm-build -- gate-kv --target-dir target"),
        "{commands:?}"
    );
    assert_eq!(wasm_build::GATE_KV.target_subdir, "component-kv");
    assert!(commands.iter().any(|c| {
        c.starts_with("cargo rustc --locked")
            && c.contains("-p spin-front ")
            && c.contains("--target wasm32-wasip2 --profile component")
            && c.ends_with("--target-dir target/spin-front")
    }));
    for (file, dir) in
        [(edge_host::GATE_KV_WASM, "target/component-kv"), (edge_host::FRONT_WASM, "target/spin-front")]
    {
        assert!(relative(file).starts_with(dir), "{file} is built into {dir}");
        assert!(Path::new(file).is_file());
    }
}

#[test]
fn the_redis_runtime_config_puts_the_apps_default_store_in_redis() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let text = std::fs::read_to_string(root.join("runtime-config.redis.toml")).expect("at the root");
    let config: Value = toml::from_str(&text).expect("it parses");
    let store = &config["key_value_store"]["default"];
    assert_eq!(store["type"].as_str(), Some("redis"));
    assert!(store["url"].as_str().unwrap().starts_with("redis://"));
    let stores = &manifest()["component"]["mcp"]["key_value_stores"];
    assert_eq!(stores[0].as_str(), Some("default"), "the label the app opens");
}

/// Every `[component.*.build]` command, in order, with the directory Spin runs it in.
fn build_commands(m: &Value, app_dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut commands = Vec::new();
    for (id, component) in m["component"].as_table().expect("components") {
        let Some(build) = component.get("build") else { continue };
        let dir = match build.get("workdir").and_then(Value::as_str) {
            Some(workdir) => app_dir.join(workdir),
            None => app_dir.to_path_buf(),
        };
        let lines: Vec<String> = match &build["command"] {
            Value::String(one) => vec![one.clone()],
            Value::Array(many) => {
                many.iter().map(|c| c.as_str().expect("a command string").to_owned()).collect()
            }
            other => panic!("component {id}: build.command is {other:?}"),
        };
        commands.extend(lines.into_iter().map(|line| (line, dir.clone())));
    }
    commands
}

/// Every file the manifest names: each component's `source` and each dependency's `path`.
fn named_files(m: &Value) -> Vec<String> {
    let mut files = Vec::new();
    for component in m["component"].as_table().expect("components").values() {
        files.extend(component.get("source").and_then(Value::as_str).map(str::to_owned));
        for dependency in
            component.get("dependencies").and_then(Value::as_table).into_iter().flat_map(|t| t.values())
        {
            files.extend(dependency.get("path").and_then(Value::as_str).map(str::to_owned));
        }
    }
    files
}

#[test]
fn spin_build_run_verbatim_in_a_clean_copy_makes_every_file_the_manifest_names() {
    let copy = clean_copy();
    let m = manifest();
    let files = named_files(&m);
    assert!(files.len() >= 2, "a front and its gate: {files:?}");
    for file in &files {
        assert!(!copy.path().join(file).exists(), "{file} is not built yet in a clean copy");
    }
    // A target directory elsewhere in the environment must not move what the manifest names.
    let elsewhere = tempfile::tempdir().unwrap();
    let env = [("CARGO_TARGET_DIR", elsewhere.path().to_str().unwrap())];
    let commands = build_commands(&m, copy.path());
    for (line, dir) in &commands {
        eprintln!("spin build: {line}");
        run_to_end(line, dir, &env);
    }
    for file in &files {
        let bytes =
            std::fs::read(copy.path().join(file)).unwrap_or_else(|e| panic!("{file} after spin build: {e}"));
        assert_eq!(&bytes[..8], b"\0asm\x0d\0\x01\0", "{file} is a WebAssembly component");
    }
    eprintln!("ran {} build commands; made {files:?}", commands.len());
}

#[test]
fn what_spin_and_the_packages_builds_leave_behind_is_ignored_by_git() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let left_behind = [
        ".spin/sqlite_key_value.db",
        "spin-dependencies.wit",
        "target/spin-front/wasm32-wasip2/component/spin_front.wasm",
        "app.wasm",
        "journal.txt",
        "hosts/node/node_modules/x/index.js",
        "hosts/node/gen/memory/gate.js",
        "hosts/node/resume-gate-0.1.0.tgz",
        "hosts/python/.venv/bin/python",
        "hosts/python/dist/resume_gate-0.1.0-py3-none-any.whl",
        "hosts/python/build/lib/resume_gate/gate.py",
        "hosts/python/resume_gate.egg-info/PKG-INFO",
        "hosts/python/resume_gate/__pycache__/gate.cpython-311.pyc",
    ];
    let out = std::process::Command::new("git")
        .arg("check-ignore")
        .args(left_behind)
        .current_dir(root)
        .output()
        .expect("run git check-ignore");
    let ignored: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(ignored, left_behind, ".gitignore covers every path");
}
