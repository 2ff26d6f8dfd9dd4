//! A 2025-03-26 batch: every request claims its id in the batch's order before any runs, and
//! one stream answers them, each when its turn comes.

use super::*;

impl Server {
    /// A 2025-03-26 batch (at most `max_batch` messages): notifications and responses alone
    /// are `202`; with requests, one stream answers each of them in order (the transport's
    /// answers first, tool calls last, each computed when its turn comes), the last response
    /// being the stream's terminal event. Every request claims its id in the batch's order
    /// before any runs: the first opens the stream, the others join it, and one whose id is
    /// already held (earlier in the batch, or in the session) gets its own `-32600` and runs
    /// nothing. `initialize` must come alone.
    pub(super) fn batch(
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
    pub(super) fn claim_all(
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
}

/// The `-32600` a request gets when its id was used before in the session.
pub(crate) fn duplicate(id: &RequestId) -> String {
    jsonrpc::error(Some(id), INVALID_REQUEST, &errors::message(&GateError::DuplicateRequestId))
}
