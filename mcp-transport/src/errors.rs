//! The one table from a gate error to the HTTP status and JSON-RPC code a host answers with.
//!
//! Every host and package follows it: the Rust hosts through [`gate_error_plain`], the Node and
//! Python packages through copies of [`TABLE`] that the tests compare with this one and with
//! the bracketed answers in `wit/gate.wit`'s `gate-error` docs. A store failure is `503`,
//! never `404`: a `404` tells the client its session is gone, and it would start over and run
//! its call again.

use resume_gate::{GateError, RequestId};

use crate::jsonrpc::{INTERNAL_ERROR, INVALID_REQUEST, RESULT_LOST};
use crate::reply::{Plain, Reply, rpc_plain};

/// `(WIT case, HTTP status, JSON-RPC code)` for every `gate-error` case, in WIT order. Every
/// `503` also carries `Retry-After`.
pub const TABLE: [(&str, u16, i64); 13] = [
    ("invalid-config", 500, INTERNAL_ERROR),
    ("invalid-session-id", 400, INVALID_REQUEST),
    ("unknown-session", 404, RESULT_LOST),
    ("unknown-stream", 500, INTERNAL_ERROR),
    ("stream-finished", 409, INTERNAL_ERROR),
    ("not-a-request-stream", 500, INTERNAL_ERROR),
    ("duplicate-request-id", 400, INVALID_REQUEST),
    ("invalid-request-id", 400, INVALID_REQUEST),
    ("batch-too-large", 400, INVALID_REQUEST),
    ("too-many-sessions", 503, INTERNAL_ERROR),
    ("over-budget", 503, INTERNAL_ERROR),
    ("too-many-streams", 503, INTERNAL_ERROR),
    ("store-failure", 503, INTERNAL_ERROR),
];

/// The WIT case name of an error.
pub fn wit_name(e: &GateError) -> &'static str {
    match e {
        GateError::InvalidConfig(_) => "invalid-config",
        GateError::InvalidSessionId => "invalid-session-id",
        GateError::UnknownSession => "unknown-session",
        GateError::UnknownStream => "unknown-stream",
        GateError::StreamFinished => "stream-finished",
        GateError::NotARequestStream => "not-a-request-stream",
        GateError::DuplicateRequestId => "duplicate-request-id",
        GateError::InvalidRequestId => "invalid-request-id",
        GateError::BatchTooLarge => "batch-too-large",
        GateError::TooManySessions => "too-many-sessions",
        GateError::OverBudget => "over-budget",
        GateError::TooManyStreams => "too-many-streams",
        GateError::Store(_) => "store-failure",
    }
}

/// The HTTP status and JSON-RPC code for `e`.
pub fn http_answer(e: &GateError) -> (u16, i64) {
    let name = wit_name(e);
    TABLE
        .iter()
        .find(|(n, _, _)| *n == name)
        .map_or((500, INTERNAL_ERROR), |(_, status, code)| (*status, *code))
}

/// The message that goes with it: what was wrong, in the protocol's terms, without echoing
/// anything the client sent.
pub fn message(e: &GateError) -> String {
    match e {
        GateError::UnknownSession => "Session not found".into(),
        GateError::InvalidSessionId => "Bad Request: invalid Mcp-Session-Id".into(),
        GateError::InvalidRequestId => "Invalid Request: a string id is at most 256 bytes".into(),
        GateError::DuplicateRequestId => {
            "Invalid Request: this request id was already used in this session".into()
        }
        GateError::BatchTooLarge => "Invalid Request: too many requests in one batch".into(),
        GateError::StreamFinished => "Conflict: the request's stream has ended".into(),
        GateError::TooManySessions
        | GateError::TooManyStreams
        | GateError::OverBudget
        | GateError::Store(_) => {
            format!("Service Unavailable: {e}")
        }
        _ => format!("Internal error: {e}"),
    }
}

/// The `Retry-After` of a `503`: the state store failed or a bound is reached, and a retry
/// soon may well succeed.
pub const RETRY_AFTER_SECONDS: u32 = 1;

/// `404`: the client must start over with `initialize`.
pub(crate) fn session_not_found() -> Plain {
    gate_error_plain(&GateError::UnknownSession, None)
}

pub fn unavailable(id: Option<&RequestId>, message: &str) -> Plain {
    Plain {
        retry_after: Some(RETRY_AFTER_SECONDS),
        ..rpc_plain(503, id, INTERNAL_ERROR, &format!("Service Unavailable: {message}"))
    }
}

/// The HTTP answer for a gate error, from [`errors::TABLE`]. A store failure is `503`, never
/// `404`: a `404` tells the client its session is gone, and it would start over and run its
/// call again.
pub fn gate_error_reply(e: &GateError, id: Option<&RequestId>) -> Reply {
    Reply::Plain(gate_error_plain(e, id))
}

pub(crate) fn gate_error_plain(e: &GateError, id: Option<&RequestId>) -> Plain {
    let (status, code) = http_answer(e);
    // An id the gate refused is not echoed; a session-level answer names no request.
    let id = match e {
        GateError::InvalidRequestId | GateError::UnknownSession => None,
        _ => id,
    };
    Plain {
        retry_after: (status == 503).then_some(RETRY_AFTER_SECONDS),
        ..rpc_plain(status, id, code, &message(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gate_error_has_one_row_in_wit_order() {
        let all = [
            GateError::InvalidConfig(String::new()),
            GateError::InvalidSessionId,
            GateError::UnknownSession,
            GateError::UnknownStream,
            GateError::StreamFinished,
            GateError::NotARequestStream,
            GateError::DuplicateRequestId,
            GateError::InvalidRequestId,
            GateError::BatchTooLarge,
            GateError::TooManySessions,
            GateError::OverBudget,
            GateError::TooManyStreams,
            GateError::Store(String::new()),
        ];
        let names: Vec<&str> = all.iter().map(wit_name).collect();
        let rows: Vec<&str> = TABLE.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(names, rows);
        assert_eq!(http_answer(&GateError::Store("down".into())), (503, INTERNAL_ERROR), "never 404");
    }
}
