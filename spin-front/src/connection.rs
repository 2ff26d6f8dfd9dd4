//! `wasi:http` in and out: the request read whole (bounded), and a response body written
//! frame by frame, blocking, so a tool's events leave as they are recorded.

use mcp_transport::server::{HttpRequest, Plain};
use spin_sdk::http::{Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam};
use wasi::io::streams::{OutputStream, StreamError};

/// Largest request body accepted (`413` beyond), as in host-example.
pub const MAX_BODY_BYTES: usize = 4 << 20;
/// `blocking-write-and-flush` takes at most this many bytes per call.
const WRITE_CHUNK: usize = 4096;

pub fn now_ms() -> u64 {
    wasi::clocks::monotonic_clock::now() / 1_000_000
}

pub fn sleep_ms(ms: u64) {
    wasi::clocks::monotonic_clock::subscribe_duration(ms.saturating_mul(1_000_000)).block();
}

fn too_large() -> Plain {
    let body = mcp_transport::jsonrpc::error(
        None,
        mcp_transport::jsonrpc::INVALID_REQUEST,
        "Payload Too Large: the request body exceeds 4 MiB",
    );
    Plain { status: 413, body: Some(body), session: None, allow: None }
}

fn unreadable() -> Plain {
    let body = mcp_transport::jsonrpc::error(
        None,
        mcp_transport::jsonrpc::INVALID_REQUEST,
        "Bad Request: the request body could not be read",
    );
    Plain { status: 400, body: Some(body), session: None, allow: None }
}

/// The request as the transport reads it; `Err` is the reply for a body too large or broken.
pub fn read_request(request: &IncomingRequest) -> Result<HttpRequest, Plain> {
    let mut headers = request
        .headers()
        .entries()
        .into_iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value))
        .collect::<Vec<_>>();
    // `wasi:http` hands `Host` over as the request's authority, not as a header.
    if let Some(authority) = request.authority().filter(|_| !headers.iter().any(|(n, _)| n == "host")) {
        headers.push(("host".to_owned(), authority.into_bytes()));
    }
    let mut body = Vec::new();
    if let Ok(incoming) = request.consume() {
        let stream = incoming.stream().map_err(|()| unreadable())?;
        loop {
            match stream.blocking_read(WRITE_CHUNK as u64 * 16) {
                Ok(chunk) => {
                    if body.len() + chunk.len() > MAX_BODY_BYTES {
                        return Err(too_large());
                    }
                    body.extend_from_slice(&chunk);
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(_)) => return Err(unreadable()),
            }
        }
    }
    Ok(HttpRequest { method: request.method().to_string(), headers, body })
}

fn respond(out: ResponseOutparam, status: u16, headers: &[(&str, &str)], body: &[u8]) {
    let fields: Vec<(String, Vec<u8>)> =
        headers.iter().map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec())).collect();
    let Ok(fields) = Fields::from_list(&fields) else {
        return respond(out, 500, &[], b"");
    };
    let response = OutgoingResponse::new(fields);
    let _ = response.set_status_code(status);
    let Ok(outgoing) = response.body() else { return };
    out.set(response);
    let mut conn = Connection { body: Some(outgoing), stream: None };
    conn.write_bytes(body);
    conn.finish();
}

pub fn reply_plain(out: ResponseOutparam, p: Plain) {
    let mut headers = Vec::new();
    if p.body.is_some() {
        headers.push(("content-type", "application/json"));
    }
    if let Some(session) = &p.session {
        headers.push(("mcp-session-id", session.as_str()));
    }
    if let Some(allow) = p.allow {
        headers.push(("allow", allow));
    }
    respond(out, p.status, &headers, p.body.as_deref().unwrap_or("").as_bytes());
}

pub fn reply_accepted(out: ResponseOutparam, session: &str) {
    respond(out, 202, &[("mcp-session-id", session)], b"");
}

/// An SSE response being written. Once the client is gone (a write failed) or the body is
/// finished, writes are dropped: the events are in the store, for the client's resume.
pub struct Connection {
    body: Option<OutgoingBody>,
    stream: Option<OutputStream>,
}

impl Connection {
    pub fn open(out: ResponseOutparam, session: &str) -> Self {
        let headers = [
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
            ("mcp-session-id", session),
        ];
        let fields: Vec<(String, Vec<u8>)> =
            headers.iter().map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec())).collect();
        let fields = Fields::from_list(&fields).unwrap_or_else(|_| Fields::new());
        let response = OutgoingResponse::new(fields);
        let _ = response.set_status_code(200);
        let body = response.body().ok();
        out.set(response);
        Self { body, stream: None }
    }

    pub fn is_open(&self) -> bool {
        self.body.is_some()
    }

    /// Writes one frame; `false` if the client is gone.
    pub fn write(&mut self, frame: &str) -> bool {
        self.write_bytes(frame.as_bytes())
    }

    fn write_bytes(&mut self, mut bytes: &[u8]) -> bool {
        if self.stream.is_none() {
            self.stream = self.body.as_ref().and_then(|b| b.write().ok());
        }
        let Some(stream) = &self.stream else { return false };
        while !bytes.is_empty() {
            let (chunk, rest) = bytes.split_at(bytes.len().min(WRITE_CHUNK));
            if stream.blocking_write_and_flush(chunk).is_err() {
                self.stream = None;
                self.body = None;
                return false;
            }
            bytes = rest;
        }
        true
    }

    /// Ends the response (idempotent).
    pub fn finish(&mut self) {
        self.stream = None;
        if let Some(body) = self.body.take() {
            let _ = OutgoingBody::finish(body, None);
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.finish();
    }
}
