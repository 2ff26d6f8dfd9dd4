//! The official TypeScript SDK client and the MCP conformance suite (both from npm, installed
//! from `tests/js/package-lock.json` by `npm ci`) against host-example and the Spin app.

use std::path::{Path, PathBuf};
use std::process::Command;

use tests::http::TestServer;
use tests::{on_both_servers, on_every_server};

on_every_server!(the_typescript_sdk_client_resumes_after_cuts_and_sees_everything_once);
on_both_servers!(the_mcp_conformance_scenarios_pass_without_failure);

fn js_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("js")
}

/// `npm ci` from `tests/js/package-lock.json` when needed.
fn npm_ci() {
    tests::npm_ci(&js_dir());
}

fn the_typescript_sdk_client_resumes_after_cuts_and_sees_everything_once(start: fn() -> TestServer) {
    npm_ci();
    let srv = start();
    let (ok, stdout) = srv.run_client(
        Command::new("node")
            .args(["--test", "--test-reporter=spec", "ts-client.test.mjs"])
            .current_dir(js_dir()),
    );
    assert!(ok, "the TypeScript client tests failed");
    assert!(stdout.contains("pass 4") && stdout.contains("fail 0"), "expected 4 passing tests");
}

const SCENARIOS: [&str; 11] = [
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-with-progress",
    "tools-call-with-logging",
    "tools-call-error",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
];

fn the_mcp_conformance_scenarios_pass_without_failure(start: fn() -> TestServer) {
    npm_ci();
    let srv = start();
    for scenario in SCENARIOS {
        let out = Command::new("node")
            .args([
                "--import",
                "./node20-compat.mjs",
                "node_modules/@modelcontextprotocol/conformance/dist/index.js",
            ])
            .args(["server", "--url", &srv.url(), "--scenario", scenario])
            .current_dir(js_dir())
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        println!("== {scenario}\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{scenario} failed");
        assert!(!stdout.contains("FAILURE"), "{scenario} reported a FAILURE");
        assert!(stdout.contains("0 failed"), "{scenario} printed no result line");
    }
}
