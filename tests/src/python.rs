//! The Python side of the tests and benches: a virtualenv with exactly the packages of
//! `tests/python/requirements.lock` (the official `mcp` SDK from PyPI), made by the first
//! caller and refreshed when the lock changes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// `tests/python`: the client tests, the lock and the virtualenv.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python")
}

/// The virtualenv's interpreter (made once per process).
pub fn venv_python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(make_venv).clone()
}

fn make_venv() -> PathBuf {
    let dir = dir();
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
