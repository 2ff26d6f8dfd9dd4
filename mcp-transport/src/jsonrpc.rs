//! JSON-RPC 2.0 as MCP uses it: ids are strings or integers, never null.

use resume_gate::RequestId;
use serde_json::{Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// Server-defined: the result of this request was lost with its stream and will never come.
pub const RESULT_LOST: i64 = -32001;

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
    /// A JSON array: batches were removed in 2025-06-18 and are not supported here.
    Batch,
    /// JSON, but not a JSON-RPC 2.0 message; says why.
    Invalid(&'static str),
}

impl ParseError {
    pub fn code(&self) -> i64 {
        match self {
            ParseError::NotJson => PARSE_ERROR,
            ParseError::Batch | ParseError::Invalid(_) => INVALID_REQUEST,
        }
    }

    pub fn message(&self) -> &'static str {
        match self {
            ParseError::NotJson => "Parse error: the body is not JSON",
            ParseError::Batch => "Invalid Request: JSON-RPC batches are not supported",
            ParseError::Invalid(why) => why,
        }
    }
}

pub fn parse(body: &[u8]) -> Result<Message, ParseError> {
    let value: Value = serde_json::from_slice(body).map_err(|_| ParseError::NotJson)?;
    let obj = match value {
        Value::Object(obj) => obj,
        Value::Array(_) => return Err(ParseError::Batch),
        _ => return Err(ParseError::Invalid("Invalid Request: not a JSON-RPC object")),
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(ParseError::Invalid("Invalid Request: jsonrpc must be \"2.0\""));
    }
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    if !matches!(params, Value::Null | Value::Object(_) | Value::Array(_)) {
        return Err(ParseError::Invalid("Invalid Request: params must be an object"));
    }
    let id = match obj.get("id") {
        None => None,
        Some(Value::String(s)) => Some(RequestId::Text(s.clone())),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(n) => Some(RequestId::Number(n)),
            None => return Err(ParseError::Invalid("Invalid Request: id must be a string or an integer")),
        },
        Some(_) => return Err(ParseError::Invalid("Invalid Request: id must be a string or an integer")),
    };
    match (obj.get("method"), id) {
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

pub fn id_from_value(v: &Value) -> Option<RequestId> {
    match v {
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
}
