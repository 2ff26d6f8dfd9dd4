//! A 2026-07-28 request: no session, no gate. Its headers must say what its body says
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`: `400`/`-32020` otherwise); an unknown
//! method is `404`/`-32601`. A tool call is answered on a stream of its own that nothing
//! records and nothing resumes: closing it cancels the call (a client re-issues a lost
//! request under a new id). `Mcp-Session-Id` and `Last-Event-ID` are ignored. `initialize`
//! is a method this revision removed (`404`); a session-era client sends it without the
//! 2026-07-28 header, which selects the session era.
//!
//! Where the host offers tasks (`ServerConfig::tasks`), a call that may take a while, from a
//! client whose request names `io.modelcontextprotocol/tasks`, becomes a task instead
//! ([`Reply::Task`], see [`crate::tasks`]), and so do `tasks/get`, `tasks/update` and
//! `tasks/cancel`; `tasks/result` and `tasks/list` are gone from the extension (`404`).

use base64::Engine;

use super::*;
use crate::jsonrpc::{HEADER_MISMATCH, METHOD_NOT_FOUND};
use crate::tasks::{self, TaskOp, TaskRequest};
use crate::tools;

/// The `_meta` key carrying a request's protocol version.
pub const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key carrying the client's capabilities.
pub const CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key asking for `notifications/message` at a level (none without it).
pub const LOG_LEVEL_META: &str = "io.modelcontextprotocol/logLevel";
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";
const SUBSCRIPTION_META: &str = "io.modelcontextprotocol/subscriptionId";
/// How long a client may cache `tools/list` and `server/discover` (neither changes while we
/// run).
const TOOLS_TTL_MS: u64 = 3_600_000;

impl Server {
    pub(super) fn stateless(&self, req: &HttpRequest, mint: impl FnOnce() -> Option<String>) -> Reply {
        if let Some(refused) = Self::require_json_body(req) {
            return refused;
        }
        let message = match jsonrpc::parse(&req.body) {
            Ok(m) => m,
            Err(jsonrpc::ParseError::Batch) => {
                let msg = "Invalid Request: a 2026-07-28 POST carries one JSON-RPC message, not a batch";
                return rpc_error(400, None, INVALID_REQUEST, msg);
            }
            Err(e) => return rpc_error(400, e.id(), e.code(), e.message()),
        };
        let (id, method, params) = match message {
            Message::Request { id, method, params } => (id, method, params),
            // None is defined for this transport (closing a stream cancels): accepted, unused.
            Message::Notification { .. } => return plain(202, None),
            Message::Response => {
                let msg = "Invalid Request: a 2026-07-28 client sends no responses";
                return rpc_error(400, None, INVALID_REQUEST, msg);
            }
        };
        if let Err(missing) = meta_is_whole(&params) {
            return rpc_error(400, Some(&id), jsonrpc::INVALID_PARAMS, &format!("Invalid params: {missing}"));
        }
        if let Err(mismatch) = headers_match_body(req, &method, &params) {
            let message = format!("Header mismatch: {mismatch}");
            return rpc_error(400, Some(&id), HEADER_MISMATCH, &message);
        }
        match method.as_str() {
            "server/discover" => self.json(req, &id, self.discover()),
            "tools/list" => {
                let mut list = tools::list();
                list["ttlMs"] = json!(TOOLS_TTL_MS);
                list["cacheScope"] = json!("public");
                self.json(req, &id, self.complete(list))
            }
            "tools/call" => self.stateless_call(req, id, &params, mint),
            "subscriptions/listen" => self.listen(req, id, mint),
            "tasks/get" | "tasks/update" | "tasks/cancel" if self.config.tasks => {
                self.task_request(req, id, &method, &params)
            }
            other => {
                let message = format!("Method not found: {other} (protocol version {})", protocol::STATELESS);
                rpc_error(404, Some(&id), METHOD_NOT_FOUND, &message)
            }
        }
    }

    /// A result as this revision writes it: `resultType`, and who answered.
    fn complete(&self, mut result: Value) -> Value {
        result["resultType"] = json!("complete");
        result["_meta"] =
            json!({SERVER_INFO_META: {"name": self.config.name, "version": self.config.version}});
        result
    }

    fn discover(&self) -> Value {
        let mut capabilities = json!({"tools": {"listChanged": false}});
        if self.config.tasks {
            capabilities["extensions"] = json!({tasks::EXTENSION: {}});
        }
        // What we offer changes only with a new build: cacheable like `tools/list`.
        self.complete(json!({
            "supportedVersions": protocol::ALL,
            "capabilities": capabilities,
            "ttlMs": TOOLS_TTL_MS,
            "cacheScope": "public",
        }))
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`: for a client that declared the extension on
    /// this request, and a string `taskId`; the host looks the task up.
    fn task_request(&self, req: &HttpRequest, id: RequestId, method: &str, params: &Value) -> Reply {
        if !declares_tasks(params) {
            return Reply::Plain(tasks::missing_capability(&id));
        }
        let Some(task) = params.get("taskId").and_then(Value::as_str) else {
            let message = format!("Invalid params: {method} needs a string `taskId`");
            return rpc_error(200, Some(&id), jsonrpc::INVALID_PARAMS, &message);
        };
        if let Some(refused) = Self::require_json_reply(req, &id) {
            return refused;
        }
        let task = task.to_owned();
        let op = match method {
            "tasks/get" => TaskOp::Get(task),
            "tasks/update" => TaskOp::Update(task),
            _ => TaskOp::Cancel(task),
        };
        Reply::Task(TaskRequest { id, op })
    }

    fn json(&self, req: &HttpRequest, id: &RequestId, result: Value) -> Reply {
        if let Some(refused) = Self::require_json_reply(req, id) {
            return refused;
        }
        plain(200, Some(jsonrpc::result(id, result)))
    }

    /// A stream of this response alone, filed by the host under a random `key`.
    fn unrecorded(key: String) -> Stream {
        Stream {
            session: key,
            resumable: false,
            farewell: None,
            stream: 0,
            attachment: 0,
            frames: Vec::new(),
            follow_after: 0,
            close: false,
            calls: Vec::new(),
            cancels: Vec::new(),
            decision: None,
        }
    }

    fn stateless_call(
        &self,
        req: &HttpRequest,
        id: RequestId,
        params: &Value,
        mint: impl FnOnce() -> Option<String>,
    ) -> Reply {
        let call = match ToolCall::from_params(params) {
            Ok(call) => call.stateless(params.get("_meta").and_then(|m| m.get(LOG_LEVEL_META)).is_some()),
            Err(why) => return plain(200, Some(jsonrpc::error(Some(&id), jsonrpc::INVALID_PARAMS, &why))),
        };
        // A client that declared the extension gets a task for a call that may take a while.
        if self.config.tasks && declares_tasks(params) && tools::runs_as_task(&call) {
            if let Some(refused) = Self::require_json_reply(req, &id) {
                return refused;
            }
            return Reply::Task(TaskRequest { id, op: TaskOp::Create(call) });
        }
        if let Some(refused) = Self::require_sse(req, Some(&id)) {
            return refused;
        }
        let Some(key) = mint() else { return no_key(&id) };
        let mut stream = Self::unrecorded(key);
        stream.calls.push(PendingCall::Tool { id, call });
        Reply::Stream(stream)
    }

    /// `subscriptions/listen`: acknowledged with the notifications we honour — none, since
    /// our tools never change — and held open until the client closes it, or the host ends
    /// it with the graceful closing response.
    fn listen(&self, req: &HttpRequest, id: RequestId, mint: impl FnOnce() -> Option<String>) -> Reply {
        if let Some(refused) = Self::require_sse(req, Some(&id)) {
            return refused;
        }
        let Some(key) = mint() else { return no_key(&id) };
        let mut stream = Self::unrecorded(key);
        let tag = json!({SUBSCRIPTION_META: jsonrpc::id_value(&id)});
        let ack = jsonrpc::notification(
            "notifications/subscriptions/acknowledged",
            json!({"_meta": tag, "notifications": {}}),
        );
        stream.frames.push(sse::unnamed(&ack));
        stream.farewell = Some(jsonrpc::result(&id, json!({"resultType": "complete", "_meta": tag})));
        Reply::Stream(stream)
    }
}

/// Whether this request's client capabilities name the tasks extension (SEP-2663: per
/// request; nothing carries over from another).
fn declares_tasks(params: &Value) -> bool {
    params["_meta"][CAPABILITIES_META]["extensions"][tasks::EXTENSION].is_object()
}

/// `503`: without randomness a stream's key could be guessed.
fn no_key(id: &RequestId) -> Reply {
    Reply::Plain(unavailable(Some(id), "no randomness to key a stream"))
}

/// Whether `_meta` carries what every request of this revision must: its version and the
/// client's capabilities.
fn meta_is_whole(params: &Value) -> Result<(), String> {
    let meta = params.get("_meta").filter(|m| m.is_object()).ok_or("the request carries no _meta")?;
    for key in [VERSION_META, CAPABILITIES_META] {
        if meta.get(key).is_none() {
            return Err(format!("_meta carries no {key}"));
        }
    }
    Ok(())
}

/// Whether the request's headers say what its body says; why not, in the spec's terms.
fn headers_match_body(req: &HttpRequest, method: &str, params: &Value) -> Result<(), String> {
    if params["_meta"][VERSION_META] != protocol::STATELESS {
        return Err("the MCP-Protocol-Version header does not match the body's _meta".into());
    }
    match req.header("mcp-method") {
        None => return Err("the Mcp-Method header is required".into()),
        Some(m) if m != method.as_bytes() => {
            return Err("the Mcp-Method header does not match the body's method".into());
        }
        Some(_) => {}
    }
    let named = match method {
        "tools/call" | "prompts/get" => params.get("name"),
        "resources/read" => params.get("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => params.get("taskId"),
        _ => return Ok(()),
    };
    let Some(header) = req.header("mcp-name") else {
        return Err(format!("the Mcp-Name header is required for {method}"));
    };
    let header = decode_header_value(header).ok_or("the Mcp-Name header is not a valid value")?;
    if named.and_then(Value::as_str) != Some(header.as_str()) {
        return Err("the Mcp-Name header does not match the body".into());
    }
    if method == "tools/call" {
        params_match_headers(req, params)?;
    }
    Ok(())
}

/// The tool's `x-mcp-header` parameters: each one the call carries must be in its
/// `Mcp-Param-{Name}` header, with the same value (an integer compared as a number).
fn params_match_headers(req: &HttpRequest, params: &Value) -> Result<(), String> {
    let tool = params["name"].as_str().unwrap_or_default();
    for (property, name) in tools::param_headers(tool) {
        let header_name = format!("mcp-param-{}", name.to_ascii_lowercase());
        let value = &params["arguments"][&property];
        if value.is_null() {
            continue;
        }
        let Some(raw) = req.header(&header_name) else {
            return Err(format!("the Mcp-Param-{name} header is required: the call carries `{property}`"));
        };
        let header = decode_header_value(raw)
            .ok_or_else(|| format!("the Mcp-Param-{name} header is not a valid value"))?;
        let matches = match value {
            Value::String(s) => *s == header,
            Value::Bool(b) => header == b.to_string(),
            Value::Number(n) => header.parse::<f64>().ok() == n.as_f64(),
            _ => false,
        };
        if !matches {
            return Err(format!("the Mcp-Param-{name} header does not match the body's `{property}`"));
        }
    }
    Ok(())
}

/// A header value as the spec writes it: plain visible ASCII, or `=?base64?…?=` for anything
/// else; whitespace around it is not part of it (RFC 9110 §5.5). `None` for a value with other
/// bytes, or bad base64, or not UTF-8 inside.
fn decode_header_value(raw: &[u8]) -> Option<String> {
    let value = std::str::from_utf8(raw).ok()?.trim_matches([' ', '\t']);
    if !value.bytes().all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic()) {
        return None;
    }
    match value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(value.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::decode_header_value;

    #[test]
    fn header_values_are_plain_ascii_or_the_base64_sentinel() {
        assert_eq!(decode_header_value(b"us-west1").as_deref(), Some("us-west1"));
        assert_eq!(decode_header_value(b" us-west1\t").as_deref(), Some("us-west1"));
        assert_eq!(decode_header_value(b"=?base64?SGVsbG8?=").as_deref(), None, "padding is required");
        assert_eq!(decode_header_value(b"=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(), Some("Hello, 世界"));
        assert_eq!(
            decode_header_value(b"=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=").as_deref(),
            Some("=?base64?literal?=")
        );
        assert_eq!(decode_header_value(b"=?base64?not base64!?="), None);
        assert_eq!(decode_header_value(b"a\x01b"), None);
        assert_eq!(decode_header_value("é".as_bytes()), None);
    }
}
