//! One HTTP request in, one reply out: the Streamable HTTP rules, checked in the spec's
//! order (DNS-rebinding guard, method, protocol version, media types, session), with every
//! stream opened, resumed or refused by the gate.

use resume_gate::{Decision, GateError, Opened, Origin, RequestId, StaleReason};
use serde_json::{Value, json};

use crate::errors;
use crate::gate::GateApi;
use crate::hosts::AllowedHosts;
use crate::jsonrpc::{
    self, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, Message, RESULT_LOST,
};
use crate::protocol;
use crate::sse;
use crate::tools::{self, ToolCall, ToolHost};

pub const SESSION_HEADER: &str = "mcp-session-id";
pub const VERSION_HEADER: &str = "mcp-protocol-version";
pub const LAST_EVENT_ID_HEADER: &str = "last-event-id";

/// An HTTP request, as the host read it. Header names are lowercase.
#[derive(Clone, Debug, Default)]
pub struct HttpRequest {
    pub method: String,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice())
    }

    fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name).and_then(|v| std::str::from_utf8(v).ok()).map(str::trim)
    }
}

/// Largest request body a host reads (`413` beyond); a host stops reading there.
pub const MAX_BODY_BYTES: usize = 4 << 20;
/// The `Retry-After` of a `503`: the state store failed or a bound is reached, and a retry
/// soon may well succeed.
pub const RETRY_AFTER_SECONDS: u32 = 1;
/// Bytes of randomness in a session id (hex-encoded: 32 characters).
const SESSION_ID_BYTES: usize = 16;

/// A reply without a stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plain {
    pub status: u16,
    /// `application/json` when there is a body.
    pub body: Option<String>,
    pub session: Option<String>,
    /// For `405`.
    pub allow: Option<&'static str>,
    /// Seconds, for `503`.
    pub retry_after: Option<u32>,
    /// For the host's log, not the client: the session `initialize` reclaimed to make room.
    pub reclaimed: Option<String>,
}

impl Plain {
    /// The reply for a request body over [`MAX_BODY_BYTES`].
    pub fn payload_too_large() -> Self {
        rpc_plain(413, None, INVALID_REQUEST, "Payload Too Large: the request body exceeds 4 MiB")
    }

    /// The reply for a request body the connection failed to deliver.
    pub fn unreadable_body() -> Self {
        rpc_plain(400, None, INVALID_REQUEST, "Bad Request: the request body could not be read")
    }

    /// The response headers, besides the status: every host writes the same ones.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut h = Vec::new();
        if self.body.is_some() {
            h.push(("content-type", "application/json".to_owned()));
        }
        if let Some(s) = &self.session {
            h.push((SESSION_HEADER, s.clone()));
        }
        if let Some(allow) = self.allow {
            h.push(("allow", allow.to_owned()));
        }
        if let Some(seconds) = self.retry_after {
            h.push(("retry-after", seconds.to_string()));
        }
        h
    }
}

/// The headers of an SSE reply for `session`.
pub fn sse_headers(session: &str) -> [(&'static str, &str); 3] {
    [("content-type", "text/event-stream"), ("cache-control", "no-cache"), (SESSION_HEADER, session)]
}

/// A new `Mcp-Session-Id`: 128 random bits from `fill`, hex-encoded. `None` when `fill` fails:
/// a guessable session id is worse than a refused `initialize` (`503`).
pub fn mint_session_id(fill: impl FnOnce(&mut [u8]) -> bool) -> Option<String> {
    let mut bytes = [0u8; SESSION_ID_BYTES];
    fill(&mut bytes).then(|| bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A request the host answers on `Stream::stream` when its turn comes: a tool call it runs,
/// or (in a batch) a request the transport answers, computed only then, so that a batch is
/// answered as it is produced and never built whole first.
#[derive(Clone, Debug, PartialEq)]
pub enum PendingCall {
    /// A `tools/call`: the host runs the tool.
    Tool { id: RequestId, call: ToolCall },
    /// A request of a batch the transport answers itself (`ping`, `tools/list`, …).
    Answer { id: RequestId, method: String, params: Value },
    /// A batch element refused already, with this error and nothing run: a request whose id
    /// was used before in the session, or a malformed element (`id` unknown).
    Refused { id: Option<RequestId>, error: String },
}

impl PendingCall {
    /// The request it answers; `None` for a malformed element.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Self::Tool { id, .. } | Self::Answer { id, .. } => Some(id),
            Self::Refused { id, .. } => id.as_ref(),
        }
    }

    /// The request's JSON-RPC response, running its tool on `host` if it is a tool call.
    pub async fn respond(&self, host: &impl ToolHost) -> String {
        match self {
            Self::Tool { id, call } => tools::response(id, tools::call(call, host).await),
            Self::Answer { id, method, params } => answer(id, method, params),
            Self::Refused { error, .. } => error.clone(),
        }
    }
}

/// What the gate decided for a reconnect, for the host's structured log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionLog {
    pub resumed: bool,
    pub reason: Option<StaleReason>,
    pub replayed: usize,
    pub stranded: Vec<RequestId>,
}

/// An SSE reply: write `frames`, then close if `close`, else keep following `stream`.
#[derive(Clone, Debug, PartialEq)]
pub struct Stream {
    pub session: String,
    pub stream: u64,
    pub attachment: u32,
    pub frames: Vec<String>,
    /// The `seq` of the last event in `frames`, or of the cursor when none was replayed: a
    /// host that follows the stream with `GateApi::poll` polls after it.
    pub follow_after: u64,
    pub close: bool,
    /// Requests to answer on the stream, in order (more than one only for a batch): run a
    /// tool call, or compute a batch's other answers, when its turn comes; the last one's
    /// response is the stream's terminal event (an empty one if it was cancelled).
    pub calls: Vec<PendingCall>,
    /// Requests of this session a batch's `notifications/cancelled` named.
    pub cancels: Vec<RequestId>,
    pub decision: Option<DecisionLog>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Plain(Plain),
    Stream(Stream),
    /// `202 Accepted`; the client cancelled the requests in `cancels` (of this session).
    Accepted {
        session: String,
        cancels: Vec<RequestId>,
    },
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
        }
    }
}

fn plain(status: u16, body: Option<String>) -> Reply {
    Reply::Plain(Plain { status, body, ..Plain::default() })
}

fn rpc_plain(status: u16, id: Option<&RequestId>, code: i64, message: &str) -> Plain {
    Plain { status, body: Some(jsonrpc::error(id, code, message)), ..Plain::default() }
}

/// `404`: the client must start over with `initialize`.
fn session_not_found() -> Plain {
    gate_error_plain(&GateError::UnknownSession, None)
}

fn unavailable(id: Option<&RequestId>, message: &str) -> Plain {
    Plain {
        retry_after: Some(RETRY_AFTER_SECONDS),
        ..rpc_plain(503, id, INTERNAL_ERROR, &format!("Service Unavailable: {message}"))
    }
}

fn rpc_error(status: u16, id: Option<&RequestId>, code: i64, message: &str) -> Reply {
    Reply::Plain(rpc_plain(status, id, code, message))
}

/// The HTTP answer for a gate error, from [`errors::TABLE`]. A store failure is `503`, never
/// `404`: a `404` tells the client its session is gone, and it would start over and run its
/// call again.
pub fn gate_error_reply(e: &GateError, id: Option<&RequestId>) -> Reply {
    Reply::Plain(gate_error_plain(e, id))
}

fn gate_error_plain(e: &GateError, id: Option<&RequestId>) -> Plain {
    let (status, code) = errors::http_answer(e);
    // An id the gate refused is not echoed; a session-level answer names no request.
    let id = match e {
        GateError::InvalidRequestId | GateError::UnknownSession => None,
        _ => id,
    };
    Plain {
        retry_after: (status == 503).then_some(RETRY_AFTER_SECONDS),
        ..rpc_plain(status, id, code, &errors::message(e))
    }
}

/// The response to a request the transport answers itself (all but a valid `tools/call`).
pub(crate) fn answer(id: &RequestId, method: &str, params: &Value) -> String {
    match method {
        "tools/call" => match ToolCall::from_params(params) {
            Ok(_) => jsonrpc::error(Some(id), INTERNAL_ERROR, "a tool call is run by the host"),
            Err(why) => jsonrpc::error(Some(id), INVALID_PARAMS, &why),
        },
        "tools/list" => jsonrpc::result(id, tools::list()),
        "ping" | "logging/setLevel" => jsonrpc::result(id, json!({})),
        other => jsonrpc::error(Some(id), METHOD_NOT_FOUND, &format!("Method not found: {other}")),
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
        // A stateless-revision client gets no GET stream (and no resumption); its other
        // requests get the unsupported-version answer below and fall back to `initialize`.
        if method == "GET" && req.header_str(VERSION_HEADER) == Some(protocol::STATELESS) {
            return Reply::Plain(Plain { status: 405, allow: Some("POST"), ..Plain::default() });
        }
        let version = match req.header(VERSION_HEADER) {
            None => protocol::ASSUMED,
            Some(v) => match std::str::from_utf8(v).ok().map(str::trim).and_then(protocol::supported) {
                Some(v) => v,
                None => {
                    let msg = format!(
                        "Bad Request: unsupported MCP-Protocol-Version; supported: {}",
                        protocol::SUPPORTED.join(", ")
                    );
                    return rpc_error(400, None, INVALID_REQUEST, &msg);
                }
            },
        };
        match method {
            "POST" => self.post(gate, req, version, mint_session_id),
            "GET" => self.get(gate, req, version),
            _ => self.delete(gate, req),
        }
    }

    fn guard_against_rebinding(&self, req: &HttpRequest) -> Option<Reply> {
        let hosts = &self.config.allowed_hosts;
        let host_ok = req.header_str("host").is_none_or(|h| hosts.allows(h));
        let origin_ok = req.header_str("origin").is_none_or(|o| hosts.allows_origin(o));
        (!host_ok || !origin_ok)
            .then(|| rpc_error(403, None, INVALID_REQUEST, "Forbidden: Host or Origin not allowed"))
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

    /// `406` unless the client accepts an SSE reply.
    fn require_sse(req: &HttpRequest, id: Option<&RequestId>) -> Option<Reply> {
        let message = "Not Acceptable: Accept must include text/event-stream";
        (!Self::accepts(req, "text/event-stream")).then(|| rpc_error(406, id, INVALID_REQUEST, message))
    }

    fn post(
        &self,
        gate: &mut (impl GateApi + ?Sized),
        req: &HttpRequest,
        version: &str,
        mint: impl FnOnce() -> Option<String>,
    ) -> Reply {
        let json_body = req
            .header_str("content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("application/json"));
        if !json_body {
            return rpc_error(
                415,
                None,
                INVALID_REQUEST,
                "Unsupported Media Type: Content-Type must be application/json",
            );
        }
        if version == protocol::BATCHES
            && let Some(batch) = jsonrpc::parse_batch(&req.body, self.config.max_batch)
        {
            return match batch {
                Ok(items) => self.batch(gate, req, version, items),
                Err(jsonrpc::ParseError::BatchTooLarge) => {
                    let max = self.config.max_batch;
                    rpc_error(
                        400,
                        None,
                        INVALID_REQUEST,
                        &format!("Invalid Request: a batch holds at most {max} messages"),
                    )
                }
                Err(e) => rpc_error(400, None, e.code(), e.message()),
            };
        }
        let message = match jsonrpc::parse(&req.body) {
            Ok(m) => m,
            Err(e) => return rpc_error(400, e.id(), e.code(), e.message()),
        };
        if let Message::Request { id, method, params } = &message
            && method == "initialize"
        {
            return self.initialize(gate, req, id, params, mint);
        }
        let session = match Self::session_id(req) {
            Ok(s) => s,
            Err(refused) => return Reply::Plain(refused),
        };
        let (id, method, params) = match message {
            Message::Request { id, method, params } => (id, method, params),
            Message::Notification { method, params } => {
                return match Self::known_session(gate, session) {
                    Ok(session) => Reply::Accepted {
                        session,
                        cancels: cancelled(&method, &params).into_iter().collect(),
                    },
                    Err(refused) => Reply::Plain(refused),
                };
            }
            Message::Response => {
                return match Self::known_session(gate, session) {
                    Ok(session) => Reply::Accepted { session, cancels: Vec::new() },
                    Err(refused) => Reply::Plain(refused),
                };
            }
        };
        if let Some(refused) = Self::require_sse(req, Some(&id)) {
            return refused;
        }

        let origin = Origin::Request(id.clone());
        let (opened, decision) = match req.header(LAST_EVENT_ID_HEADER) {
            Some(cursor) => match gate.reconnect(&session, cursor, &origin) {
                Ok(Decision::Fresh(f)) => {
                    let log = DecisionLog {
                        resumed: false,
                        reason: Some(f.reason),
                        replayed: 0,
                        stranded: f.stranded.clone(),
                    };
                    (f.opened, Some(log))
                }
                Ok(Decision::Resume(_)) => {
                    return rpc_error(500, Some(&id), INTERNAL_ERROR, "the gate resumed a POST");
                }
                Err(e) => return gate_error_reply(&e, Some(&id)),
            },
            None => match gate.open_stream(&session, &origin) {
                Ok(opened) => (opened, None),
                Err(e) => return gate_error_reply(&e, Some(&id)),
            },
        };
        let mut stream = self.new_stream(&session, &opened, version, decision);

        if method == "tools/call"
            && let Ok(call) = ToolCall::from_params(&params)
        {
            stream.calls.push(PendingCall::Tool { id, call });
            return Reply::Stream(stream);
        }
        let response = answer(&id, &method, &params);
        match gate.terminal(&session, opened.stream, &response) {
            Ok(event) => {
                stream.frames.push(sse::recorded(&event, &response));
                stream.follow_after = event.seq;
                stream.close = true;
                Reply::Stream(stream)
            }
            Err(e) => gate_error_reply(&e, Some(&id)),
        }
    }

    /// A 2025-03-26 batch (at most `max_batch` messages): notifications and responses alone
    /// are `202`; with requests, one stream answers each of them in order (the transport's
    /// answers first, tool calls last, each computed when its turn comes), the last response
    /// being the stream's terminal event. Every request claims its id in the batch's order
    /// before any runs: the first opens the stream, the others join it, and one whose id is
    /// already held (earlier in the batch, or in the session) gets its own `-32600` and runs
    /// nothing. `initialize` must come alone.
    fn batch(
        &self,
        gate: &mut (impl GateApi + ?Sized),
        req: &HttpRequest,
        version: &str,
        items: Vec<Result<Message, jsonrpc::ParseError>>,
    ) -> Reply {
        let initialize = |m: &Result<Message, _>| matches!(m, Ok(Message::Request { method, .. }) if method == "initialize");
        if items.iter().any(initialize) {
            return rpc_error(400, None, INVALID_REQUEST, "Invalid Request: initialize cannot be batched");
        }
        let session = match Self::session_id(req) {
            Ok(s) => s,
            Err(refused) => return Reply::Plain(refused),
        };
        let mut cancels = Vec::new();
        let mut requests = Vec::new();
        let mut malformed = Vec::new();
        for item in items {
            match item {
                Ok(Message::Request { id, method, params }) => requests.push((id, method, params)),
                Ok(Message::Notification { method, params }) => cancels.extend(cancelled(&method, &params)),
                Ok(Message::Response) => {}
                Err(e) => malformed.push(jsonrpc::error(e.id(), e.code(), e.message())),
            }
        }
        if requests.is_empty() {
            return match (Self::known_session(gate, session), malformed.is_empty()) {
                (Err(refused), _) => Reply::Plain(refused),
                (Ok(session), true) => Reply::Accepted { session, cancels },
                // Nothing to stream: the errors are the answer.
                (Ok(_), false) => Reply::Plain(Plain {
                    status: 400,
                    body: Some(format!("[{}]", malformed.join(","))),
                    ..Plain::default()
                }),
            };
        }
        if let Some(refused) = Self::require_sse(req, None) {
            return refused;
        }
        let (opened, claimed) = match Self::claim_all(gate, &session, &requests) {
            Ok(Some(claims)) => claims,
            // Every request's id was used before: nothing to run, nothing to stream.
            Ok(None) => {
                let refused: Vec<String> =
                    requests.iter().map(|(id, _, _)| duplicate(id)).chain(malformed).collect();
                return Reply::Plain(Plain {
                    status: 400,
                    body: Some(format!("[{}]", refused.join(","))),
                    ..Plain::default()
                });
            }
            Err((e, id)) => return gate_error_reply(&e, id.as_ref()),
        };
        let mut stream = self.new_stream(&session, &opened, version, None);
        let mut answers = Vec::new();
        let mut tools = Vec::new();
        for ((id, method, params), claimed) in requests.into_iter().zip(claimed) {
            let pending = match (claimed, method.as_str(), ToolCall::from_params(&params)) {
                (false, _, _) => PendingCall::Refused { error: duplicate(&id), id: Some(id) },
                (true, "tools/call", Ok(call)) => {
                    tools.push(PendingCall::Tool { id, call });
                    continue;
                }
                (true, _, _) => PendingCall::Answer { id, method, params },
            };
            answers.push(pending);
        }
        // A malformed element has no id to claim; its error goes out with the answers.
        answers.extend(malformed.into_iter().map(|error| PendingCall::Refused { id: None, error }));
        answers.extend(tools);
        stream.calls = answers;
        stream.cancels = cancels;
        Reply::Stream(stream)
    }

    /// Claims the ids of a batch's requests in order: the first that is free opens the
    /// stream, the later ones join it. Which were claimed; `None` when none was free. On an
    /// error, the stream opened for the batch is released again, so its retry is not refused.
    #[allow(clippy::type_complexity)]
    fn claim_all(
        gate: &mut (impl GateApi + ?Sized),
        session: &str,
        requests: &[(RequestId, String, Value)],
    ) -> Result<Option<(Opened, Vec<bool>)>, (GateError, Option<RequestId>)> {
        let mut claimed = Vec::with_capacity(requests.len());
        let mut opened = None;
        for (id, _, _) in requests {
            match gate.open_stream(session, &Origin::Request(id.clone())) {
                Ok(o) => {
                    opened = Some(o);
                    claimed.push(true);
                    break;
                }
                Err(GateError::DuplicateRequestId) => claimed.push(false),
                Err(e) => return Err((e, Some(id.clone()))),
            }
        }
        let Some(opened) = opened else { return Ok(None) };
        let rest: Vec<RequestId> = requests[claimed.len()..].iter().map(|(id, _, _)| id.clone()).collect();
        if !rest.is_empty() {
            match gate.join_stream(session, opened.stream, &rest) {
                Ok(joined) => claimed.extend(joined),
                Err(e) => {
                    let _ = gate.release_stream(session, opened.stream);
                    return Err((e, None));
                }
            }
        }
        Ok(Some((opened, claimed)))
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

    fn initialize(
        &self,
        gate: &mut (impl GateApi + ?Sized),
        req: &HttpRequest,
        id: &RequestId,
        params: &Value,
        mint: impl FnOnce() -> Option<String>,
    ) -> Reply {
        if !Self::accepts(req, "application/json") {
            return rpc_error(
                406,
                Some(id),
                INVALID_REQUEST,
                "Not Acceptable: Accept must include application/json",
            );
        }
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let Some(session) = mint() else {
            return Reply::Plain(unavailable(Some(id), "no randomness to mint a session id"));
        };
        let reclaimed = match gate.open_session(&session) {
            Ok(info) => info.reclaimed,
            Err(e) => return gate_error_reply(&e, Some(id)),
        };
        let result = json!({
            "protocolVersion": protocol::negotiate(requested),
            "capabilities": {"tools": {"listChanged": false}, "logging": {}},
            "serverInfo": {"name": self.config.name, "version": self.config.version},
        });
        Reply::Plain(Plain {
            status: 200,
            body: Some(jsonrpc::result(id, result)),
            session: Some(session),
            reclaimed,
            ..Plain::default()
        })
    }

    fn get(&self, gate: &mut (impl GateApi + ?Sized), req: &HttpRequest, version: &str) -> Reply {
        if let Some(refused) = Self::require_sse(req, None) {
            return refused;
        }
        let session = match Self::session_id(req) {
            Ok(s) => s,
            Err(refused) => return Reply::Plain(refused),
        };
        let Some(cursor) = req.header(LAST_EVENT_ID_HEADER) else {
            return match gate.open_stream(&session, &Origin::Standalone) {
                Ok(opened) => Reply::Stream(self.new_stream(&session, &opened, version, None)),
                Err(e) => gate_error_reply(&e, None),
            };
        };
        match gate.reconnect(&session, cursor, &Origin::Standalone) {
            Ok(Decision::Resume(r)) => {
                let mut frames: Vec<String> = r.events.iter().map(sse::frame).collect();
                let follow_after = r.events.last().map_or(r.cursor_seq, |e| e.seq);
                let decision = DecisionLog {
                    resumed: true,
                    reason: None,
                    replayed: frames.len(),
                    stranded: r.stranded.clone(),
                };
                // Its writer is gone: what it stored, then the error, instead of a wait.
                frames.extend(r.stranded.iter().map(stranded_frame));
                Reply::Stream(Stream {
                    session,
                    stream: r.stream,
                    attachment: r.attachment,
                    frames,
                    follow_after,
                    close: r.includes_terminal || !r.stranded.is_empty(),
                    calls: Vec::new(),
                    cancels: Vec::new(),
                    decision: Some(decision),
                })
            }
            Ok(Decision::Fresh(f)) => {
                let decision = DecisionLog {
                    resumed: false,
                    reason: Some(f.reason),
                    replayed: 0,
                    stranded: f.stranded.clone(),
                };
                let mut stream = self.new_stream(&session, &f.opened, version, Some(decision));
                // Never an empty stream that closes at once: the fresh stream stays open, and a
                // request whose result was lost gets an error instead of silence.
                for lost in &f.stranded {
                    let error = result_lost(lost);
                    if let Ok(event) = gate.emit(&session, f.opened.stream, &error) {
                        stream.frames.push(sse::recorded(&event, &error));
                        stream.follow_after = event.seq;
                    }
                }
                Reply::Stream(stream)
            }
            Err(e) => gate_error_reply(&e, None),
        }
    }

    fn delete(&self, gate: &mut (impl GateApi + ?Sized), req: &HttpRequest) -> Reply {
        let session = match Self::session_id(req) {
            Ok(s) => s,
            Err(refused) => return Reply::Plain(refused),
        };
        match gate.end_session(&session) {
            Ok(()) => plain(200, None),
            Err(e) => gate_error_reply(&e, None),
        }
    }
}

/// The `-32600` a request gets when its id was used before in the session.
fn duplicate(id: &RequestId) -> String {
    jsonrpc::error(Some(id), INVALID_REQUEST, &errors::message(&GateError::DuplicateRequestId))
}

/// The JSON-RPC error that answers a request whose result was lost (its stream evicted,
/// expired, or its writer gone): `-32001`.
fn result_lost(id: &RequestId) -> String {
    jsonrpc::error(Some(id), RESULT_LOST, "The result of this request was lost with its stream")
}

/// `result_lost` as an SSE frame of its own, without an id: written after a stream's events
/// when its writer is gone (a resume or a poll names the request `stranded`), then the
/// response ends.
pub fn stranded_frame(id: &RequestId) -> String {
    format!("data: {}\n\n", result_lost(id))
}
