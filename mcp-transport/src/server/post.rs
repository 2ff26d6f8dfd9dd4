//! A POST of one JSON-RPC message: a request gets its stream (or, with a stale
//! `Last-Event-ID`, a fresh one: a POST never resumes), a notification or response `202`.

use super::*;
use crate::jsonrpc::INTERNAL_ERROR;

impl Server {
    pub(super) fn post(
        &self,
        gate: &mut (impl GateApi + ?Sized),
        req: &HttpRequest,
        version: &str,
        mint: impl FnOnce() -> Option<String>,
    ) -> Reply {
        if let Some(refused) = Self::require_json_body(req) {
            return refused;
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
        if req.header(VERSION_HEADER).is_none()
            && let Message::Request { id, params, .. } = &message
            && params.get("_meta").and_then(|m| m.get(super::stateless::VERSION_META)).is_some()
        {
            let msg = "Header mismatch: the MCP-Protocol-Version header is required";
            return rpc_error(400, Some(id), jsonrpc::HEADER_MISMATCH, msg);
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
        let response = crate::calls::own_answer(&id, &method, &params);
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
}
