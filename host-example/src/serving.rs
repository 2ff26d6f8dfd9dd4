//! Serving a stream through its `Exchange` (`mcp_transport::exchange`, which decides
//! everything): this file supplies the runtime — tokio tasks and timers — and moves the frames
//! the exchange gives to the connection that serves the stream now.
//!
//! A stream's calls run here until they first wait (so a result that is ready at once is
//! queued before the response head is written), then in a task. A resume that arrives here for
//! a stream whose calls run here takes the connection over: the frames go to the new one.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use mcp_transport::exchange::Exchange;
use mcp_transport::gate::GateApi;
use mcp_transport::journal::{AppendError, JournalPage};
use mcp_transport::tools::ToolHost;
use resume_gate::{Millis, RequestId};
use tokio::sync::{Notify, mpsc};

use crate::app::{App, StreamKey};

/// A stream served by this process: its exchange, and where its frames go.
pub struct Served {
    pub key: StreamKey,
    /// The requests it answers (for `notifications/cancelled`).
    pub requests: Vec<RequestId>,
    /// A 2025-era stream of a session; `false`: a 2026-07-28 one, keyed by chance.
    pub resumable: bool,
    exchange: Mutex<Exchange>,
    /// The connection serving the stream now; `None` once it ended or nothing more comes.
    sink: Mutex<Option<mpsc::Sender<Bytes>>>,
    /// Wakes a waiting tool when its request is cancelled.
    wake: Notify,
}

/// Milliseconds on this process's clock (the exchange's timers; the gate has its own).
pub fn now() -> Millis {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as Millis
}

impl Served {
    /// `exchange`, writing to `sink`.
    pub fn new(exchange: Exchange, requests: Vec<RequestId>, sink: mpsc::Sender<Bytes>) -> Arc<Self> {
        let key = (exchange.session().to_owned(), exchange.stream());
        let served = Self {
            key,
            requests,
            resumable: exchange.is_resumable(),
            exchange: Mutex::new(exchange),
            sink: Mutex::new(Some(sink)),
            wake: Notify::new(),
        };
        let served = Arc::new(served);
        served.flush(&mut served.exchange());
        served
    }

    fn exchange(&self) -> MutexGuard<'_, Exchange> {
        self.exchange.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn sink(&self) -> MutexGuard<'_, Option<mpsc::Sender<Bytes>>> {
        self.sink.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the exchange with the gate (locked in that order) and moves what it queued
    /// to the connection.
    fn step<T>(&self, app: &App, f: impl FnOnce(&mut Exchange, &mut dyn GateApi) -> T) -> T {
        let mut gate = app.gate(Some(&self.key.0));
        let mut exchange = self.exchange();
        let r = f(&mut exchange, &mut **gate);
        // Recorded and handed to the connection in one hold of the gate (see `http`).
        self.flush(&mut exchange);
        r
    }

    /// Moves the exchange's frames to the connection. One that cannot keep up (its queue is
    /// full) is dropped: the stream waits for its resume. Once the exchange is finished, the
    /// sender goes and the response ends.
    fn flush(&self, exchange: &mut Exchange) {
        let mut sink = self.sink();
        while let Some(frame) = exchange.poll_transmit() {
            let sent = sink.as_ref().is_some_and(|tx| tx.try_send(Bytes::from(frame)).is_ok());
            if !sent {
                tracing::warn!(session = %self.key.0, stream = self.key.1, "connection too slow; it resumes from the buffer");
                *sink = None;
            }
        }
        if exchange.is_finished() || !exchange.is_connected() {
            *sink = None;
        }
    }

    /// A resume here took the stream over: its frames go to `sink` now, under `attachment`.
    pub fn reattach(&self, sink: mpsc::Sender<Bytes>, attachment: u32) {
        let mut exchange = self.exchange();
        exchange.handle_reattached(attachment);
        *self.sink() = Some(sink);
    }

    /// The connection attached as `attachment` ended: unless another took the stream over,
    /// the exchange detaches it.
    pub fn connection_ended(&self, app: &App, attachment: u32) {
        self.step(app, |exchange, gate| {
            if exchange.attachment() == attachment && exchange.is_connected() {
                exchange.handle_closed(gate);
            }
        });
        // A stateless-era call is cancelled by its connection's end: its tool stops now.
        self.wake.notify_waiters();
    }

    /// The process stops before the stream's calls end: the exchange records their `-32001`
    /// and stops them; a waiting tool wakes.
    pub fn give_up(&self, app: &App) {
        self.step(app, |exchange, gate| exchange.handle_shutdown(gate));
        self.wake.notify_waiters();
    }

    /// `notifications/cancelled` for one of its requests: the exchange stops that call.
    pub fn cancel(&self, id: &RequestId) {
        self.exchange().handle_cancel(id);
        self.wake.notify_waiters();
    }
}

/// Answers the stream's requests, in the order the exchange gives them, to the end.
pub fn run_calls(app: Arc<App>, served: Arc<Served>) {
    app.serving(&served);
    let mut calls = Box::pin(async move {
        loop {
            let call = served.step(&app, |exchange, gate| exchange.poll_call(gate, now()));
            let Some(call) = call else { break };
            let tools = Tools { app: &app, served: &served };
            let response = call.respond(&tools).await;
            served.step(&app, |exchange, gate| exchange.handle_response(gate, &response));
        }
        app.served(&served);
        served.flush(&mut served.exchange());
    });
    if calls.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_ready() {
        return;
    }
    tokio::spawn(calls);
}

/// Follows a stream whose events another process records until it is finished (its
/// terminal, its time, the client gone): at once, then whenever the store wakes it, and at the
/// exchange's poll times (every one without wake-ups, a safety net with them).
pub async fn follow(app: Arc<App>, served: Arc<Served>) {
    let (session, stream) = (&served.key.0, served.key.1);
    let recorded = served.exchange().is_resumable();
    let wakeup = app.settings.wakeups.as_ref().filter(|_| recorded).map(|w| w.watch(session, stream));
    if wakeup.is_some() {
        // Whatever was recorded between the resume's replay and the subscription.
        served.step(&app, |exchange, gate| exchange.handle_wake(gate, now()));
    }
    loop {
        if served.sink().is_none() {
            break;
        }
        let Some(at) = served.exchange().poll_timeout() else { break };
        let woken = match &wakeup {
            Some(w) => tokio::select! {
                () = sleep_until(at) => false,
                () = w.woken() => true,
            },
            None => {
                sleep_until(at).await;
                false
            }
        };
        served.step(&app, |exchange, gate| {
            if woken { exchange.handle_wake(gate, now()) } else { exchange.handle_timeout(gate, now()) }
        });
    }
}

async fn sleep_until(at: Millis) {
    let wait = at.saturating_sub(now());
    if wait > 0 {
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
}

/// The tools' view of this host, for one served stream's calls.
struct Tools<'a> {
    app: &'a Arc<App>,
    served: &'a Arc<Served>,
}

impl ToolHost for Tools<'_> {
    fn sleep(&self, ms: u64) -> impl Future<Output = bool> + Send {
        let (app, served) = (Arc::clone(self.app), Arc::clone(self.served));
        async move {
            let end = now().saturating_add(ms);
            loop {
                let next = served.exchange().poll_timeout().map_or(end, |t| t.min(end));
                let woken = served.wake.notified();
                if !served.exchange().call_running() {
                    return false;
                }
                tokio::select! {
                    () = sleep_until(next) => {}
                    () = woken => {}
                }
                let t = now();
                let running = served.step(&app, |exchange, gate| {
                    if exchange.poll_timeout().is_some_and(|due| due <= t) {
                        exchange.handle_timeout(gate, t);
                    }
                    exchange.call_running()
                });
                if !running {
                    return false;
                }
                if t >= end {
                    return true;
                }
            }
        }
    }

    fn notify(&self, message: String) -> bool {
        self.served.step(self.app, |exchange, gate| exchange.handle_event(gate, &message))
    }

    fn close_connection(&self) {
        self.served.step(self.app, |exchange, gate| exchange.close_connection(gate));
    }

    fn append(&self, line: &str) -> Result<u64, AppendError> {
        let request = self.served.exchange().current_request().cloned();
        let request = request.ok_or_else(|| AppendError::Failed("no request runs".into()))?;
        self.app.journal.append(&self.served.key.0, &request, line)
    }

    fn journal(&self, from: u64, limit: u64) -> Result<JournalPage, String> {
        self.app.journal.page(from, limit)
    }
}
