//! The sample tools. Names are stable: `append`, `journal`, `countdown`, and the reference
//! tools the MCP conformance suite calls (`test_*`).
//!
//! A tool runs against a [`ToolHost`]: the host owns time, the journal and the connection;
//! the tool only decides what to send. `append` is the non-idempotent tool the gate exists
//! for: it must never run twice for one call.

use std::future::Future;

use serde_json::{Value, json};

use resume_gate::RequestId;

use crate::journal::{AppendError, JOURNAL_PAGE_BYTES, JOURNAL_PAGE_LINES, JournalPage, MAX_JOURNAL_LINES};
use crate::jsonrpc::{self, INVALID_PARAMS};

/// Bounds on `countdown`, so a client cannot park a task for long: steps, the wait between
/// two, and the whole run (`n × interval_ms`).
pub const MAX_COUNTDOWN_STEPS: u64 = 10_000;
pub const MAX_COUNTDOWN_INTERVAL_MS: u64 = 60_000;
pub const MAX_COUNTDOWN_MS: u64 = 10 * 60 * 1000;
/// Longest tool name accepted (an unknown one is named in the error).
pub const MAX_TOOL_NAME_BYTES: usize = 128;
/// Longest progress token accepted: every progress notification repeats it.
pub const MAX_PROGRESS_TOKEN_BYTES: usize = 256;
/// Longest line `append` accepts.
pub const MAX_APPEND_BYTES: usize = 64 * 1024;

pub trait ToolHost {
    /// Waits `ms`; `false` when the call was given up meanwhile (cancelled, abandoned, its
    /// state gone): the tool stops then.
    fn sleep(&self, ms: u64) -> impl Future<Output = bool> + Send;
    /// Sends a JSON-RPC notification on the call's stream; `false` once the stream takes no
    /// more events (the call was cancelled): the tool stops then.
    fn notify(&self, message: String) -> bool;
    /// Ends the call's HTTP connection without ending the call (SEP-1699 polling).
    fn close_connection(&self);
    /// Appends a line to the journal, once for the call's request, and returns its line
    /// number; fails once the journal holds [`MAX_JOURNAL_LINES`].
    fn append(&self, line: &str) -> Result<u64, AppendError>;
    /// Up to `limit` lines from line `from` (0-based), and how many the journal holds.
    fn journal(&self, from: u64, limit: u64) -> Result<JournalPage, String>;
}

/// A `tools/call`'s parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
    pub progress_token: Option<Value>,
    /// A 2026-07-28 call: its result carries `resultType`.
    pub stateless: bool,
    /// The client wants `notifications/message` (always in the session era; in the stateless
    /// one only when the request names a log level).
    pub logs: bool,
}

impl ToolCall {
    pub fn from_params(params: &Value) -> Result<Self, String> {
        let name = params.get("name").and_then(Value::as_str).ok_or("tools/call needs a string `name`")?;
        if name.len() > MAX_TOOL_NAME_BYTES {
            return Err("tools/call `name` is at most 128 bytes".into());
        }
        let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
        if !arguments.is_object() {
            return Err("tools/call `arguments` must be an object".into());
        }
        let progress_token = params.get("_meta").and_then(|m| m.get("progressToken")).cloned();
        let token_ok = match &progress_token {
            None => true,
            Some(Value::String(s)) => s.len() <= MAX_PROGRESS_TOKEN_BYTES,
            Some(Value::Number(_)) => true,
            Some(_) => false,
        };
        if !token_ok {
            return Err("`_meta.progressToken` must be a string of at most 256 bytes or a number".into());
        }
        Ok(Self { name: name.to_owned(), arguments, progress_token, stateless: false, logs: true })
    }

    /// The call as the stateless era makes it; `logs`: the request named a log level.
    pub fn stateless(self, logs: bool) -> Self {
        Self { stateless: true, logs, ..self }
    }
}

struct Tool {
    name: &'static str,
    description: &'static str,
    schema: fn() -> Value,
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

const TOOLS: &[Tool] = &[
    Tool {
        name: "append",
        description: "Appends a line to the journal, after delay_ms if given, and returns the new line count (not idempotent)",
        schema: || {
            json!({"type": "object", "properties": {
                "text": {"type": "string"},
                "delay_ms": {"type": "integer", "minimum": 0, "maximum": MAX_COUNTDOWN_INTERVAL_MS}
            }, "required": ["text"]})
        },
    },
    Tool {
        name: "journal",
        description: "Returns a page of the journal's lines (at most 100 lines or 256 KiB) and where the next starts",
        schema: || {
            json!({"type": "object", "properties": {
                "from": {"type": "integer", "minimum": 0},
                "limit": {"type": "integer", "minimum": 1, "maximum": JOURNAL_PAGE_LINES}
            }})
        },
    },
    Tool {
        name: "countdown",
        description: "Sends n progress notifications, one every interval_ms, then returns \"done\"",
        schema: || {
            json!({"type": "object", "properties": {
                "n": {"type": "integer", "minimum": 0, "maximum": MAX_COUNTDOWN_STEPS},
                "interval_ms": {"type": "integer", "minimum": 0, "maximum": MAX_COUNTDOWN_INTERVAL_MS}
            }, "required": ["n"]})
        },
    },
    Tool { name: "test_simple_text", description: "Returns simple text content", schema: no_arguments },
    Tool {
        name: "test_tool_with_progress",
        description: "Reports progress 0, 50, 100",
        schema: no_arguments,
    },
    Tool { name: "test_tool_with_logging", description: "Sends three log messages", schema: no_arguments },
    Tool {
        name: "test_logging_tool",
        description: "Sends three log messages (the 2026-07-28 suite's name for test_tool_with_logging)",
        schema: no_arguments,
    },
    Tool { name: "test_error_handling", description: "Always returns a tool error", schema: no_arguments },
    Tool {
        name: "test_param_header",
        description: "Echoes `region`, which a 2026-07-28 client mirrors into the Mcp-Param-Region header",
        schema: || {
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}
            }})
        },
    },
    Tool {
        name: "greet",
        description: "Returns `Hello, {name}!` (never a task)",
        schema: || json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    },
    Tool {
        name: "slow_compute",
        description: "Waits `seconds`, then returns its label (a task when the client takes tasks and seconds > 0)",
        schema: || {
            json!({"type": "object", "properties": {
                "seconds": {"type": "integer", "minimum": 0, "maximum": MAX_COUNTDOWN_MS / 1000},
                "label": {"type": "string"}
            }, "required": ["seconds"]})
        },
    },
    Tool {
        name: "failing_job",
        description: "After about a second, returns a tool error (a task when the client takes tasks)",
        schema: no_arguments,
    },
    Tool {
        name: "protocol_error_job",
        description: "Fails with a JSON-RPC error (a task when the client takes tasks)",
        schema: no_arguments,
    },
    Tool {
        name: "test_reconnection",
        description: "Closes its SSE stream mid-call; the result arrives on the client's GET resume",
        schema: no_arguments,
    },
];

/// Whether a 2026-07-28 client that takes tasks gets `call` as one: the calls that may take a
/// while (`append` too: its line must be written once, whatever becomes of the connection).
pub fn runs_as_task(call: &ToolCall) -> bool {
    let positive = |arg: &str| call.arguments.get(arg).and_then(Value::as_u64).is_some_and(|n| n > 0);
    match call.name.as_str() {
        "append" | "failing_job" | "protocol_error_job" => true,
        "countdown" => positive("n"),
        "slow_compute" => positive("seconds"),
        _ => false,
    }
}

/// The parameters of tool `name` a 2026-07-28 client mirrors into `Mcp-Param-{header}`
/// headers: `(property, header)`, top-level properties only (ours have no nested ones).
pub fn param_headers(name: &str) -> Vec<(String, String)> {
    let Some(tool) = TOOLS.iter().find(|t| t.name == name) else { return Vec::new() };
    let schema = (tool.schema)();
    let Some(properties) = schema["properties"].as_object() else { return Vec::new() };
    properties
        .iter()
        .filter_map(|(p, s)| Some((p.clone(), s.get("x-mcp-header")?.as_str()?.to_owned())))
        .collect()
}

/// The `tools/list` result.
pub fn list() -> Value {
    let tools: Vec<Value> = TOOLS
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": (t.schema)()}))
        .collect();
    json!({ "tools": tools })
}

fn text(s: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": s.into()}]})
}

fn tool_error(s: impl Into<String>) -> Value {
    json!({"isError": true, "content": [{"type": "text", "text": s.into()}]})
}

/// The `journal` result: the page cut to [`JOURNAL_PAGE_BYTES`], and where the next begins.
fn journal_page(from: u64, mut page: JournalPage) -> Value {
    let mut bytes = 0;
    let keep = page
        .lines
        .iter()
        .take_while(|l| {
            bytes += l.len();
            bytes <= JOURNAL_PAGE_BYTES
        })
        .count()
        .max(1)
        .min(page.lines.len());
    page.lines.truncate(keep);
    let end = from.saturating_add(keep as u64);
    let next = (end < page.total).then_some(end);
    json!({
        "content": [{"type": "text", "text": page.lines.join("\n")}],
        "structuredContent": {"lines": page.lines, "from": from, "total": page.total, "next": next}
    })
}

fn progress(token: &Value, progress: u64, total: u64) -> String {
    jsonrpc::notification(
        "notifications/progress",
        json!({"progressToken": token, "progress": progress, "total": total}),
    )
}

/// The JSON-RPC response for a finished call: its result, or its error.
pub fn response(id: &RequestId, outcome: Result<Value, (i64, String)>) -> String {
    match outcome {
        Ok(result) => jsonrpc::result(id, result),
        Err((code, message)) => jsonrpc::error(Some(id), code, &message),
    }
}

/// Runs a tool: `Ok` is the `tools/call` result (tool errors included, as `isError`), `Err`
/// a JSON-RPC error (unknown tool, bad arguments).
pub async fn call(call: &ToolCall, host: &impl ToolHost) -> Result<Value, (i64, String)> {
    let args = &call.arguments;
    let bad = |why: &str| Err((INVALID_PARAMS, format!("{}: {why}", call.name)));
    match call.name.as_str() {
        "append" => {
            let Some(line) = args.get("text").and_then(Value::as_str) else {
                return bad("`text` must be a string");
            };
            if line.len() > MAX_APPEND_BYTES || line.contains(['\n', '\r']) {
                return bad("`text` must be one line of at most 64 KiB");
            }
            let delay = args.get("delay_ms").map_or(Some(0), Value::as_u64);
            let Some(delay) = delay.filter(|ms| *ms <= MAX_COUNTDOWN_INTERVAL_MS) else {
                return bad("`delay_ms` must be an integer from 0 to 60000");
            };
            // A call cancelled while it waits writes nothing.
            if delay > 0 && !host.sleep(delay).await {
                return Ok(tool_error("cancelled before anything was written"));
            }
            Ok(match host.append(line) {
                Ok(count) => json!({
                    "content": [{"type": "text", "text": count.to_string()}],
                    "structuredContent": {"lines": count}
                }),
                Err(AppendError::Full) => tool_error(format!(
                    "the journal is full ({MAX_JOURNAL_LINES} lines); nothing was written"
                )),
                Err(AppendError::Failed(e)) => {
                    tool_error(format!("journal write failed, nothing was written: {e}"))
                }
                Err(AppendError::Unknown(e)) => tool_error(format!(
                    "journal write outcome unknown: the line may have been written; read the journal before appending it again ({e})"
                )),
            })
        }
        "journal" => {
            let Some(from) = args.get("from").map_or(Some(0), Value::as_u64) else {
                return bad("`from` must be a non-negative integer");
            };
            let limit = args.get("limit").map_or(Some(JOURNAL_PAGE_LINES), Value::as_u64);
            let Some(limit) = limit.filter(|l| (1..=JOURNAL_PAGE_LINES).contains(l)) else {
                return bad("`limit` must be an integer from 1 to 100");
            };
            Ok(match host.journal(from, limit) {
                Ok(page) => journal_page(from, page),
                Err(e) => tool_error(format!("journal read failed: {e}")),
            })
        }
        "countdown" => {
            let Some(n) = args.get("n").and_then(Value::as_u64).filter(|n| *n <= MAX_COUNTDOWN_STEPS) else {
                return bad("`n` must be an integer from 0 to 10000");
            };
            let interval = match args.get("interval_ms") {
                None => 100,
                Some(v) => match v.as_u64().filter(|ms| *ms <= MAX_COUNTDOWN_INTERVAL_MS) {
                    Some(ms) => ms,
                    None => return bad("`interval_ms` must be an integer from 0 to 60000"),
                },
            };
            if n.saturating_mul(interval) > MAX_COUNTDOWN_MS {
                return bad("`n` × `interval_ms` must be at most 600000 (10 minutes)");
            }
            for i in 1..=n {
                if !host.sleep(interval).await {
                    return Ok(tool_error("cancelled"));
                }
                if let Some(token) = &call.progress_token
                    && !host.notify(progress(token, i, n))
                {
                    return Ok(tool_error("cancelled"));
                }
            }
            Ok(text("done"))
        }
        "test_simple_text" => Ok(text("This is a simple text response for testing.")),
        "test_tool_with_progress" => {
            for (i, p) in [0, 50, 100].into_iter().enumerate() {
                if i > 0 && !host.sleep(50).await {
                    return Ok(tool_error("cancelled"));
                }
                if let Some(token) = &call.progress_token {
                    host.notify(progress(token, p, 100));
                }
            }
            Ok(text("Progress test completed"))
        }
        "test_tool_with_logging" | "test_logging_tool" => {
            for (i, msg) in ["Tool execution started", "Tool processing data", "Tool execution completed"]
                .into_iter()
                .enumerate()
            {
                if i > 0 && !host.sleep(50).await {
                    return Ok(tool_error("cancelled"));
                }
                if call.logs {
                    host.notify(jsonrpc::notification(
                        "notifications/message",
                        json!({"level": "info", "data": msg}),
                    ));
                }
            }
            Ok(text("Logging test completed"))
        }
        "test_error_handling" => Ok(tool_error("This tool intentionally returns an error for testing")),
        "test_param_header" => Ok(text(args.get("region").and_then(Value::as_str).unwrap_or("no region"))),
        "greet" => match args.get("name").and_then(Value::as_str) {
            Some(name) if name.len() <= MAX_TOOL_NAME_BYTES => Ok(text(format!("Hello, {name}!"))),
            _ => bad("`name` must be a string of at most 128 bytes"),
        },
        "slow_compute" => {
            let seconds =
                args.get("seconds").and_then(Value::as_u64).filter(|s| *s <= MAX_COUNTDOWN_MS / 1000);
            let Some(seconds) = seconds else { return bad("`seconds` must be an integer from 0 to 600") };
            let label = args.get("label").and_then(Value::as_str).unwrap_or("slow_compute");
            if label.len() > MAX_TOOL_NAME_BYTES {
                return bad("`label` is at most 128 bytes");
            }
            if seconds > 0 && !host.sleep(seconds * 1000).await {
                return Ok(tool_error("cancelled"));
            }
            Ok(text(format!("{label}: computed after {seconds} s")))
        }
        "failing_job" => {
            if !host.sleep(1000).await {
                return Ok(tool_error("cancelled"));
            }
            Ok(tool_error("failing_job always fails (a tool error)"))
        }
        "protocol_error_job" => {
            Err((jsonrpc::INTERNAL_ERROR, "protocol_error_job always fails with a JSON-RPC error".into()))
        }
        "test_reconnection" => {
            if !host.sleep(100).await {
                return Ok(tool_error("cancelled"));
            }
            host.close_connection();
            if !host.sleep(300).await {
                return Ok(tool_error("cancelled"));
            }
            Ok(text("Reconnection test completed successfully"))
        }
        other => Err((INVALID_PARAMS, format!("unknown tool: {other}"))),
    }
}
