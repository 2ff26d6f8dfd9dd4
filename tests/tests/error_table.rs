//! One table from a gate error to the HTTP status and JSON-RPC code a host answers with:
//! `mcp_transport::errors::TABLE`. The bracketed answers in `wit/gate.wit`'s `gate-error` docs,
//! the Node package's `GATE_ERRORS` and the Python package's must be that table, row for row.

use std::process::Command;

use tests::workspace::output;

use mcp_transport::errors::TABLE;
use serde_json::Value;
use tests::sdk_hosts::{node_dir, prepare_node, prepare_python, python_dir};

/// `(case, status, code)` of every `gate-error` case, from the WIT docs' `[STATUS CODE…]`.
fn wit_table() -> Vec<(String, u16, i64)> {
    let wit = std::fs::read_to_string(tests::workspace::root().join("wit/gate.wit")).unwrap();
    let body = wit
        .split("variant gate-error {")
        .nth(1)
        .expect("the gate-error variant")
        .split("\n    }")
        .next()
        .unwrap();
    let mut rows = Vec::new();
    let mut answer = None;
    for line in body.lines().map(str::trim) {
        if let Some(doc) = line.strip_prefix("///") {
            if let Some(bracket) = doc.rsplit_once('[').map(|(_, b)| b) {
                let mut parts = bracket.trim_end_matches(']').split([' ', ';']);
                let status = parts.next().and_then(|s| s.parse().ok());
                let code = parts.next().and_then(|s| s.parse().ok());
                answer = status.zip(code);
            }
        } else if let Some(case) = line.strip_suffix(',') {
            let case = case.split('(').next().unwrap().to_owned();
            let (status, code) =
                answer.take().unwrap_or_else(|| panic!("`{case}` has no [STATUS CODE] in its docs"));
            rows.push((case, status, code));
        }
    }
    rows
}

fn ours() -> Vec<(String, u16, i64)> {
    TABLE.iter().map(|(case, status, code)| ((*case).to_owned(), *status, *code)).collect()
}

/// A package's table as it prints it: `{case: {status, code}}` or `{case: [status, code]}`.
fn printed(json: &str) -> Vec<(String, u16, i64)> {
    let table: serde_json::Map<String, Value> = serde_json::from_str(json.trim()).expect("a JSON object");
    let mut rows: Vec<(String, u16, i64)> = table
        .into_iter()
        .map(|(case, answer)| {
            let (status, code) = match &answer {
                Value::Array(a) => (&a[0], &a[1]),
                other => (&other["status"], &other["code"]),
            };
            (case, status.as_u64().unwrap() as u16, code.as_i64().unwrap())
        })
        .collect();
    let order: Vec<String> = ours().into_iter().map(|(c, _, _)| c).collect();
    rows.sort_by_key(|(case, _, _)| order.iter().position(|c| c == case).unwrap_or(usize::MAX));
    rows
}

#[test]
fn the_wit_docs_name_the_transports_answer_for_every_gate_error() {
    assert_eq!(wit_table(), ours());
}

#[test]
fn the_node_package_follows_the_table() {
    prepare_node();
    let script = "import { GATE_ERRORS } from './src/index.js'; console.log(JSON.stringify(GATE_ERRORS));";
    let json =
        output(Command::new("node").args(["--input-type=module", "-e", script]).current_dir(node_dir()));
    assert_eq!(printed(&json), ours());
}

#[test]
fn the_python_package_follows_the_table() {
    prepare_python();
    let script = "import json; from resume_gate import GATE_ERRORS; print(json.dumps(GATE_ERRORS))";
    let json = output(
        Command::new(python_dir().join(".venv/bin/python"))
            .args(["-c", script])
            .env("PYTHONPATH", python_dir())
            .env("RESUME_GATE_WASM", gate_host::GATE_MEMORY_WASM),
    );
    assert_eq!(printed(&json), ours());
}
