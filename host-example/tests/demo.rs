//! The README's first command: `cargo run -p host-example -- demo` plays the seed scenario.

use std::process::Command;

#[test]
fn the_demo_resumes_the_dropped_call_once_and_refuses_every_stale_cursor() {
    let out = Command::new(env!("CARGO_BIN_EXE_host-example")).arg("demo").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.matches("gate: RESUME").count(), 1, "{stdout}");
    for reason in ["completed", "post-never-resumes", "epoch-changed", "other-session", "malformed"] {
        assert!(stdout.contains(&format!("FRESH ({reason})")), "no {reason} in:\n{stdout}");
    }
}

#[test]
fn an_unknown_command_prints_usage_and_fails() {
    let out = Command::new(env!("CARGO_BIN_EXE_host-example")).arg("nonsense").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).to_lowercase().contains("usage"));
}
