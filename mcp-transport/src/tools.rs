//! The sample tools. Names are stable: `append`, `journal`, `countdown`, and the reference
//! tools the MCP conformance suite calls (`test_*`).
//!
//! A tool runs against a [`ToolHost`]: the host owns time, the journal and the connection;
//! the tool only decides what to send. `append` is the non-idempotent tool the gate exists
//! for: it must never run twice for one call.

use std::future::Future;

use serde_json::{Value, json};

use resume_gate::RequestId;

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
/// Lines the journal holds; `append` fails beyond (a host enforces it where it writes).
pub const MAX_JOURNAL_LINES: u64 = 1000;
/// Lines one `journal` call returns at most, and by default.
pub const JOURNAL_PAGE_LINES: u64 = 100;
/// Bytes of lines one `journal` page holds at most (at least one line), so that a page is
/// one event the gate can buffer.
pub const JOURNAL_PAGE_BYTES: usize = 256 * 1024;

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

/// Why an `append` wrote no line it can name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppendError {
    /// The journal holds [`MAX_JOURNAL_LINES`]; nothing was written.
    Full,
    /// Nothing was written (the store refused before the write was sent).
    Failed(String),
    /// The write was sent and no answer came (a timeout, a lost connection): the line may or
    /// may not be there. Never reported as a failure, since it can still land.
    Unknown(String),
}

/// A run of the journal's lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalPage {
    pub lines: Vec<String>,
    pub total: u64,
}

/// The key-value calls of a journal kept in a store that many instances share (the Spin app,
/// host-example `--store`). Every key carries the hash tag `{journal}`, so a Redis Cluster keeps
/// the journal on one shard and a script may touch all of it; none starts with the gate's
/// `rg/`, so the gate's garbage collection never takes one.
///
/// A line is appended once per request: `append_once` first looks for the line number its
/// request key names, so a retry of the same request (after a timeout, say) finds the line
/// instead of writing it again. Over plain key-value calls that is `get`, then `increment` to
/// number the line, then the line, then the request key; a writer that dies between two of
/// them leaves a numbered gap, which readers skip, so no lost write hides later lines. A store
/// with scripts (Redis) overrides `append_once` with one atomic script.
pub trait JournalKv {
    fn increment(&self, key: &str, delta: i64) -> Result<i64, String>;
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String>;
    fn set(&self, key: &str, value: &[u8]) -> Result<(), String>;

    /// Appends `line` unless the request `request_key` names appended one already; the line's
    /// number. A failure after a write was sent is [`AppendError::Unknown`].
    fn append_once(&self, request_key: &str, line: &str) -> Result<u64, AppendError> {
        append_once_by_calls(self, request_key, line)
    }
}

/// [`JournalKv::append_once`] over plain key-value calls (see the trait's docs).
pub fn append_once_by_calls(
    kv: &(impl JournalKv + ?Sized),
    request_key: &str,
    line: &str,
) -> Result<u64, AppendError> {
    if let Some(n) = kv.get(request_key).map_err(AppendError::Failed)? {
        return parse_line_number(&n).ok_or_else(|| AppendError::Failed("an unreadable request key".into()));
    }
    let max = MAX_JOURNAL_LINES as i64;
    let n = kv.increment(JOURNAL_COUNT_KEY, 1).map_err(AppendError::Unknown)?;
    if n > max {
        let _ = kv.increment(JOURNAL_COUNT_KEY, -1);
        return Err(AppendError::Full);
    }
    kv.set(&journal_line_key(n), line.as_bytes()).map_err(AppendError::Unknown)?;
    kv.set(request_key, n.to_string().as_bytes()).map_err(AppendError::Unknown)?;
    u64::try_from(n).map_err(|_| AppendError::Failed("journal count out of range".into()))
}

/// The journal's line counter.
pub const JOURNAL_COUNT_KEY: &str = "journal/{journal}/count";
/// The keys of the journal's lines: this prefix, then the line number (6 digits).
pub const JOURNAL_LINE_PREFIX: &str = "journal/{journal}/line/";

pub fn journal_line_key(n: i64) -> String {
    format!("{JOURNAL_LINE_PREFIX}{n:06}")
}

/// The key naming the line a request appended: by session and JSON-RPC id (its JSON, so that
/// `1` and `"1"` differ).
pub fn journal_request_key(session: &str, request: &RequestId) -> String {
    // The session's length first: a session id may hold `/`.
    format!("journal/{{journal}}/req/{}/{session}/{}", session.len(), jsonrpc::id_value(request))
}

fn parse_line_number(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

/// Appends a line to the journal in `kv` (at most [`MAX_JOURNAL_LINES`]), once for `request`
/// of `session`; its number.
pub fn append_to_kv_journal(
    kv: &impl JournalKv,
    session: &str,
    request: &RequestId,
    line: &str,
) -> Result<u64, AppendError> {
    kv.append_once(&journal_request_key(session, request), line)
}

/// Up to `limit` lines from line `from` (0-based) of the journal in `kv`, skipping a number
/// whose line is missing (its writer died, or has not stored it yet). The count is read by
/// adding 0: a counter's bytes are the backend's own (8 bytes on SQLite, ASCII decimal on
/// Redis).
pub fn kv_journal_page(kv: &impl JournalKv, from: u64, limit: u64) -> Result<JournalPage, String> {
    let total = kv.increment(JOURNAL_COUNT_KEY, 0)?.clamp(0, MAX_JOURNAL_LINES as i64);
    let first = i64::try_from(from).unwrap_or(i64::MAX).saturating_add(1);
    let last = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(first - 1).min(total);
    let mut lines = Vec::new();
    for n in first..=last {
        if let Some(bytes) = kv.get(&journal_line_key(n))? {
            lines.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    Ok(JournalPage { lines, total: u64::try_from(total).unwrap_or(0) })
}

/// A `tools/call`'s parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
    pub progress_token: Option<Value>,
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
        Ok(Self { name: name.to_owned(), arguments, progress_token })
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
        description: "Appends a line to the journal and returns the new line count (not idempotent)",
        schema: || json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
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
    Tool { name: "test_error_handling", description: "Always returns a tool error", schema: no_arguments },
    Tool {
        name: "test_reconnection",
        description: "Closes its SSE stream mid-call; the result arrives on the client's GET resume",
        schema: no_arguments,
    },
];

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
        "test_tool_with_logging" => {
            for (i, msg) in ["Tool execution started", "Tool processing data", "Tool execution completed"]
                .into_iter()
                .enumerate()
            {
                if i > 0 && !host.sleep(50).await {
                    return Ok(tool_error("cancelled"));
                }
                host.notify(jsonrpc::notification(
                    "notifications/message",
                    json!({"level": "info", "data": msg}),
                ));
            }
            Ok(text("Logging test completed"))
        }
        "test_error_handling" => Ok(tool_error("This tool intentionally returns an error for testing")),
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
