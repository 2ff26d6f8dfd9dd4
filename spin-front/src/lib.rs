//! The Spin app's front: MCP Streamable HTTP on `wasi:http/incoming-handler@0.2` (spin-sdk
//! 5.2), with the gate plugged in as a component dependency (world `gate-kv`).
//!
//! Spin runs a fresh instance per request, so nothing here outlives a request: sessions,
//! streams, events and the `append` journal live in the key-value store, and the gate decides
//! every resumption exactly as in host-example: the same `mcp-transport` says which gate call a
//! request means (`Server`) and serves its SSE response (`Exchange`). What is particular to a
//! per-request host is *store-first* streaming: a tool records every event through the gate
//! whether or not its POST connection is still there, and a GET that resumes — on any instance
//! — replays what the store holds, then follows the store for a bounded time and ends with an
//! SSE `retry`, so the client polls again (SEP-1699). This file supplies what `Exchange` leaves
//! to a host: the connection, blocking waits, the tools' journal.
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

use mcp_transport::exchange::{Events, Exchange, Options, Timing};
use mcp_transport::gate::GateApi;
use mcp_transport::hosts::AllowedHosts;
use mcp_transport::journal::{AppendError, JournalPage};
use mcp_transport::reply::{Reply, Stream};
use mcp_transport::server::{Server, ServerConfig};
use mcp_transport::tools::ToolHost;
use spin_sdk::http::{IncomingRequest, ResponseOutparam};

use bindings::{Bounds, Imported, Journal};
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

#[spin_sdk::http_component]
fn handle(request: IncomingRequest, out: ResponseOutparam) {
    let req = match connection::read_request(&request) {
        Ok(req) => req,
        Err(plain) => return connection::reply_plain(out, plain),
    };
    let mut gate = Imported;
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
        // Never: this server does not offer tasks (`ServerConfig::tasks` is off).
        Reply::Task(request) => connection::reply_plain(out, mcp_transport::tasks::not_offered(&request.id)),
        Reply::Stream(stream) => {
            let conn = Connection::open(out, &stream);
            serve(gate, conn, stream, lease_ms);
        }
    }
}

/// Serves an SSE response through its `Exchange` to its end: its calls answered here, or the
/// stream followed in the store.
fn serve(mut gate: Imported, conn: Connection, stream: Stream, lease_ms: u64) {
    for request in &stream.cancels {
        let _ = gate.abort_request(&stream.session, request);
    }
    let timing = Timing { lease_ms, ..Timing::default() };
    // Every instance shares the store: a resume or a cancel may come from any other.
    let options = Options { timing, shared: true, events: Events::Elsewhere };
    let host = Host {
        gate: RefCell::new(gate),
        conn: RefCell::new(conn),
        exchange: RefCell::new(Exchange::new(stream, options, connection::now_ms())),
    };
    loop {
        host.transmit();
        if host.exchange.borrow().is_finished() {
            break;
        }
        let call = host.exchange.borrow_mut().poll_call(&mut *host.gate.borrow_mut(), connection::now_ms());
        if let Some(call) = call {
            let response = run_to_completion(call.respond(&host)).unwrap_or_default();
            host.exchange.borrow_mut().handle_response(&mut *host.gate.borrow_mut(), &response);
            continue;
        }
        let Some(at) = host.exchange.borrow().poll_timeout() else { break };
        // What is ready leaves before the wait.
        host.flush();
        connection::sleep_ms(at.saturating_sub(connection::now_ms()));
        host.exchange.borrow_mut().handle_timeout(&mut *host.gate.borrow_mut(), connection::now_ms());
    }
    let Host { gate, conn, exchange } = host;
    // A stream whose terminal was recorded needs no detach: the exchange knows.
    exchange.into_inner().handle_closed(&mut gate.into_inner());
    conn.into_inner().finish();
}

/// The tools' futures never wait on anything but `sleep`, which blocks here: one poll ends them.
fn run_to_completion<T>(future: impl Future<Output = T>) -> Option<T> {
    let mut future = pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => Some(value),
        Poll::Pending => None,
    }
}

/// This instance's side of one exchange: the gate, the connection, the exchange.
struct Host {
    gate: RefCell<Imported>,
    conn: RefCell<Connection>,
    exchange: RefCell<Exchange>,
}

impl Host {
    /// Writes what the exchange queued; a write that fails means the client went away.
    fn transmit(&self) {
        let mut exchange = self.exchange.borrow_mut();
        let mut conn = self.conn.borrow_mut();
        while let Some(frame) = exchange.poll_transmit() {
            if !conn.write(&frame) {
                exchange.handle_closed(&mut *self.gate.borrow_mut());
            }
        }
        if !exchange.is_connected() {
            conn.finish();
        }
    }

    /// Sends what is held (the head, the first time); a client that went away shows here.
    fn flush(&self) {
        self.check_connection(Connection::flush);
    }

    fn check_connection(&self, alive: fn(&mut Connection) -> bool) {
        let gone = {
            let mut conn = self.conn.borrow_mut();
            conn.is_open() && !alive(&mut conn)
        };
        if gone {
            // The stream waits for the client's GET resume (within max-detached).
            self.exchange.borrow_mut().handle_closed(&mut *self.gate.borrow_mut());
        }
    }
}

impl ToolHost for Host {
    fn sleep(&self, ms: u64) -> impl Future<Output = bool> + Send {
        self.flush();
        let end = connection::now_ms().saturating_add(ms);
        let mut going = self.exchange.borrow().call_running();
        while going && connection::now_ms() < end {
            let next = self.exchange.borrow().poll_timeout().map_or(end, |t| t.min(end));
            connection::sleep_ms(next.saturating_sub(connection::now_ms()));
            let now = connection::now_ms();
            if self.exchange.borrow().poll_timeout().is_some_and(|t| t <= now) {
                // A comment on the connection finds a client that went away while the call
                // waits; the exchange renews the lease.
                self.check_connection(Connection::keep_alive);
                self.exchange.borrow_mut().handle_timeout(&mut *self.gate.borrow_mut(), now);
                self.transmit();
            }
            going = self.exchange.borrow().call_running();
        }
        std::future::ready(going)
    }

    fn notify(&self, message: String) -> bool {
        let going = self.exchange.borrow_mut().handle_event(&mut *self.gate.borrow_mut(), &message);
        self.transmit();
        going
    }

    fn close_connection(&self) {
        self.exchange.borrow_mut().close_connection(&mut *self.gate.borrow_mut());
        self.conn.borrow_mut().finish();
    }

    fn append(&self, line: &str) -> Result<u64, AppendError> {
        let exchange = self.exchange.borrow();
        let request =
            exchange.current_request().ok_or_else(|| AppendError::Failed("no request runs".into()))?;
        Journal::open().map_err(AppendError::Failed)?.append(exchange.session(), request, line)
    }

    fn journal(&self, from: u64, limit: u64) -> Result<JournalPage, String> {
        Journal::open()?.page(from, limit)
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
