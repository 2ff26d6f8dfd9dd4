//! The MCP server: axum in front, the shared transport in the middle, the gate component
//! behind it.
//!
//! One lock guards the gate instance together with the table of live connections, so that
//! an event is recorded by the gate and handed to its connection in one step, and a resume
//! computes its replay and attaches its connection in one step: nothing emitted in between
//! can be lost or sent twice. Under the lock there is no network I/O: events go to a bounded
//! per-connection channel; a connection that cannot keep up is detached and resumes from the
//! gate's buffer.
//!
//! Writes are made for kept-alive connections: `TCP_NODELAY` is set on every accepted socket
//! (with Nagle's algorithm on, each small write after the first waits for the client's delayed
//! ACK, ~40 ms), a tool call is run inline until it first waits, so a result that is ready at
//! once is queued before the response head is written, and the body hands every frame already
//! queued to hyper as one chunk: head, priming event and an immediate result leave in one
//! segment.
//!
//! With `--store` the state is in a store other processes share ([`crate::store`]): a resume
//! may arrive here for a call another process runs, so such a GET follows the stream by polling
//! the gate for a bounded time and then asks the client to poll again (SEP-1699), as the Spin
//! app does; and before an event goes to a local connection the gate is asked whether a resume
//! elsewhere took the stream over.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use bytes::BytesMut;
use mcp_transport::calls::{self, CallHost};
use mcp_transport::gate::GateApi;
use mcp_transport::hosts::AllowedHosts;
use mcp_transport::server::{
    HttpRequest, MAX_BODY_BYTES, PendingCall, Plain, Reply, Server, ServerConfig, Stream, sse_headers,
};
use mcp_transport::sse;
use mcp_transport::tools::{self, ToolHost};
use resume_gate::{GateError, RequestId, StaleReason};
use tokio::sync::{Notify, mpsc};

use crate::GateHost;
use crate::store::{KvGateHost, KvJournal};

/// `--store`: how long a GET follows a stream another process writes before it ends with a
/// `retry`, how often it polls, and that `retry`.
const FOLLOW: std::time::Duration = std::time::Duration::from_secs(10);
const POLL: std::time::Duration = std::time::Duration::from_millis(25);
const RETRY_MS: u32 = 250;

/// Frames queued for one connection beyond its initial replay before it counts as too slow.
const CONNECTION_QUEUE: usize = 256;
/// Frames already queued are joined into one body chunk up to this size.
const COALESCE_BYTES: usize = 64 << 10;

type StreamKey = (String, u64);

struct Live {
    attachment: u32,
    tx: mpsc::Sender<Bytes>,
    /// Set once the stream's terminal event is queued on this connection: the gate then holds
    /// what a detach would leave (the stream answered, its events buffered), so the
    /// connection's end needs no call into it.
    answered: Arc<AtomicBool>,
}

/// What the lock guards.
struct Core {
    gate: Box<dyn GateApi + Send>,
    live: HashMap<StreamKey, Live>,
}

pub struct App {
    core: Mutex<Core>,
    /// The lease a running call holds its stream by; a wait renews it every third of it.
    lease_ms: u64,
    /// `max-total-bytes`, for `/metrics`.
    budget_bytes: u64,
    /// `/metrics` answers (`--metrics`); otherwise it is `404`.
    metrics: AtomicBool,
    requests: AtomicU64,
    server: Server,
    journal: Journal,
    /// The calls running here, by each request they answer: a `notifications/cancelled` for
    /// one of them stops that one.
    calls: Mutex<HashMap<(String, RequestId), Arc<Running>>>,
    /// The state is shared with other processes (`--store`).
    shared: bool,
}

/// The requests of one stream running here, and which of them the client cancelled.
struct Running {
    stream: u64,
    attachment: u32,
    /// More than one request: a batch, whose requests are cancelled one by one.
    batch: bool,
    cancelled: Mutex<Vec<RequestId>>,
    /// The request whose turn it is.
    current: Mutex<Option<RequestId>>,
    /// Wakes a waiting tool when its request is cancelled.
    wake: Notify,
}

impl Running {
    fn is_cancelled(&self, id: &RequestId) -> bool {
        self.cancelled.lock().unwrap_or_else(|p| p.into_inner()).contains(id)
    }

    fn cancel(&self, ids: impl IntoIterator<Item = RequestId>) {
        let mut cancelled = self.cancelled.lock().unwrap_or_else(|p| p.into_inner());
        for id in ids {
            if !cancelled.contains(&id) {
                cancelled.push(id);
            }
        }
        drop(cancelled);
        if self.current_cancelled() {
            self.wake.notify_waiters();
        }
    }

    /// Whether the request whose turn it is was cancelled.
    fn current_cancelled(&self) -> bool {
        let current = self.current.lock().unwrap_or_else(|p| p.into_inner()).clone();
        current.is_some_and(|id| self.is_cancelled(&id))
    }
}

impl App {
    /// The server over `gate`, answering the names `hosts` allows.
    pub fn new(gate: GateHost, journal: PathBuf, hosts: AllowedHosts) -> anyhow::Result<Arc<Self>> {
        let config = gate.config().clone();
        Self::with_gate(Box::new(gate), &config, Journal::open(journal)?, hosts)
    }

    /// The server over a gate whose state is in a store other processes share (`--store`);
    /// the journal is kept there too.
    pub fn over_store(gate: KvGateHost, hosts: AllowedHosts) -> anyhow::Result<Arc<Self>> {
        let config = gate.config().clone();
        let journal = Journal::Store(KvJournal::new(gate.kv()));
        let app = Self::with_gate(Box::new(gate), &config, journal, hosts)?;
        let mut app = Arc::try_unwrap(app).map_err(|_| anyhow::anyhow!("a new app is not shared"))?;
        app.shared = true;
        Ok(Arc::new(app))
    }

    /// The same server without the gate ([`crate::bypass::NoGate`]): events without ids,
    /// nothing buffered. For measuring what the gate costs.
    pub fn without_gate(journal: PathBuf, hosts: AllowedHosts) -> anyhow::Result<Arc<Self>> {
        let config = resume_gate::Config::default();
        Self::with_gate(Box::<crate::bypass::NoGate>::default(), &config, Journal::open(journal)?, hosts)
    }

    fn with_gate(
        gate: Box<dyn GateApi + Send>,
        config: &resume_gate::Config,
        journal: Journal,
        allowed_hosts: AllowedHosts,
    ) -> anyhow::Result<Arc<Self>> {
        Ok(Arc::new(Self {
            core: Mutex::new(Core { gate, live: HashMap::new() }),
            lease_ms: config.lease_ms,
            budget_bytes: config.max_total_bytes,
            metrics: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            server: Server::new(ServerConfig {
                name: "resume-gate host-example".into(),
                allowed_hosts,
                ..ServerConfig::default()
            }),
            journal,
            calls: Mutex::new(HashMap::new()),
            shared: false,
        }))
    }

    /// Takes at most `n` messages in one 2025-03-26 batch (`--max-batch`).
    pub fn with_max_batch(self: Arc<Self>, n: usize) -> anyhow::Result<Arc<Self>> {
        let mut app = Arc::try_unwrap(self).map_err(|_| anyhow::anyhow!("a new app is not shared"))?;
        app.server.config.max_batch = n;
        Ok(Arc::new(app))
    }

    /// Serves `/metrics` from now on (`--metrics`).
    pub fn enable_metrics(&self) {
        self.metrics.store(true, Ordering::Relaxed);
    }

    /// The gate's memory (its instance's linear memory), for tests and metrics.
    pub fn gate_memory_bytes(&self) -> Option<usize> {
        self.core().gate.memory_bytes()
    }

    fn core(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records an event and hands it to the stream's connection, if one is attached. With a
    /// shared store, asks first whether a resume or a cancel in another process happened
    /// (`check-stream`): a taken-over connection ends, cancelled requests go to `running`.
    fn send(&self, running: &Running, session: &str, data: &str, terminal: bool) -> Result<(), GateError> {
        let mut core = self.core();
        let stream = running.stream;
        let key = (session.to_owned(), stream);
        let live = core.live.get(&key).map(|l| l.attachment);
        if self.shared && (running.batch || live.is_some()) {
            // The connection asked about is the one this stream's events go to now (a resume
            // here may have replaced the call's own).
            let status = core.gate.check_stream(session, stream, live.unwrap_or(running.attachment))?;
            if live.is_some() && !status.attached {
                core.live.remove(&key);
            }
            running.cancel(status.cancelled);
        }
        let event = if terminal {
            core.gate.terminal(session, stream, data)
        } else {
            core.gate.emit(session, stream, data)
        }?;
        if let Some(live) = core.live.get(&key) {
            let attachment = live.attachment;
            if live.tx.try_send(Bytes::from(sse::recorded(&event, data))).is_err() {
                tracing::warn!(session, stream, "connection too slow; detached, it resumes from the buffer");
                core.live.remove(&key);
                let _ = core.gate.detach(session, stream, attachment);
            } else if terminal {
                live.answered.store(true, Ordering::Relaxed);
                core.live.remove(&key);
            }
        }
        Ok(())
    }

    /// A connection ended: detach it, unless a newer one took the stream over.
    fn connection_ended(&self, session: &str, stream: u64, attachment: u32) {
        let mut core = self.core();
        let key = (session.to_owned(), stream);
        if core.live.get(&key).is_some_and(|l| l.attachment == attachment) {
            core.live.remove(&key);
        }
        if let Err(e) = core.gate.detach(session, stream, attachment) {
            tracing::warn!(session, stream, error = %e, "detach failed");
        }
    }

    /// Ends a stream's connection without ending the stream (SEP-1699 polling).
    fn close_connection(&self, session: &str, stream: u64) {
        self.core().live.remove(&(session.to_owned(), stream));
    }

    /// `notifications/cancelled`: the gate ends the request (a whole stream, or one request of
    /// a batch); a call running here stops at its next wait or event.
    fn cancel(self: &Arc<Self>, session: &str, request: &RequestId) {
        let running = self.lock_calls().get(&(session.to_owned(), request.clone())).cloned();
        // Also for a call in another process (`--store`): it sees the abort at its next event.
        let _ = self.core().gate.abort_request(session, request);
        if let Some(running) = running {
            running.cancel([request.clone()]);
            if !running.batch {
                self.core().live.remove(&(session.to_owned(), running.stream));
            }
            tracing::info!(session, stream = running.stream, request = ?request, "cancelled");
        }
    }

    /// Whether a call of this stream runs in this process.
    fn runs_here(&self, session: &str, stream: u64) -> bool {
        self.lock_calls().iter().any(|((s, _), r)| s == session && r.stream == stream)
    }

    /// Ends a followed connection once what it owes is queued (its body ends when the queue
    /// drains), unless a newer connection took the stream.
    fn close_follow(&self, key: &StreamKey, attachment: u32) {
        let mut core = self.core();
        if core.live.get(key).is_some_and(|l| l.attachment == attachment) {
            core.live.remove(key);
        }
    }

    fn lock_calls(&self) -> MutexGuard<'_, HashMap<(String, RequestId), Arc<Running>>> {
        self.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Answers a stream's requests in order (several only for a batch; see
    /// `mcp_transport::calls`), whether or not a connection is attached. They run here until
    /// they first wait (a result that is ready at once goes out with the response head); the
    /// rest runs in a task. A `notifications/cancelled` for one of them stops that one.
    fn start_calls(self: &Arc<Self>, session: String, stream: &Stream) {
        let pending = stream.calls.clone();
        let running = Arc::new(Running {
            stream: stream.stream,
            attachment: stream.attachment,
            batch: pending.len() > 1,
            cancelled: Mutex::new(Vec::new()),
            current: Mutex::new(None),
            wake: Notify::new(),
        });
        let keys: Vec<_> =
            pending.iter().filter_map(PendingCall::id).map(|id| (session.clone(), id.clone())).collect();
        {
            let mut calls = self.lock_calls();
            for key in &keys {
                calls.insert(key.clone(), Arc::clone(&running));
            }
        }
        let app = Arc::clone(self);
        let mut call = Box::pin(async move {
            let host = StreamCalls { app: Arc::clone(&app), session: session.clone(), running };
            let answered = calls::answer(&pending, &host).await;
            if answered != calls::Answered::All {
                tracing::info!(session, stream = host.running.stream, ?answered, "answering stopped");
            }
            let mut calls = app.lock_calls();
            for key in &keys {
                calls.remove(key);
            }
        });
        if call.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_ready() {
            return;
        }
        tokio::spawn(call);
    }
}

/// The tools' and the call runner's view of this host, for one stream's requests.
struct StreamCalls {
    app: Arc<App>,
    session: String,
    running: Arc<Running>,
}

impl StreamCalls {
    /// Between two waits of a tool: renews the lease and, with a shared store, learns of
    /// cancels made in other processes. `false`: stop the call.
    fn heartbeat(&self) -> bool {
        let (session, stream) = (&self.session, self.running.stream);
        let mut core = self.app.core();
        if core.gate.renew_lease(session, stream).is_err() {
            return false;
        }
        if self.app.shared && self.running.batch {
            match core.gate.check_stream(session, stream, self.running.attachment) {
                Ok(status) => self.running.cancel(status.cancelled),
                Err(_) => return false,
            }
        }
        !self.running.current_cancelled()
    }
}

impl ToolHost for StreamCalls {
    async fn sleep(&self, ms: u64) -> bool {
        // A long wait is a heartbeat too: the lease outlives each slice of it.
        let slice = (self.app.lease_ms / 3).max(1);
        let mut left = ms;
        while left > 0 {
            let step = left.min(slice);
            let woken = self.running.wake.notified();
            if self.running.current_cancelled() {
                return false;
            }
            tokio::select! {
                () = tokio::time::sleep(std::time::Duration::from_millis(step)) => {}
                () = woken => return false,
            }
            left -= step;
            if left > 0 && !self.heartbeat() {
                return false;
            }
        }
        !self.running.current_cancelled()
    }

    fn notify(&self, message: String) -> bool {
        !self.running.current_cancelled()
            && self.record(&message, false).is_ok()
            && !self.running.current_cancelled()
    }

    fn close_connection(&self) {
        self.app.close_connection(&self.session, self.running.stream)
    }

    fn append(&self, line: &str) -> Result<u64, tools::AppendError> {
        let request = self.running.current.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let request = request.ok_or_else(|| tools::AppendError::Failed("no request runs".into()))?;
        self.app.journal.append(&self.session, &request, line)
    }

    fn journal(&self, from: u64, limit: u64) -> Result<tools::JournalPage, String> {
        self.app.journal.page(from, limit)
    }
}

impl CallHost for StreamCalls {
    fn record(&self, data: &str, terminal: bool) -> Result<(), GateError> {
        self.app.send(&self.running, &self.session, data, terminal)
    }

    fn cancelled(&self, id: &RequestId) -> bool {
        self.running.is_cancelled(id)
    }

    fn starting(&self, id: Option<&RequestId>) {
        *self.running.current.lock().unwrap_or_else(|p| p.into_inner()) = id.cloned();
    }

    fn lost(&self, ids: &[RequestId]) {
        let mut core = self.app.core();
        if let Some(live) = core.live.remove(&(self.session.clone(), self.running.stream)) {
            for id in ids {
                let _ = live.tx.try_send(Bytes::from(mcp_transport::server::stranded_frame(id)));
            }
        }
    }
}

/// The `append` tool's journal: in a file, or in the shared store (`--store`).
enum Journal {
    File(FileJournal),
    Store(KvJournal),
}

impl Journal {
    fn open(path: PathBuf) -> anyhow::Result<Self> {
        let lines = match std::fs::File::open(&path) {
            Ok(f) => std::io::BufReader::new(f).lines().count() as u64,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e.into()),
        };
        Ok(Self::File(FileJournal { path, lines: Mutex::new(lines) }))
    }

    fn append(&self, session: &str, request: &RequestId, line: &str) -> Result<u64, tools::AppendError> {
        match self {
            Self::File(f) => f.append(line),
            Self::Store(kv) => kv.append(session, request, line),
        }
    }

    fn page(&self, from: u64, limit: u64) -> Result<tools::JournalPage, String> {
        match self {
            Self::File(f) => f.page(from, limit),
            Self::Store(kv) => kv.page(from, limit),
        }
    }
}

/// One line per call, in a file.
struct FileJournal {
    path: PathBuf,
    lines: Mutex<u64>,
}

impl FileJournal {
    fn append(&self, line: &str) -> Result<u64, tools::AppendError> {
        let mut count = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| tools::AppendError::Failed(e.to_string()))?;
        if *count >= tools::MAX_JOURNAL_LINES {
            return Err(tools::AppendError::Full);
        }
        // One write of the whole line: a failed one may have written part of it.
        writeln!(f, "{line}").map_err(|e| tools::AppendError::Unknown(e.to_string()))?;
        *count += 1;
        Ok(*count)
    }

    fn page(&self, from: u64, limit: u64) -> Result<tools::JournalPage, String> {
        let count = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(tools::JournalPage::default()),
            Err(e) => return Err(e.to_string()),
        };
        let skip = usize::try_from(from).unwrap_or(usize::MAX);
        let take = usize::try_from(limit).unwrap_or(usize::MAX);
        let lines = std::io::BufReader::new(file).lines().skip(skip).take(take);
        let lines = lines.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
        Ok(tools::JournalPage { lines, total: *count })
    }
}

/// An SSE response body; when it is dropped (finished, or the client went away) the stream
/// is detached from this connection.
struct SseBody {
    rx: mpsc::Receiver<Bytes>,
    _detach_on_drop: Detach,
}

struct Detach {
    app: Arc<App>,
    session: String,
    stream: u64,
    attachment: u32,
    answered: Arc<AtomicBool>,
}

impl Drop for Detach {
    fn drop(&mut self) {
        if !self.answered.load(Ordering::Relaxed) {
            self.app.connection_ended(&self.session, self.stream, self.attachment);
        }
    }
}

impl futures_core::Stream for SseBody {
    type Item = Result<Bytes, Infallible>;

    /// The next frame, together with every frame already queued behind it (up to
    /// `COALESCE_BYTES`), so that what is ready leaves in one write.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(first) = std::task::ready!(self.rx.poll_recv(cx)) else {
            return Poll::Ready(None);
        };
        let mut chunk = BytesMut::new();
        let mut next = Some(first);
        while let Some(frame) = next.take() {
            chunk.extend_from_slice(&frame);
            if chunk.len() < COALESCE_BYTES {
                next = self.rx.try_recv().ok();
            }
        }
        Poll::Ready(Some(Ok(chunk.freeze())))
    }
}

fn log_decision(stream: &Stream) {
    if let Some(d) = &stream.decision {
        tracing::info!(
            session = %stream.session,
            stream = stream.stream,
            decision = if d.resumed { "resume" } else { "fresh" },
            reason = d.reason.map_or("-", StaleReason::as_str),
            replayed = d.replayed,
            stranded = ?d.stranded,
            "gate decision"
        );
    }
}

async fn handle(
    State(app): State<Arc<App>>,
    method: Method,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    app.requests.fetch_add(1, Ordering::Relaxed);
    let body = match body {
        Ok(body) => body,
        Err(rejected) if rejected.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return plain_response(&Plain::payload_too_large());
        }
        Err(_) => return plain_response(&Plain::unreadable_body()),
    };
    let req = HttpRequest {
        method: method.as_str().to_owned(),
        headers: headers.iter().map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec())).collect(),
        body: body.into(),
    };
    // Decide, and attach the connection, in one critical section.
    let (reply, body) = {
        let mut core = app.core();
        let reply = app.server.handle(&mut *core.gate, &req, mint_session_id);
        let body = match &reply {
            Reply::Stream(s) => Some(attach(&app, &mut core, s)),
            _ => None,
        };
        (reply, body)
    };
    match reply {
        Reply::Plain(p) => {
            if let Some(victim) = &p.reclaimed {
                tracing::info!(session = %victim, "reclaimed the session idle longest to admit a new one");
            }
            plain_response(&p)
        }
        Reply::Accepted { session, cancels } => {
            for request in &cancels {
                app.cancel(&session, request);
            }
            StatusCode::ACCEPTED.into_response()
        }
        Reply::Stream(stream) => {
            log_decision(&stream);
            for request in &stream.cancels {
                app.cancel(&stream.session, request);
            }
            if !stream.calls.is_empty() {
                app.start_calls(stream.session.clone(), &stream);
            } else if app.shared && !stream.close && !app.runs_here(&stream.session, stream.stream) {
                tokio::spawn(follow(
                    Arc::clone(&app),
                    stream.session.clone(),
                    stream.stream,
                    stream.attachment,
                    stream.follow_after,
                ));
            }
            let mut resp = Response::new(body.unwrap_or_else(Body::empty));
            put_headers(&mut resp, sse_headers(&stream.session));
            resp
        }
    }
}

/// `--store`: writes the events another process records on a stream to this connection, until
/// its terminal, until the gate says stop or the connection goes, or for `FOLLOW`; then asks
/// the client to poll again.
async fn follow(app: Arc<App>, session: String, stream: u64, attachment: u32, mut after: u64) {
    let key = (session.clone(), stream);
    let deadline = tokio::time::Instant::now() + FOLLOW;
    let mut last = None;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
        let (tx, polled) = {
            let mut core = app.core();
            let Some(live) = core.live.get(&key).filter(|l| l.attachment == attachment) else { return };
            let tx = live.tx.clone();
            (tx, core.gate.poll(&session, stream, attachment, after))
        };
        let Ok(polled) = polled else { break };
        for event in &polled.events {
            after = event.seq;
            if tx.send(Bytes::from(sse::frame(event))).await.is_err() {
                return;
            }
            if event.terminal {
                return app.close_follow(&key, attachment);
            }
        }
        if !polled.stranded.is_empty() {
            // The call's process is gone: the client gets the errors now.
            for lost in &polled.stranded {
                let _ = tx.send(Bytes::from(mcp_transport::server::stranded_frame(lost))).await;
            }
            return app.close_follow(&key, attachment);
        }
        if polled.done {
            break;
        }
        last = Some(tx);
    }
    if let Some(tx) = last.or_else(|| app.core().live.get(&key).map(|l| l.tx.clone())) {
        let _ = tx.send(Bytes::from(sse::retry_only(RETRY_MS))).await;
    }
    app.close_follow(&key, attachment);
}

fn plain_response(p: &Plain) -> Response {
    let mut resp = Response::new(Body::from(p.body.clone().unwrap_or_default()));
    *resp.status_mut() = StatusCode::from_u16(p.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    put_headers(&mut resp, p.headers().iter().map(|(n, v)| (*n, v.as_str())));
    resp
}

fn put_headers<'a>(resp: &mut Response, headers: impl IntoIterator<Item = (&'static str, &'a str)>) {
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            resp.headers_mut().insert(name, value);
        }
    }
}

/// Queues the reply's frames for this connection and, unless it closes after them, makes it
/// the stream's live connection (a previous one is dropped: take-over).
fn attach(app: &Arc<App>, core: &mut Core, s: &Stream) -> Body {
    let (tx, rx) = mpsc::channel(s.frames.len() + CONNECTION_QUEUE);
    for frame in &s.frames {
        let _ = tx.try_send(Bytes::from(frame.clone()));
    }
    let answered = Arc::new(AtomicBool::new(false));
    if !s.close {
        let live = Live { attachment: s.attachment, tx, answered: Arc::clone(&answered) };
        core.live.insert((s.session.clone(), s.stream), live);
    }
    let guard = Detach {
        app: Arc::clone(app),
        session: s.session.clone(),
        stream: s.stream,
        attachment: s.attachment,
        answered,
    };
    Body::from_stream(SseBody { rx, _detach_on_drop: guard })
}

/// `GET /metrics` (see [`crate::metrics`]); `404` unless enabled, `503` when the store cannot
/// answer.
async fn metrics(State(app): State<Arc<App>>) -> Response {
    if !app.metrics.load(Ordering::Relaxed) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let snapshot = {
        let mut core = app.core();
        let counters = match core.gate.counters() {
            Ok(c) => c,
            Err(e) => {
                return (StatusCode::SERVICE_UNAVAILABLE, format!("the gate's counters: {e}\n"))
                    .into_response();
            }
        };
        crate::metrics::Snapshot {
            counters,
            requests: app.requests.load(Ordering::Relaxed),
            live_streams: core.live.len(),
            memory_bytes: core.gate.memory_bytes(),
            budget_bytes: app.budget_bytes,
        }
    };
    ([(axum::http::header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], crate::metrics::render(&snapshot))
        .into_response()
}

fn mint_session_id() -> Option<String> {
    mcp_transport::server::mint_session_id(|bytes| getrandom::fill(bytes).is_ok())
}

pub fn router(app: Arc<App>) -> axum::Router {
    axum::Router::new()
        .route("/mcp", axum::routing::any(handle))
        .route("/metrics", axum::routing::get(metrics))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(app)
}

/// How accepted sockets are set up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tcp {
    /// `TCP_NODELAY`: every write leaves at once (the default).
    #[default]
    NoDelay,
    /// Nagle's algorithm left on: only for measuring what the server's own write coalescing
    /// achieves without `TCP_NODELAY`.
    Nagle,
}

/// Serves `/mcp` on `addr` until the process is stopped.
pub async fn serve(app: Arc<App>, addr: SocketAddr, tcp: Tcp) -> anyhow::Result<()> {
    serve_on(app, tokio::net::TcpListener::bind(addr).await?, tcp).await
}

/// Serves `/mcp` on a listener the caller bound (tests bind port 0).
pub async fn serve_on(app: Arc<App>, listener: tokio::net::TcpListener, tcp: Tcp) -> anyhow::Result<()> {
    tracing::info!("MCP server on http://{}/mcp", listener.local_addr()?);
    let listener = listener.tap_io(move |socket| {
        if let Err(e) = socket.set_nodelay(tcp == Tcp::NoDelay) {
            tracing::warn!("setting TCP_NODELAY failed: {e}");
        }
    });
    axum::serve(listener, router(app)).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_journal_is_bounded_and_pages() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path().join("journal.txt")).unwrap();
        let (s, id) = ("session", RequestId::Number(1));
        for i in 0..tools::MAX_JOURNAL_LINES {
            assert_eq!(journal.append(s, &id, &format!("line {i}")), Ok(i + 1));
        }
        assert_eq!(journal.append(s, &id, "one too many"), Err(tools::AppendError::Full));
        let page = journal.page(998, 100).unwrap();
        assert_eq!(
            page,
            tools::JournalPage { lines: vec!["line 998".into(), "line 999".into()], total: 1000 }
        );
        let reopened = Journal::open(dir.path().join("journal.txt")).unwrap();
        assert_eq!(reopened.append(s, &id, "still full after a restart"), Err(tools::AppendError::Full));
    }
}
