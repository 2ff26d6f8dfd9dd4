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

use mcp_transport::gate::GateApi;
use mcp_transport::hosts::AllowedHosts;
use mcp_transport::jsonrpc;
use mcp_transport::server::{PendingCall, Reply, Server, ServerConfig, Stream};
use mcp_transport::sse;
use mcp_transport::tools::{self, ToolHost};
use spin_sdk::http::{IncomingRequest, ResponseOutparam};

use bindings::{ImportedGate, Journal};
use connection::Connection;

/// The Spin variable naming the hosts this app answers to.
const ALLOWED_HOSTS_VARIABLE: &str = "allowed_hosts";
/// The Spin variable bounding the sessions the gate keeps (`max-sessions`).
const MAX_SESSIONS_VARIABLE: &str = "max_sessions";
/// The Spin variable setting how long a call's writer holds its stream (`lease-ms`).
const LEASE_MS_VARIABLE: &str = "lease_ms";
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
    let server = Server::new(ServerConfig {
        name: "resume-gate spin-front".into(),
        allowed_hosts: allowed_hosts(),
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
        if let Some(lost) = &polled.stranded {
            // The call's writer is gone with its instance: the client gets the error now.
            conn.write(&mcp_transport::server::stranded_frame(lost));
            return;
        }
        if polled.done {
            break;
        }
    }
    conn.write(&sse::retry_only(RETRY_MS));
}

/// Runs the stream's `tools/call`s in order (several only for a batch) to the end, recording
/// every event through the gate even after the client's connection is gone (a resuming GET
/// replays them from the store); the last response is the stream's terminal event.
fn run_calls(gate: ImportedGate, conn: Connection, stream: &Stream, lease_ms: u64) {
    let host = CallHost { gate: RefCell::new(gate), conn: RefCell::new(conn), stream, lease_ms };
    let Some((last, earlier)) = stream.calls.split_last() else { return };
    for pending in earlier {
        let response = respond(pending, run_to_completion(tools::call(&pending.call, &host)));
        if !host.notify(response) {
            break;
        }
    }
    let response = respond(last, run_to_completion(tools::call(&last.call, &host)));
    // Asked before the terminal is recorded: `poll` reports a finished stream as done too.
    let taken_over = host.conn.borrow().is_open() && host.taken_over();
    let mut gate = host.gate.into_inner();
    let mut conn = host.conn.into_inner();
    let recorded = gate.terminal(&stream.session, stream.stream, &response);
    if let Ok(event) = &recorded
        && !taken_over
    {
        conn.write(&sse::recorded(event, &response));
    }
    conn.finish();
    // A recorded terminal already left the stream as a detach would (answered, its events
    // buffered): the call is spared the store round trips.
    if recorded.is_err() {
        let _ = gate.detach(&stream.session, stream.stream, stream.attachment);
    }
}

fn respond(pending: &PendingCall, outcome: Option<Result<serde_json::Value, (i64, String)>>) -> String {
    let unfinished = (jsonrpc::INTERNAL_ERROR, "the tool did not finish".to_owned());
    tools::response(&pending.request_id, outcome.unwrap_or(Err(unfinished)))
}

/// The tools' futures never wait on anything but `sleep`, which blocks here: one poll ends them.
fn run_to_completion<T>(future: impl Future<Output = T>) -> Option<T> {
    let mut future = pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => Some(value),
        Poll::Pending => None,
    }
}

/// The tools' view of this instance, for one call.
struct CallHost<'a> {
    gate: RefCell<ImportedGate>,
    conn: RefCell<Connection>,
    stream: &'a Stream,
    /// The writer's lease on the stream: a wait renews it every third of this.
    lease_ms: u64,
}

impl CallHost<'_> {
    /// Whether a resume attached another connection to the stream (or it ended): the gate's
    /// `poll` says `done` for an attachment that is no longer the stream's.
    fn taken_over(&self) -> bool {
        let s = self.stream;
        let polled = self.gate.borrow_mut().poll(&s.session, s.stream, s.attachment, u64::MAX);
        polled.is_ok_and(|p| p.done)
    }
}

impl ToolHost for CallHost<'_> {
    fn sleep(&self, ms: u64) -> impl Future<Output = ()> + Send {
        // What is ready leaves before the wait (with the response head, the first time).
        let gone = {
            let mut conn = self.conn.borrow_mut();
            conn.is_open() && !conn.flush()
        };
        if gone {
            let s = self.stream;
            let _ = self.gate.borrow_mut().detach(&s.session, s.stream, s.attachment);
        }
        // A long wait is a heartbeat too: the lease outlives each slice of it.
        let slice = (self.lease_ms / 3).max(1);
        let mut left = ms;
        while left > 0 {
            let step = left.min(slice);
            connection::sleep_ms(step);
            left -= step;
            if left > 0 {
                let s = self.stream;
                let _ = self.gate.borrow_mut().renew_lease(&s.session, s.stream);
            }
        }
        std::future::ready(())
    }

    fn notify(&self, message: String) -> bool {
        let s = self.stream;
        let emitted = self.gate.borrow_mut().emit(&s.session, s.stream, &message);
        match emitted {
            Ok(event) => {
                let mut conn = self.conn.borrow_mut();
                if conn.is_open() && self.taken_over() {
                    // A resume on another connection follows the stream now: this one ends.
                    conn.finish();
                } else if conn.is_open() && !conn.write(&sse::recorded(&event, &message)) {
                    // The client went away: the stream waits for its GET resume.
                    let _ = self.gate.borrow_mut().detach(&s.session, s.stream, s.attachment);
                }
                true
            }
            Err(_) => false,
        }
    }

    fn close_connection(&self) {
        let s = self.stream;
        self.conn.borrow_mut().finish();
        let _ = self.gate.borrow_mut().detach(&s.session, s.stream, s.attachment);
    }

    fn append(&self, line: &str) -> Result<u64, String> {
        Journal::open()?.append(line)
    }

    fn journal(&self, from: u64, limit: u64) -> Result<tools::JournalPage, String> {
        Journal::open()?.page(from, limit)
    }
}

/// Applies the `max_sessions` and `lease_ms` variables, when set, to this request's gate
/// instance; returns the lease in force (a running call renews it well within).
fn configure_gate() -> u64 {
    let max_sessions = number_variable(MAX_SESSIONS_VARIABLE);
    let lease_ms = number_variable(LEASE_MS_VARIABLE);
    bindings::configure(max_sessions, lease_ms).unwrap_or_else(|e| {
        eprintln!("resume-gate: the max_sessions/lease_ms variables were refused: {e}");
        bindings::configure(None, None).unwrap_or(DEFAULT_LEASE_MS)
    })
}

/// The gate's own default `lease-ms`, should configuring it fail.
const DEFAULT_LEASE_MS: u64 = 10_000;

fn number_variable<T: std::str::FromStr>(name: &str) -> Option<T> {
    let value = spin_sdk::variables::get(name).ok()?;
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
