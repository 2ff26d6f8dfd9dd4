//! The official Python SDK client (`mcp` from PyPI, pinned in `tests/python/requirements.lock`
//! and installed into `tests/python/.venv` by this test) against host-example and the Spin app.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use resume_gate_tests::http::TestServer;
use resume_gate_tests::on_both_servers;

on_both_servers!(the_python_sdk_client_falls_back_from_its_probe_resumes_after_cuts_and_runs_append_once);

fn py_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python")
}

/// A virtualenv with exactly the locked packages, made or refreshed when the lock changes
/// (once per test process: both servers' tests share it).
fn venv_python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(make_venv).clone()
}

fn make_venv() -> PathBuf {
    let dir = py_dir();
    let venv = dir.join(".venv");
    let python = venv.join("bin/python");
    let stamp = venv.join(".installed");
    let lock = dir.join("requirements.lock");
    let modified = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    if modified(&stamp).is_some() && modified(&stamp) >= modified(&lock) {
        return python;
    }
    let ok =
        Command::new("python3").args(["-m", "venv"]).arg(&venv).status().expect("python3 (3.10 or later)");
    assert!(ok.success(), "python3 -m venv failed");
    let ok = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
        .arg(&lock)
        .status()
        .unwrap();
    assert!(ok.success(), "pip install -r requirements.lock failed");
    std::fs::write(&stamp, b"").unwrap();
    python
}

fn the_python_sdk_client_falls_back_from_its_probe_resumes_after_cuts_and_runs_append_once(
    start: fn() -> TestServer,
) {
    let python = venv_python();
    let srv = start();
    let (ok, stdout) = srv.run_client(Command::new(python).arg("client_test.py").current_dir(py_dir()));
    assert!(ok, "the Python client tests failed");
    assert!(stdout.contains("3 passed, 0 failed"));
}
