//! The HTTP server: axum in front, the shared transport in the middle, the gate behind it.
//!
//! Each request becomes the transport's `HttpRequest`; its answer is written as it says: a
//! plain reply, `202`, or an SSE stream served by an `Exchange` (see `serving`). Sockets are
//! set up as `gate_host::net` says (`TCP_NODELAY`, so that a kept-alive client never waits for
//! a delayed ACK).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use gate_host::net::Tcp;
use mcp_transport::exchange::{Events, Exchange, Options, Timing};
use mcp_transport::http::{HttpRequest, MAX_BODY_BYTES};
use mcp_transport::reply::{Plain, Reply, Stream};
use resume_gate::StaleReason;
use tokio::sync::mpsc;

use crate::app::App;
use crate::connection::{QUEUE, SseBody};
use crate::serving::{self, Served, now};

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
    // The decision, and attaching its connection, in one hold of the gate: an event recorded
    // meanwhile is either in the replay or sent to the new connection, never both or neither.
    let mut gate = app.gate(req.header_str(mcp_transport::http::SESSION_HEADER));
    let reply = app.server.handle(&mut **gate, &req, mint_session_id);
    if let Reply::Stream(stream) = reply {
        if !stream.resumable && !app.admit_stateless() {
            drop(gate);
            let id = stream.calls.first().and_then(|c| c.id());
            let message = "as many 2026-07-28 calls as --max-stateless-calls are open";
            return plain_response(&mcp_transport::errors::unavailable(id, message));
        }
        let (session, cancels) = (stream.session.clone(), stream.cancels.clone());
        let (response, then) = stream_response(&app, stream);
        drop(gate);
        // A batch's `notifications/cancelled`.
        for request in &cancels {
            app.cancel(&session, request);
        }
        then.start(&app);
        return response;
    }
    drop(gate);
    match reply {
        Reply::Plain(p) => {
            let answered = p.session.as_deref().or(req.header_str(mcp_transport::http::SESSION_HEADER));
            if let Some(session) = answered.filter(|_| (200..300).contains(&p.status)) {
                app.active(session, None);
            }
            if let Some(victim) = &p.reclaimed {
                tracing::info!(session = %victim, "reclaimed the session idle longest to admit a new one");
            }
            plain_response(&p)
        }
        Reply::Accepted { session, cancels } => {
            app.active(&session, None);
            for request in &cancels {
                app.cancel(&session, request);
            }
            StatusCode::ACCEPTED.into_response()
        }
        Reply::Task(request) => plain_response(&crate::tasks::answer(&app, &request)),
        Reply::Stream(_) => unreachable!("answered above"),
    }
}

/// What an SSE response still starts once the gate is released.
enum Then {
    Nothing,
    RunCalls(Arc<Served>),
    Follow(Arc<Served>),
}

impl Then {
    fn start(self, app: &Arc<App>) {
        match self {
            Then::Nothing => {}
            Then::RunCalls(served) => serving::run_calls(Arc::clone(app), served),
            Then::Follow(served) => drop(tokio::spawn(serving::follow(Arc::clone(app), served))),
        }
    }
}

/// An SSE response, served by the stream's exchange: its calls run here, or a resume here
/// takes over the stream of calls that run here, or the stream is followed in the store (its
/// events recorded by another process), or held open.
fn stream_response(app: &Arc<App>, stream: Stream) -> (Response, Then) {
    log_decision(&stream);
    let headers: Vec<(&'static str, String)> =
        stream.headers().into_iter().map(|(n, v)| (n, v.to_owned())).collect();
    let (tx, rx) = mpsc::channel(stream.frames.len() + QUEUE);
    let key = (stream.session.clone(), stream.stream);
    let attachment = stream.attachment;
    let settings = &app.settings;
    let mut timing = Timing { lease_ms: settings.config.lease_ms, ..Timing::default() };
    if settings.wakeups.is_some() {
        timing.poll_ms = Timing::WOKEN_POLL_MS;
    }
    let running_here = app.served_here(&key);
    let events = if settings.shared && running_here.is_none() { Events::Elsewhere } else { Events::Here };
    let options = Options { timing, shared: settings.shared, events };
    let answers = !stream.calls.is_empty();
    let requests = stream.calls.iter().filter_map(|c| c.id().cloned()).collect();
    let take_over = !answers && !stream.close;
    let (served, then) = match running_here {
        Some(running) if take_over => {
            // The replay first, then the running calls' frames, on this connection.
            for frame in &stream.frames {
                let _ = tx.try_send(Bytes::from(frame.clone()));
            }
            running.reattach(tx, attachment);
            (running, Then::Nothing)
        }
        _ => {
            // Followed in the store, or (stateless) held open until its deadline.
            let follows = !answers && !stream.close && (events == Events::Elsewhere || !stream.resumable);
            let served = Served::new(Exchange::new(stream, options, now()), requests, tx);
            let then = match (answers, follows) {
                (true, _) => Then::RunCalls(Arc::clone(&served)),
                (false, true) => Then::Follow(Arc::clone(&served)),
                (false, false) => Then::Nothing,
            };
            (served, then)
        }
    };
    let body = SseBody::new(rx, Arc::clone(app), served, attachment);
    let mut resp = Response::new(Body::from_stream(body));
    put_headers(&mut resp, headers.iter().map(|(n, v)| (*n, v.as_str())));
    (resp, then)
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

/// `GET /metrics` (see [`crate::metrics`]); `404` unless enabled, `503` when the store cannot
/// answer.
async fn metrics(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if !app.metrics.load(Ordering::Relaxed) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let header = |name| headers.get(name).map(|v| v.to_str().unwrap_or("\u{0}"));
    if !app.settings.allowed_hosts.admits(header("host"), header("origin")) {
        return (StatusCode::FORBIDDEN, "Forbidden: Host or Origin not allowed\n").into_response();
    }
    let (counters, memory_bytes) = (app.counters(), app.gate_memory_bytes());
    let snapshot = crate::metrics::Snapshot {
        counters,
        requests: app.requests.load(Ordering::Relaxed),
        live_streams: app.attached.load(Ordering::Relaxed),
        memory_bytes,
        budget_bytes: app.settings.config.max_total_bytes,
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

/// Serves `/mcp` on `addr` until SIGTERM or SIGINT, then drains (see [`drain`]).
pub async fn serve(app: Arc<App>, addr: SocketAddr, drain_for: Duration) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    if let Some(every) = app.idle.as_ref().map(|i| Duration::from_millis((i.idle_ms() / 4).clamp(10, 30_000)))
    {
        let app = Arc::clone(&app);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                app.end_idle_sessions();
            }
        });
    }
    tokio::select! {
        served = serve_on(Arc::clone(&app), listener, Tcp::NoDelay) => served,
        _ = terminate.recv() => drain(&app, drain_for).await,
        _ = tokio::signal::ctrl_c() => drain(&app, drain_for).await,
    }
}

/// A deploy stops the process: the listener is closed already (no new connection is
/// accepted); the calls running here get up to `drain_for` to finish, and those still running
/// then are given up in the gate (their clients' reconnects, on any process, get `-32001` at
/// once instead of after the lease).
pub async fn drain(app: &Arc<App>, drain_for: Duration) -> anyhow::Result<()> {
    let running = app.running_calls();
    tracing::info!(
        running,
        drain_ms = drain_for.as_millis() as u64,
        "stopping: draining the calls running here"
    );
    let deadline = tokio::time::Instant::now() + drain_for;
    while app.running_calls() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let given_up = app.give_up_running_calls();
    tracing::info!(given_up, "stopped");
    Ok(())
}

/// Serves `/mcp` on a listener the caller bound (tests bind port 0, and measure `Tcp::Nagle`).
pub async fn serve_on(app: Arc<App>, listener: tokio::net::TcpListener, tcp: Tcp) -> anyhow::Result<()> {
    tracing::info!("MCP server on http://{}/mcp", listener.local_addr()?);
    let listener = listener.tap_io(move |socket| tcp.apply(socket));
    axum::serve(listener, router(app)).await?;
    Ok(())
}
