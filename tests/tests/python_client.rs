//! The official Python SDK client (`mcp` from PyPI, pinned in `tests/python/requirements.lock`
//! and installed into `tests/python/.venv` by this test) against host-example and the Spin app.

use std::process::Command;

use tests::http::TestServer;
use tests::on_every_server;
use tests::python::{dir as py_dir, venv_python};

on_every_server!(the_python_sdk_client_probes_the_new_era_resumes_after_cuts_and_runs_append_once);

fn the_python_sdk_client_probes_the_new_era_resumes_after_cuts_and_runs_append_once(
    start: fn() -> TestServer,
) {
    let python = venv_python();
    let srv = start();
    let (ok, stdout) = srv.run_client(Command::new(python).arg("client_test.py").current_dir(py_dir()));
    assert!(ok, "the Python client tests failed");
    assert!(stdout.contains("3 passed, 0 failed"));
}
