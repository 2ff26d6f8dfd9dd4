//! The Spin app's front: MCP Streamable HTTP on `wasi:http/incoming-handler@0.2` (spin-sdk
//! 5.2), with the gate plugged in as a component dependency (world `gate-kv`).
//!
//! Spin runs a fresh instance per request, so nothing here outlives a request: sessions,
//! streams, events and the `append` journal live in the key-value store, and the gate decides
//! every resumption exactly as in host-example (the same `mcp-transport` crate says which gate
//! call a request means). What is particular to a per-request host is *store-first*
//! streaming: a tool records every event through the gate whether or not its POST connection
//! is still there, and a GET that resumes — on any instance — replays what the store holds,
//! then follows the store by polling for a bounded time and ends with an SSE `retry`, so the
//! client polls again (SEP-1699).
//!
//! # Layout
//!
//! - this file: one request, from `IncomingRequest` to the written response;
//! - [`bindings`]: the imported gate as the transport's `GateApi`, and the KV journal;
//! - [`connection`]: reading the request body and writing the SSE response.
#![cfg(target_arch = "wasm32")]

mod bindings;
mod connection;

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use mcp_transport::calls::{self, Answered, CallHost};
use mcp_transport::gate::GateApi;
use mcp_transport::hosts::AllowedHosts;
use mcp_transport::server::{Reply, Server, ServerConfig, Stream};
use mcp_transport::sse;
use mcp_transport::tools::{self, ToolHost};
use resume_gate::{GateError, RequestId};
use spin_sdk::http::{IncomingRequest, ResponseOutparam};

use bindings::{Bounds, ImportedGate, Journal};
use connection::Connection;

/// The Spin variable naming the hosts this app answers to.
const ALLOWED_HOSTS_VARIABLE: &str = "allowed_hosts";
/// The Spin variable bounding the sessions the gate keeps (`max-sessions`).
const MAX_SESSIONS_VARIABLE: &str = "max_sessions";
/// The Spin variable setting how long a call's writer holds its stream (`lease-ms`).
const LEASE_MS_VARIABLE: &str = "lease_ms";
/// The Spin variable setting how long a stream may go without a connection (`max-detached-ms`).
const MAX_DETACHED_MS_VARIABLE: &str = "max_detached_ms";
/// The Spin variable bounding the messages of one 2025-03-26 batch.
const MAX_BATCH_VARIABLE: &str = "max_batch";
/// How long a GET follows an unfinished stream before it ends with a `retry` (SEP-1699).
const FOLLOW_MS: u64 = 10_000;
/// How often a following GET polls the store.
const POLL_MS: u64 = 25;
/// The `retry` a following GET ends with.
const RETRY_MS: u32 = 250;

#[spin_sdk::http_component]
fn handle(request: IncomingRequest, out: ResponseOutparam) {
    let req = match connection::read_request(&request) {
        Ok(req) => req,
        Err(plain) => return connection::reply_plain(out, plain),
    };
    let mut gate = ImportedGate;
    let lease_ms = configure_gate();
    let max_batch = number_variable(MAX_BATCH_VARIABLE)
        .filter(|n| (1..=resume_gate::MAX_BATCH_REQUESTS).contains(n))
        .unwrap_or(mcp_transport::server::DEFAULT_MAX_BATCH);
    let server = Server::new(ServerConfig {
        name: "resume-gate spin-front".into(),
        allowed_hosts: allowed_hosts(),
        max_batch,
        ..ServerConfig::default()
    });
    match server.handle(&mut gate, &req, mint_session_id) {
        Reply::Plain(plain) => {
            if let Some(victim) = &plain.reclaimed {
                eprintln!("resume-gate: reclaimed session {victim}, idle longest, to admit a new one");
            }
            connection::reply_plain(out, plain)
        }
        Reply::Accepted { session, cancels } => {
            for request in &cancels {
                // The call may be running on another instance: it sees the abort on its
                // next event and stops.
                let _ = gate.abort_request(&session, request);
            }
            connection::reply_accepted(out, &session)
        }
        Reply::Stream(stream) => {
            let conn = Connection::open(out, &stream.session);
            stream_reply(gate, conn, stream, lease_ms);
        }
    }
}

/// Writes a stream reply, then runs its tool calls or follows the stream, as it asks.
fn stream_reply(mut gate: ImportedGate, mut conn: Connection, stream: Stream, lease_ms: u64) {
    for request in &stream.cancels {
        let _ = gate.abort_request(&stream.session, request);
    }
    for frame in &stream.frames {
        conn.write(frame);
    }
    if !stream.calls.is_empty() {
        run_calls(gate, conn, &stream, lease_ms);
    } else if !stream.close {
        follow(&mut gate, &mut conn, &stream);
        let _ = gate.detach(&stream.session, stream.stream, stream.attachment);
    }
}

/// Follows a stream whose events another instance records: writes each new event once, until
/// the terminal, until the gate says stop, or for `FOLLOW_MS`, then asks the client to poll.
fn follow(gate: &mut ImportedGate, conn: &mut Connection, stream: &Stream) {
    let deadline = connection::now_ms().saturating_add(FOLLOW_MS);
    let mut after = stream.follow_after;
    while connection::now_ms() < deadline && conn.flush() {
        connection::sleep_ms(POLL_MS);
        let Ok(polled) = gate.poll(&stream.session, stream.stream, stream.attachment, after) else {
            break;
        };
        for event in &polled.events {
            conn.write(&sse::frame(event));
            after = event.seq;
            if event.terminal {
                return;
            }
        }
        if !polled.stranded.is_empty() {
            // The call's writer is gone with its instance: the client gets the errors now.
            for lost in &polled.stranded {
                conn.write(&mcp_transport::server::stranded_frame(lost));
            }
            return;
        }
        if polled.done {
            break;
        }
    }
    conn.write(&sse::retry_only(RETRY_MS));
}

/// Answers the stream's requests in order (several only for a batch; see
/// `mcp_transport::calls`) to the end, recording every event through the gate even after the
/// client's connection is gone (a resuming GET replays them from the store).
fn run_calls(gate: ImportedGate, conn: Connection, stream: &Stream, lease_ms: u64) {
    let host = StreamCalls {
        gate: RefCell::new(gate),
        conn: RefCell::new(conn),
        stream,
        lease_ms,
        batch: stream.calls.len() > 1,
        cancelled: RefCell::new(Vec::new()),
        current: RefCell::new(None),
    };
    let answered = run_to_completion(calls::answer(&stream.calls, &host)).unwrap_or(Answered::All);
    let mut gate = host.gate.into_inner();
    host.conn.into_inner().finish();
    // A recorded terminal already left the stream as a detach would (answered, its events
    // buffered): the call is spared the store round trips.
    if answered != Answered::All {
        let _ = gate.detach(&stream.session, stream.stream, stream.attachment);
    }
}

/// The tools' futures never wait on anything but `sleep`, which blocks here: one poll ends them.
fn run_to_completion<T>(future: impl Future<Output = T>) -> Option<T> {
    let mut future = pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => Some(value),
        Poll::Pending => None,
    }
}

/// The tools' and the call runner's view of this instance, for one stream's requests.
struct StreamCalls<'a> {
    gate: RefCell<ImportedGate>,
    conn: RefCell<Connection>,
    stream: &'a Stream,
    /// The writer's lease on the stream: a wait renews it every third of this.
    lease_ms: u64,
    /// More than one request: a batch, whose requests are cancelled one by one.
    batch: bool,
    /// What the gate last said was cancelled (cancels reach the store from other instances).
    cancelled: RefCell<Vec<RequestId>>,
    current: RefCell<Option<RequestId>>,
}

impl StreamCalls<'_> {
    /// Asks the gate about the stream: a resume on another connection took it over (this one
    /// ends), which requests were cancelled. `false` once the stream takes no more events.
    fn check(&self) -> bool {
        let s = self.stream;
        let status = self.gate.borrow_mut().check_stream(&s.session, s.stream, s.attachment);
        let Ok(status) = status else { return false };
        let mut conn = self.conn.borrow_mut();
        if conn.is_open() && !status.attached {
            // A resume on another connection follows the stream now: this one ends.
            conn.finish();
        }
        *self.cancelled.borrow_mut() = status.cancelled;
        status.running
    }

    fn current_cancelled(&self) -> bool {
        self.current.borrow().as_ref().is_some_and(|id| self.cancelled(id))
    }
}

impl ToolHost for StreamCalls<'_> {
    fn sleep(&self, ms: u64) -> impl Future<Output = bool> + Send {
        // What is ready leaves before the wait (with the response head, the first time).
        let s = self.stream;
        let detach_if_gone = |alive: fn(&mut Connection) -> bool| {
            let gone = {
                let mut conn = self.conn.borrow_mut();
                conn.is_open() && !alive(&mut conn)
            };
            if gone {
                // The client went away: the stream waits for its GET resume (max-detached).
                let _ = self.gate.borrow_mut().detach(&s.session, s.stream, s.attachment);
            }
        };
        detach_if_gone(Connection::flush);
        // A long wait is a heartbeat too: the lease outlives each slice of it, and a comment
        // on the connection finds a client that went away.
        let slice = (self.lease_ms / 3).max(1);
        let mut left = ms;
        let mut going = true;
        while left > 0 && going {
            let step = left.min(slice);
            connection::sleep_ms(step);
            left -= step;
            if left > 0 {
                detach_if_gone(Connection::keep_alive);
                going = self.gate.borrow_mut().renew_lease(&s.session, s.stream).is_ok()
                    && (!self.batch || self.check())
                    && !self.current_cancelled();
            }
        }
        std::future::ready(going)
    }

    fn notify(&self, message: String) -> bool {
        !self.current_cancelled() && self.record(&message, false).is_ok()
    }

    fn close_connection(&self) {
        let s = self.stream;
        self.conn.borrow_mut().finish();
        let _ = self.gate.borrow_mut().detach(&s.session, s.stream, s.attachment);
    }

    fn append(&self, line: &str) -> Result<u64, tools::AppendError> {
        let request = self.current.borrow().clone();
        let request = request.ok_or_else(|| tools::AppendError::Failed("no request runs".into()))?;
        Journal::open().map_err(tools::AppendError::Failed)?.append(&self.stream.session, &request, line)
    }

    fn journal(&self, from: u64, limit: u64) -> Result<tools::JournalPage, String> {
        Journal::open()?.page(from, limit)
    }
}

impl CallHost for StreamCalls<'_> {
    fn record(&self, data: &str, terminal: bool) -> Result<(), GateError> {
        let s = self.stream;
        // Asked before recording: the gate reports a taken-over stream, and a finished one.
        if self.conn.borrow().is_open() {
            self.check();
        }
        let mut gate = self.gate.borrow_mut();
        let event = if terminal {
            gate.terminal(&s.session, s.stream, data)
        } else {
            gate.emit(&s.session, s.stream, data)
        }?;
        let mut conn = self.conn.borrow_mut();
        if conn.is_open() && !conn.write(&sse::recorded(&event, data)) {
            // The client went away: the stream waits for its GET resume.
            let _ = gate.detach(&s.session, s.stream, s.attachment);
        }
        Ok(())
    }

    fn cancelled(&self, id: &RequestId) -> bool {
        self.cancelled.borrow().contains(id)
    }

    fn starting(&self, id: Option<&RequestId>) {
        *self.current.borrow_mut() = id.cloned();
        if self.batch {
            self.check();
        }
    }

    fn lost(&self, ids: &[RequestId]) {
        let mut conn = self.conn.borrow_mut();
        for id in ids {
            conn.write(&mcp_transport::server::stranded_frame(id));
        }
        conn.finish();
    }
}

/// Applies the `max_sessions`, `lease_ms` and `max_detached_ms` variables, when set, to this
/// request's gate instance; returns the lease in force (a running call renews it well within).
fn configure_gate() -> u64 {
    let bounds = Bounds {
        max_sessions: number_variable(MAX_SESSIONS_VARIABLE),
        lease_ms: number_variable(LEASE_MS_VARIABLE),
        max_detached_ms: number_variable(MAX_DETACHED_MS_VARIABLE),
    };
    bindings::configure(&bounds).unwrap_or_else(|e| {
        eprintln!("resume-gate: the max_sessions/lease_ms/max_detached_ms variables were refused: {e}");
        bindings::configure(&Bounds::default()).unwrap_or(DEFAULT_LEASE_MS)
    })
}

/// The gate's own default `lease-ms`, should configuring it fail.
const DEFAULT_LEASE_MS: u64 = 10_000;

/// A number variable; unset or empty: `None` (the default applies).
fn number_variable<T: std::str::FromStr>(name: &str) -> Option<T> {
    let value = spin_sdk::variables::get(name).ok().filter(|v| !v.trim().is_empty())?;
    let parsed = value.trim().parse().ok();
    if parsed.is_none() {
        eprintln!("resume-gate: the {name} variable is not a number: {value:?}");
    }
    parsed
}

/// The names this app answers to: the `allowed_hosts` variable (comma-separated `NAME` or
/// `NAME:PORT`; `spin.toml` defaults it to the localhost names), localhost if it is unset.
fn allowed_hosts() -> AllowedHosts {
    spin_sdk::variables::get(ALLOWED_HOSTS_VARIABLE)
        .map_or_else(|_| AllowedHosts::localhost(), |v| AllowedHosts::from_list(&v))
}

fn mint_session_id() -> Option<String> {
    mcp_transport::server::mint_session_id(|bytes| {
        let random = wasi::random::random::get_random_bytes(bytes.len() as u64);
        let ok = random.len() == bytes.len();
        if ok {
            bytes.copy_from_slice(&random);
        }
        ok
    })
}
