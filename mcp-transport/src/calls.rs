//! The requests a stream answers: a tool call the host runs, or (in a 2025-03-26 batch) a
//! request the transport answers itself, computed only when its turn comes, or a batch element
//! refused already. `exchange` decides the order; a host only runs the tools.

use resume_gate::RequestId;
use serde_json::{Value, json};

use crate::jsonrpc::{self, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND};
use crate::tools::{self, ToolCall, ToolHost};

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
            Self::Tool { id, call } => {
                let mut outcome = tools::call(call, host).await;
                if let (true, Ok(result)) = (call.stateless, outcome.as_mut()) {
                    result["resultType"] = json!("complete");
                }
                tools::response(id, outcome)
            }
            Self::Answer { id, method, params } => own_answer(id, method, params),
            Self::Refused { error, .. } => error.clone(),
        }
    }
}

/// The response to a request the transport answers itself (all but a valid `tools/call`).
pub(crate) fn own_answer(id: &RequestId, method: &str, params: &Value) -> String {
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
