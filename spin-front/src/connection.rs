//! `wasi:http` in and out: the request read whole (bounded), and a response whose head goes
//! out together with what is ready, after which a tool's events leave as they are recorded.

use mcp_transport::http::{HttpRequest, MAX_BODY_BYTES};
use mcp_transport::reply::Plain;
use spin_sdk::http::{Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam};
use wasi::io::streams::{OutputStream, StreamError};

/// Bytes asked for per read of the request body.
const READ_CHUNK: u64 = 64 << 10;

pub fn now_ms() -> u64 {
    wasi::clocks::monotonic_clock::now() / 1_000_000
}

pub fn sleep_ms(ms: u64) {
    wasi::clocks::monotonic_clock::subscribe_duration(ms.saturating_mul(1_000_000)).block();
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
        let stream = incoming.stream().map_err(|()| Plain::unreadable_body())?;
        loop {
            match stream.blocking_read(READ_CHUNK) {
                Ok(chunk) => {
                    if body.len() + chunk.len() > MAX_BODY_BYTES {
                        return Err(Plain::payload_too_large());
                    }
                    body.extend_from_slice(&chunk);
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(_)) => return Err(Plain::unreadable_body()),
            }
        }
    }
    Ok(HttpRequest { method: request.method().to_string(), headers, body })
}

fn respond(out: ResponseOutparam, status: u16, headers: &[(&str, &str)], body: &[u8]) {
    let length = body.len().to_string();
    let mut headers = headers.to_vec();
    headers.push(("content-length", &length));
    let mut conn = Connection::new(out, status, &headers);
    conn.write_bytes(body);
    conn.finish();
}

pub fn reply_plain(out: ResponseOutparam, p: Plain) {
    let headers = p.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    respond(out, p.status, &headers, p.body.as_deref().unwrap_or("").as_bytes());
}

pub fn reply_accepted(out: ResponseOutparam, session: &str) {
    respond(out, 202, &[("mcp-session-id", session)], b"");
}

/// An HTTP response being written. Nothing leaves until the first [`Connection::flush`]:
/// then the head and everything written so far go out as one write, and after it each write
/// leaves at once. Spin owns the socket and may leave Nagle's algorithm on, which holds every
/// small write after the first until the client's delayed ACK (~40 ms): so a call whose result
/// is ready at once must be one write, and a running call flushes before it waits.
///
/// Once the client is gone (a write failed) or the body is finished, writes are dropped: the
/// events are in the store, for the client's resume.
pub struct Connection {
    /// The response and where it goes, until the head is sent.
    head: Option<(OutgoingResponse, ResponseOutparam)>,
    /// What was written before the head was sent.
    pending: Vec<u8>,
    body: Option<OutgoingBody>,
    stream: Option<OutputStream>,
}

impl Connection {
    /// An SSE response (`200`, `text/event-stream`) for `stream`.
    pub fn open(out: ResponseOutparam, stream: &mcp_transport::reply::Stream) -> Self {
        Self::new(out, 200, &stream.headers())
    }

    fn new(out: ResponseOutparam, status: u16, headers: &[(&str, &str)]) -> Self {
        let fields: Vec<(String, Vec<u8>)> =
            headers.iter().map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec())).collect();
        let fields = Fields::from_list(&fields).unwrap_or_else(|_| Fields::new());
        let response = OutgoingResponse::new(fields);
        let _ = response.set_status_code(status);
        let body = response.body().ok();
        let stream = body.as_ref().and_then(|b| b.write().ok());
        Self { head: Some((response, out)), pending: Vec::new(), body, stream }
    }

    pub fn is_open(&self) -> bool {
        self.body.is_some()
    }

    /// Writes one frame (held until the first flush); `false` if the client is gone.
    pub fn write(&mut self, frame: &str) -> bool {
        self.write_bytes(frame.as_bytes())
    }

    fn write_bytes(&mut self, bytes: &[u8]) -> bool {
        if self.head.is_some() {
            self.pending.extend_from_slice(bytes);
            return true;
        }
        self.send(bytes)
    }

    /// Sends the head and what is held, if not sent yet; `false` if the client is gone. Call it
    /// before anything that waits.
    pub fn flush(&mut self) -> bool {
        let Some((response, out)) = self.head.take() else {
            return self.is_open();
        };
        let pending = std::mem::take(&mut self.pending);
        // What the body takes before the head is set goes out with it; the rest follows.
        let permit = self.stream.as_ref().and_then(|s| s.check_write().ok()).unwrap_or(0);
        let (first, rest) =
            pending.split_at(pending.len().min(usize::try_from(permit).unwrap_or(usize::MAX)));
        if !first.is_empty() && self.stream.as_ref().is_none_or(|s| s.write(first).is_err()) {
            self.close();
        }
        out.set(response);
        rest.is_empty() || self.send(rest)
    }

    fn send(&mut self, bytes: &[u8]) -> bool {
        let sent = self.stream.as_ref().is_some_and(|s| write_all(s, bytes));
        if !sent {
            self.close();
        }
        sent
    }

    fn close(&mut self) {
        self.stream = None;
        self.body = None;
    }

    /// An SSE comment, which clients ignore: a client that went away shows here, while a call
    /// waits, instead of at the call's next event; `false` then.
    pub fn keep_alive(&mut self) -> bool {
        self.is_open() && self.flush() && self.send(b":\n\n")
    }

    /// Sends what is held and ends the response (idempotent).
    pub fn finish(&mut self) {
        self.flush();
        self.stream = None;
        if let Some(body) = self.body.take() {
            let _ = OutgoingBody::finish(body, None);
        }
    }
}

/// Writes `bytes` in as few writes as the stream allows, then flushes.
fn write_all(stream: &OutputStream, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        let permit = match stream.check_write() {
            Ok(0) => {
                stream.subscribe().block();
                continue;
            }
            Ok(n) => usize::try_from(n).unwrap_or(usize::MAX),
            Err(_) => return false,
        };
        let (now, rest) = bytes.split_at(bytes.len().min(permit));
        if stream.write(now).is_err() {
            return false;
        }
        bytes = rest;
    }
    stream.blocking_flush().is_ok()
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.finish();
    }
}
