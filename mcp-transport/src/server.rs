//! One HTTP request in, one reply out: the Streamable HTTP rules, checked in the spec's
//! order (DNS-rebinding guard, method, protocol version, media types, session), with every
//! stream opened, resumed or refused by the gate.
//!
//! # Layout
//!
//! - this file: the checks every request passes, in order, and the dispatch by method;
//! - `session`: `initialize` and DELETE;
//! - `post`: one JSON-RPC message;
//! - `batch`: a 2025-03-26 batch;
//! - `get`: the standalone stream and every reconnect;
//! - `stateless`: a 2026-07-28 request, served without a session and without the gate.

mod batch;
mod get;
mod post;
mod session;
mod stateless;

use resume_gate::{Decision, GateError, Opened, Origin, RequestId};
use serde_json::{Value, json};

use crate::calls::PendingCall;
use crate::errors::{self, gate_error_plain, gate_error_reply, session_not_found, unavailable};
use crate::gate::GateApi;
use crate::hosts::AllowedHosts;
use crate::http::{HttpRequest, LAST_EVENT_ID_HEADER, SESSION_HEADER, VERSION_HEADER};
use crate::jsonrpc::{self, INVALID_REQUEST, Message};
use crate::protocol::{self, Era};
use crate::reply::{DecisionLog, Plain, Reply, Stream, plain, rpc_error, rpc_plain};
use crate::sse;
use crate::tools::ToolCall;

/// Bytes of randomness in a session id (hex-encoded: 32 characters).
const SESSION_ID_BYTES: usize = 16;

/// A new `Mcp-Session-Id`: 128 random bits from `fill`, hex-encoded. `None` when `fill` fails:
/// a guessable session id is worse than a refused `initialize` (`503`).
pub fn mint_session_id(fill: impl FnOnce(&mut [u8]) -> bool) -> Option<String> {
    let mut bytes = [0u8; SESSION_ID_BYTES];
    fill(&mut bytes).then(|| bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The names `Host` and `Origin` may name: localhost by default, the defence against DNS
    /// rebinding.
    pub allowed_hosts: AllowedHosts,
    pub name: String,
    pub version: String,
    /// Messages one 2025-03-26 batch may hold (`--max-batch`); more: `400`/`-32600`, before
    /// anything is parsed beyond the array's elements' bounds.
    pub max_batch: usize,
    /// The host runs 2026-07-28 calls as tasks (`io.modelcontextprotocol/tasks`): it answers
    /// [`Reply::Task`] with [`crate::tasks::answer`]. Off: the extension is not offered.
    pub tasks: bool,
}

/// The default `max_batch`.
pub const DEFAULT_MAX_BATCH: usize = 64;

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            allowed_hosts: AllowedHosts::localhost(),
            name: "resume-gate".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            max_batch: DEFAULT_MAX_BATCH,
            tasks: false,
        }
    }
}

/// `400` with `-32022` and the revisions we speak: an `MCP-Protocol-Version` we do not (the
/// requested one is echoed only when short and printable).
fn unsupported_version(requested: &[u8], req: &HttpRequest) -> Plain {
    let requested = std::str::from_utf8(requested)
        .ok()
        .map(str::trim)
        .filter(|v| v.len() <= 32 && v.bytes().all(|b| b.is_ascii_graphic()));
    // The error answers the request, when its id can be read.
    let id = match jsonrpc::parse(&req.body) {
        Ok(Message::Request { id, .. }) => Some(id),
        _ => None,
    };
    let data = json!({"supported": protocol::ALL, "requested": requested});
    let message = format!("Unsupported protocol version; supported: {}", protocol::ALL.join(", "));
    Plain {
        status: 400,
        body: Some(jsonrpc::error_with_data(
            id.as_ref(),
            jsonrpc::UNSUPPORTED_PROTOCOL_VERSION,
            &message,
            data,
        )),
        ..Plain::default()
    }
}

/// The request a `notifications/cancelled` names, if this is one.
fn cancelled(method: &str, params: &Value) -> Option<RequestId> {
    (method == "notifications/cancelled").then(|| params.get("requestId").and_then(jsonrpc::id_from_value))?
}

pub struct Server {
    pub config: ServerConfig,
}

impl Server {
    pub fn new(config: ServerConfig) -> Self {
        Self { config }
    }

    /// Answers one request. `mint_session_id` is called only for `initialize`; `None` (no
    /// randomness) refuses it with `503`.
    pub fn handle(
        &self,
        gate: &mut (impl GateApi + ?Sized),
        req: &HttpRequest,
        mint_session_id: impl FnOnce() -> Option<String>,
    ) -> Reply {
        if let Some(refused) = self.guard_against_rebinding(req) {
            return refused;
        }
        let method = req.method.as_str();
        if !matches!(method, "GET" | "POST" | "DELETE") {
            return Reply::Plain(Plain { status: 405, allow: Some("GET, POST, DELETE"), ..Plain::default() });
        }
        let era = match req.header(VERSION_HEADER) {
            None => Era::Sessions(protocol::ASSUMED),
            Some(v) => match std::str::from_utf8(v).ok().map(str::trim).and_then(protocol::era) {
                Some(era) => era,
                None => return Reply::Plain(unsupported_version(v, req)),
            },
        };
        // GET and DELETE belong to a session: without one (a stateless-era client, or one
        // probing), there is nothing here to get or end.
        let sessionless = era == Era::Stateless || req.header(SESSION_HEADER).is_none();
        if method != "POST" && sessionless {
            return Reply::Plain(Plain { status: 405, allow: Some("POST"), ..Plain::default() });
        }
        match (method, era) {
            ("POST", Era::Stateless) => self.stateless(req, mint_session_id),
            ("POST", Era::Sessions(version)) => self.post(gate, req, version, mint_session_id),
            ("GET", Era::Sessions(version)) => self.get(gate, req, version),
            _ => self.delete(gate, req),
        }
    }

    fn guard_against_rebinding(&self, req: &HttpRequest) -> Option<Reply> {
        let admitted = self.config.allowed_hosts.admits(req.header_str("host"), req.header_str("origin"));
        (!admitted).then(|| rpc_error(403, None, INVALID_REQUEST, "Forbidden: Host or Origin not allowed"))
    }

    /// The session id a non-initialize request names: `400` without one or with one that is
    /// not a session id. Whether it is open, the gate call the request makes finds out
    /// (`UnknownSession`: `404`), so that a call crosses into the component once, not twice;
    /// a request that makes none asks [`Self::known_session`].
    fn session_id(req: &HttpRequest) -> Result<String, Plain> {
        let Some(raw) = req.header(SESSION_HEADER) else {
            return Err(rpc_plain(
                400,
                None,
                INVALID_REQUEST,
                "Bad Request: Mcp-Session-Id header is required",
            ));
        };
        let Some(id) = std::str::from_utf8(raw).ok().filter(|s| resume_gate::validate_session_id(s).is_ok())
        else {
            return Err(rpc_plain(400, None, INVALID_REQUEST, "Bad Request: invalid Mcp-Session-Id"));
        };
        Ok(id.to_owned())
    }

    /// For a request the gate has no call for (notifications and responses alone): `404` if
    /// the session is not open, `503` if the store cannot tell.
    fn known_session(gate: &mut (impl GateApi + ?Sized), session: String) -> Result<String, Plain> {
        match gate.has_session(&session) {
            Ok(true) => Ok(session),
            Ok(false) => Err(session_not_found()),
            Err(e) => Err(gate_error_plain(&e, None)),
        }
    }

    fn accepts(req: &HttpRequest, media: &str) -> bool {
        req.header_str("accept").is_none_or(|a| a.contains(media) || a.contains("*/*"))
    }

    /// `415` unless the body is JSON.
    fn require_json_body(req: &HttpRequest) -> Option<Reply> {
        let json = req
            .header_str("content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("application/json"));
        let message = "Unsupported Media Type: Content-Type must be application/json";
        (!json).then(|| rpc_error(415, None, INVALID_REQUEST, message))
    }

    /// `406` unless the client accepts a JSON reply.
    fn require_json_reply(req: &HttpRequest, id: &RequestId) -> Option<Reply> {
        let message = "Not Acceptable: Accept must include application/json";
        (!Self::accepts(req, "application/json")).then(|| rpc_error(406, Some(id), INVALID_REQUEST, message))
    }

    /// `406` unless the client accepts an SSE reply.
    fn require_sse(req: &HttpRequest, id: Option<&RequestId>) -> Option<Reply> {
        let message = "Not Acceptable: Accept must include text/event-stream";
        (!Self::accepts(req, "text/event-stream")).then(|| rpc_error(406, id, INVALID_REQUEST, message))
    }

    fn new_stream(
        &self,
        session: &str,
        opened: &Opened,
        version: &str,
        decision: Option<DecisionLog>,
    ) -> Stream {
        let mut frames = Vec::new();
        if protocol::sends_priming(version) {
            frames.push(sse::frame(&opened.priming));
        }
        Stream {
            session: session.to_owned(),
            resumable: true,
            farewell: None,
            stream: opened.stream,
            attachment: opened.attachment,
            frames,
            follow_after: opened.priming.seq,
            close: false,
            calls: Vec::new(),
            cancels: Vec::new(),
            decision,
        }
    }
}
