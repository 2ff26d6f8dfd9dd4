//! JSON-RPC 2.0 as MCP uses it: ids are strings or integers, never null.
//!
//! Ids and method names are bounded here, before anything stores or echoes them: an
//! oversized one gets an error that names the limit, not the value.

use resume_gate::{MAX_REQUEST_ID_LEN, RequestId};
use serde_json::{Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// Longest method name accepted; longer ones are `-32601` without being echoed.
pub const MAX_METHOD_LEN: usize = 128;

/// Server-defined: the result of this request was lost with its stream and will never come.
pub const RESULT_LOST: i64 = -32001;
/// 2026-07-28: the request's headers do not match its body, or one is missing.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request's protocol version is not one the server speaks.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    Request {
        id: RequestId,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// A response to a request of ours (we send none, but a client may answer anyway).
    Response,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Not JSON at all.
    NotJson,
    /// A JSON array from a client of a revision without batches (removed in 2025-06-18).
    Batch,
    /// JSON, but not a JSON-RPC 2.0 message; says why.
    Invalid(&'static str),
    /// A method name over [`MAX_METHOD_LEN`] bytes: no such method exists.
    MethodTooLong { id: Option<RequestId> },
    /// A batch with more messages than the server takes in one request.
    BatchTooLarge,
}

impl ParseError {
    pub fn code(&self) -> i64 {
        match self {
            ParseError::NotJson => PARSE_ERROR,
            ParseError::Batch | ParseError::Invalid(_) | ParseError::BatchTooLarge => INVALID_REQUEST,
            ParseError::MethodTooLong { .. } => METHOD_NOT_FOUND,
        }
    }

    /// The request's id, when it could be read and may be echoed.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            ParseError::MethodTooLong { id } => id.as_ref(),
            _ => None,
        }
    }

    pub fn message(&self) -> &'static str {
        match self {
            ParseError::NotJson => "Parse error: the body is not JSON",
            ParseError::Batch => "Invalid Request: JSON-RPC batches are not part of this protocol revision",
            ParseError::Invalid(why) => why,
            ParseError::MethodTooLong { .. } => "Method not found: method names are at most 128 bytes",
            ParseError::BatchTooLarge => "Invalid Request: too many messages in one batch",
        }
    }
}

pub fn parse(body: &[u8]) -> Result<Message, ParseError> {
    match serde_json::from_slice(body).map_err(|_| ParseError::NotJson)? {
        Value::Array(_) => Err(ParseError::Batch),
        value => parse_value(value),
    }
}

/// A body that is a JSON array: each element parsed on its own (2025-03-26 batches), once
/// the array is known to hold at most `max` elements (counted over the raw elements, so an
/// oversized batch costs no parsed values). `None` when the body is not an array; an empty
/// array is an invalid request.
pub fn parse_batch(body: &[u8], max: usize) -> Option<Result<Vec<Result<Message, ParseError>>, ParseError>> {
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[') {
        return None;
    }
    let Ok(raw) = serde_json::from_slice::<Vec<&serde_json::value::RawValue>>(body) else { return None };
    if raw.is_empty() {
        return Some(Err(ParseError::Invalid("Invalid Request: an empty batch")));
    }
    if raw.len() > max {
        return Some(Err(ParseError::BatchTooLarge));
    }
    Some(Ok(raw
        .into_iter()
        .map(|item| serde_json::from_str(item.get()).map_err(|_| ParseError::NotJson).and_then(parse_value))
        .collect()))
}

fn parse_value(value: Value) -> Result<Message, ParseError> {
    let obj = match value {
        Value::Object(obj) => obj,
        Value::Array(_) => return Err(ParseError::Invalid("Invalid Request: a batch inside a batch")),
        _ => return Err(ParseError::Invalid("Invalid Request: not a JSON-RPC object")),
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(ParseError::Invalid("Invalid Request: jsonrpc must be \"2.0\""));
    }
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    if !matches!(params, Value::Null | Value::Object(_) | Value::Array(_)) {
        return Err(ParseError::Invalid("Invalid Request: params must be an object"));
    }
    const NOT_AN_ID: ParseError = ParseError::Invalid("Invalid Request: id must be a string or an integer");
    let id = match obj.get("id") {
        None => None,
        Some(Value::String(s)) if s.len() > MAX_REQUEST_ID_LEN => {
            return Err(ParseError::Invalid("Invalid Request: a string id is at most 256 bytes"));
        }
        Some(v) => Some(id_from_value(v).ok_or(NOT_AN_ID)?),
    };
    match (obj.get("method"), id) {
        (Some(Value::String(method)), id) if method.len() > MAX_METHOD_LEN => {
            Err(ParseError::MethodTooLong { id })
        }
        (Some(Value::String(method)), Some(id)) => {
            Ok(Message::Request { id, method: method.clone(), params })
        }
        (Some(Value::String(method)), None) => Ok(Message::Notification { method: method.clone(), params }),
        (Some(_), _) => Err(ParseError::Invalid("Invalid Request: method must be a string")),
        (None, Some(_)) if obj.contains_key("result") || obj.contains_key("error") => Ok(Message::Response),
        (None, _) => Err(ParseError::Invalid("Invalid Request: no method")),
    }
}

pub fn id_value(id: &RequestId) -> Value {
    match id {
        RequestId::Number(n) => json!(n),
        RequestId::Text(s) => json!(s),
    }
}

/// A request id from JSON; `None` for anything else, a string over 256 bytes included.
pub fn id_from_value(v: &Value) -> Option<RequestId> {
    match v {
        Value::String(s) if s.len() > MAX_REQUEST_ID_LEN => None,
        Value::String(s) => Some(RequestId::Text(s.clone())),
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        _ => None,
    }
}

pub fn result(id: &RequestId, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id_value(id), "result": result}).to_string()
}

/// An error response; `id` is `None` when the request's id could not be read.
pub fn error(id: Option<&RequestId>, code: i64, message: &str) -> String {
    let id = id.map_or(Value::Null, id_value);
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// An error response with `data`.
pub fn error_with_data(id: Option<&RequestId>, code: i64, message: &str, data: Value) -> String {
    let id = id.map_or(Value::Null, id_value);
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": data}}).to_string()
}

/// The error that answers a request whose result was lost with its stream: `-32001`.
pub fn result_lost(id: &RequestId) -> String {
    error(Some(id), RESULT_LOST, "The result of this request was lost with its stream")
}

pub fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        let req = parse(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
        assert_eq!(
            req,
            Message::Request { id: RequestId::Number(7), method: "ping".into(), params: Value::Null }
        );
        let note = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(note, Message::Notification { .. }));
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap(), Message::Response);
    }

    #[test]
    fn bad_messages_get_the_json_rpc_error_they_deserve() {
        assert_eq!(parse(b"{not json").unwrap_err().code(), PARSE_ERROR);
        assert_eq!(parse(b"[]").unwrap_err(), ParseError::Batch);
        for bad in [
            &br#"{"id":1,"method":"ping"}"#[..],
            br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":3}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
            br#""hello""#,
        ] {
            assert_eq!(parse(bad).unwrap_err().code(), INVALID_REQUEST, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn oversized_ids_and_method_names_are_refused_without_being_echoed() {
        let id = "i".repeat(MAX_REQUEST_ID_LEN);
        let ok = format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping"}}"#);
        assert!(matches!(parse(ok.as_bytes()), Ok(Message::Request { .. })));
        let long = format!(r#"{{"jsonrpc":"2.0","id":"{id}x","method":"ping"}}"#);
        let e = parse(long.as_bytes()).unwrap_err();
        assert_eq!((e.code(), e.id()), (INVALID_REQUEST, None));
        assert!(!e.message().contains("iii"));
        assert_eq!(id_from_value(&json!(format!("{id}x"))), None);

        let method = "m".repeat(MAX_METHOD_LEN + 1);
        let long = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"{method}"}}"#);
        let e = parse(long.as_bytes()).unwrap_err();
        assert_eq!((e.code(), e.id()), (METHOD_NOT_FOUND, Some(&RequestId::Number(3))));
        assert!(!e.message().contains("mmm"));
        let note = format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#);
        assert_eq!(parse(note.as_bytes()).unwrap_err(), ParseError::MethodTooLong { id: None });
    }
}
