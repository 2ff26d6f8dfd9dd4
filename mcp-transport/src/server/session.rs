//! A session's beginning and end: `initialize` mints the `Mcp-Session-Id` and opens the gate's
//! session; DELETE ends it.

use super::*;

impl Server {
    pub(super) fn initialize(
        &self,
        gate: &mut (impl GateApi + ?Sized),
        req: &HttpRequest,
        id: &RequestId,
        params: &Value,
        mint: impl FnOnce() -> Option<String>,
    ) -> Reply {
        if let Some(refused) = Self::require_json_reply(req, id) {
            return refused;
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

    pub(super) fn delete(&self, gate: &mut (impl GateApi + ?Sized), req: &HttpRequest) -> Reply {
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
