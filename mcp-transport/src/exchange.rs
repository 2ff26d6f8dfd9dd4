//! Serving one SSE response, sans-IO, in the manner of quinn-proto's `Connection`: the host
//! tells an [`Exchange`] what happened (`handle_*`) and asks it what to do (`poll_*`). The
//! exchange owns what every host would otherwise write again: the order in which a stream's
//! requests are answered (one call, or a 2025-03-26 batch), following a stream whose events
//! another instance records, the lease heartbeats of a waiting call, the take-over and cancel
//! checks of a shared store, detaching when the connection ends, and the `-32001` of a call
//! whose state vanished. The host keeps the socket, the timer and the runtime; it never calls
//! the gate for a stream itself.
//!
//! # Driving one
//!
//! 1. [`Exchange::new`] with the transport's `Reply::Stream`, once the host wrote the head.
//! 2. In a loop:
//!    - write every frame [`Exchange::poll_transmit`] gives (writes fail: `handle_closed`);
//!    - [`Exchange::is_finished`]: end the response, and stop;
//!    - [`Exchange::poll_call`] gives a request: answer it — `PendingCall::respond` with a
//!      `ToolHost` whose `notify` is [`Exchange::handle_event`] and whose `sleep` waits in
//!      steps to [`Exchange::poll_timeout`], calling [`Exchange::handle_timeout`] at each and
//!      stopping the tool once [`Exchange::call_running`] is false — then hand the response to
//!      [`Exchange::handle_response`];
//!    - else wait until [`Exchange::poll_timeout`] (none: until something happens) and call
//!      [`Exchange::handle_timeout`].
//! 3. [`Exchange::handle_closed`] when the client goes away; the stream's calls go on
//!    (store-first: a resuming client gets their events), only nothing is written any more.
//! 4. [`Exchange::handle_shutdown`] when the host stops before the calls end (a drain ran
//!    out): their `-32001` is recorded for a resume elsewhere, and the calls stop.
//!
//! A stateless-era stream (`Stream::resumable` false) is served the same way, but the gate
//! records nothing: its events are written without ids, and the connection's end cancels its
//! calls (`call_running` turns false) instead of detaching. A stream held open without calls
//! (`subscriptions/listen`) ends at the follow time with its farewell response.
//!
//! A host whose process records a stream's events for another of its connections (a resume
//! that took a running call's stream over in the same process) moves the call's frames there
//! itself and tells the call's exchange [`Exchange::handle_reattached`].

use std::collections::VecDeque;

use resume_gate::{GateError, Millis, RequestId, Seq};

use crate::calls::PendingCall;
use crate::gate::GateApi;
use crate::jsonrpc;
use crate::reply::Stream;
use crate::sse;

/// How long and how often an exchange waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// The writer's lease (`lease-ms`): a waiting call renews it every third of this.
    pub lease_ms: u64,
    /// How often a follower polls the store for events; a host the store wakes
    /// ([`Exchange::handle_wake`]) polls only as a safety net ([`Timing::WOKEN_POLL_MS`]).
    pub poll_ms: u64,
    /// How long a follower follows before it ends with a `retry` (SEP-1699).
    pub follow_ms: u64,
    /// The `retry` a follower ends with.
    pub retry_ms: u32,
}

impl Timing {
    /// A woken follower's safety-net poll: twice in a default follow, in case a wake-up was
    /// lost between two subscriptions.
    pub const WOKEN_POLL_MS: u64 = 5_000;
    /// How often a waiting stateless-era call gives its host a turn to look at the
    /// connection: its end cancels the call, so a host that learns it only by writing (a
    /// comment) must write that often.
    pub const STATELESS_BEAT_MS: u64 = 200;
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            lease_ms: resume_gate::Config::DEFAULT_LEASE_MS,
            poll_ms: 25,
            follow_ms: 10_000,
            retry_ms: 250,
        }
    }
}

/// Where the events of a stream this exchange has no calls for come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Events {
    /// This process records them and writes them itself (a standalone stream, a resume of a
    /// call running here): the exchange holds the connection until it ends.
    Here,
    /// Another instance records them: the exchange polls the store (`poll-stream`).
    Elsewhere,
}

/// How an exchange serves its stream, besides the frames it starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    pub timing: Timing,
    /// The stream's state is shared with other instances: before writing, ask the gate
    /// whether a resume elsewhere took the stream over or a cancel came (`check-stream`).
    pub shared: bool,
    /// Where the events come from when the exchange answers no requests.
    pub events: Events,
}

/// One SSE response; see the module docs for the order of calls.
pub struct Exchange {
    session: String,
    stream: u64,
    /// The connection's attachment to the stream.
    attachment: u32,
    options: Options,
    outbox: VecDeque<String>,
    /// The connection still serves the stream: open, and not taken over.
    connected: bool,
    /// Nothing more will be written (the answer is written, the follow ended, the stream
    /// ended): the response ends once the outbox is drained.
    done: bool,
    /// The stream's terminal event was recorded: its connection's end needs no detach.
    answered: bool,
    calls: Option<Calls>,
    follow: Option<Follow>,
    /// The last event this exchange recorded: the next must come after it.
    recorded: Seq,
    /// The gate records the stream (session era); else nothing is recorded or resumable.
    resumable: bool,
    /// A stateless-era stream held open without calls, until its deadline or the client.
    hold: Option<Hold>,
}

struct Hold {
    deadline: Millis,
    farewell: Option<String>,
}

/// The requests the exchange answers, in order.
struct Calls {
    queue: VecDeque<PendingCall>,
    current: Option<Option<RequestId>>,
    /// Requests the client cancelled: no response is sent for them.
    cancelled: Vec<RequestId>,
    /// More than one request: a batch, whose requests are cancelled one by one.
    batch: bool,
    /// The current call's request was cancelled: its tool stops, it gets no response.
    stop_current: bool,
    /// The stream takes no more events (cancelled, given up, its state gone): no call runs.
    over: bool,
    /// When the running call renews its lease next.
    next_beat: Option<Millis>,
}

struct Follow {
    after: Seq,
    deadline: Millis,
    next_poll: Millis,
}

impl Exchange {
    /// Serves `stream` (the transport's answer to one request), starting at `now`.
    pub fn new(stream: Stream, options: Options, now: Millis) -> Self {
        let answers = !stream.calls.is_empty();
        let open = !answers && !stream.close;
        let follows = open && stream.resumable && options.events == Events::Elsewhere;
        let hold = (open && !stream.resumable).then(|| Hold {
            deadline: now.saturating_add(options.timing.follow_ms),
            farewell: stream.farewell,
        });
        let calls = answers.then(|| Calls {
            batch: stream.calls.len() > 1,
            queue: stream.calls.into(),
            current: None,
            cancelled: Vec::new(),
            stop_current: false,
            over: false,
            next_beat: None,
        });
        let follow = follows.then(|| Follow {
            after: stream.follow_after,
            deadline: now.saturating_add(options.timing.follow_ms),
            next_poll: now.saturating_add(options.timing.poll_ms),
        });
        Self {
            session: stream.session,
            stream: stream.stream,
            attachment: stream.attachment,
            options,
            outbox: stream.frames.into(),
            connected: true,
            done: stream.close,
            answered: stream.close,
            calls,
            follow,
            recorded: 0,
            resumable: stream.resumable,
            hold,
        }
    }

    pub fn session(&self) -> &str {
        &self.session
    }

    pub fn stream(&self) -> u64 {
        self.stream
    }

    /// The connection's attachment to the stream (what a take-over replaces).
    pub fn attachment(&self) -> u32 {
        self.attachment
    }

    /// The next frame to write to the connection.
    pub fn poll_transmit(&mut self) -> Option<String> {
        self.outbox.pop_front()
    }

    /// The response ends: everything was written, or there is no one to write to.
    pub fn is_finished(&self) -> bool {
        self.outbox.is_empty() && (self.done || !self.connected) && self.calls.is_none()
    }

    /// Whether the connection still serves the stream (open, not taken over).
    pub fn is_connected(&self) -> bool {
        self.connected
    }

    /// When [`Exchange::handle_timeout`] is due next: a waiting call's heartbeat, or a
    /// follower's poll. `None`: nothing is due until something happens.
    pub fn poll_timeout(&self) -> Option<Millis> {
        match (&self.calls, &self.follow, &self.hold) {
            (Some(calls), _, _) => calls.next_beat,
            (None, Some(follow), _) if !self.done && self.connected => {
                Some(follow.next_poll.min(follow.deadline))
            }
            (None, None, Some(hold)) if self.connected => Some(hold.deadline),
            _ => None,
        }
    }

    /// The next request to answer, until every one is answered (then `None`, and the calls
    /// are over). A request the client cancelled is skipped; if it was the last, an empty
    /// terminal event ends the stream (a client ignores an event without data).
    pub fn poll_call(&mut self, gate: &mut (impl GateApi + ?Sized), now: Millis) -> Option<PendingCall> {
        let beat = now.saturating_add(self.beat_every());
        loop {
            let calls = self.calls.as_mut()?;
            if calls.current.is_some() {
                return None;
            }
            let next = match calls.queue.pop_front() {
                Some(next) if !calls.over => next,
                _ => {
                    self.calls = None;
                    self.done = true;
                    return None;
                }
            };
            let (last, batch) = (calls.queue.is_empty(), calls.batch);
            if next.id().is_some_and(|id| calls.cancelled.contains(id)) {
                if last {
                    self.record(gate, "", true);
                }
                continue;
            }
            calls.current = Some(next.id().cloned());
            calls.stop_current = false;
            calls.next_beat = Some(beat);
            if batch && self.options.shared {
                self.check(gate);
            }
            return Some(next);
        }
    }

    /// The request of the call answering now (`None` between calls, or for a malformed batch
    /// element): what a tool that records per request (the journal) records it under.
    pub fn current_request(&self) -> Option<&RequestId> {
        self.calls.as_ref()?.current.as_ref()?.as_ref()
    }

    /// Whether the call answering now should go on; `false`: its tool stops (the client
    /// cancelled it, the gate gave it up, its stream's state is gone).
    pub fn call_running(&self) -> bool {
        self.calls.as_ref().is_some_and(|c| c.current.is_some() && !c.stop_current && !c.over)
    }

    /// A message the running call's tool sends (a notification): recorded, and written to the
    /// connection while it serves the stream. `false`: the tool stops.
    pub fn handle_event(&mut self, gate: &mut (impl GateApi + ?Sized), data: &str) -> bool {
        if !self.call_running() {
            return false;
        }
        self.record(gate, data, false) && self.call_running()
    }

    /// The running call's response: recorded (the stream's terminal event if it was the last
    /// request) and written; nothing if the request was cancelled meanwhile.
    pub fn handle_response(&mut self, gate: &mut (impl GateApi + ?Sized), data: &str) {
        let Some(calls) = self.calls.as_mut() else { return };
        calls.next_beat = None;
        if !calls.over {
            let last = calls.queue.is_empty();
            let current = calls.current.clone().flatten();
            let cancelled = current.is_some_and(|id| calls.cancelled.contains(&id));
            match (cancelled, last) {
                (false, _) => {
                    self.record(gate, data, last);
                }
                (true, true) => {
                    self.record(gate, "", true);
                }
                (true, false) => {}
            }
        }
        if let Some(calls) = self.calls.as_mut() {
            calls.current = None;
        }
    }

    /// The client cancelled request `id` (`notifications/cancelled` reached this host): the
    /// call answering it stops, and it gets no response. The gate learns it from the host's
    /// `abort-request`, which the transport's answer to the notification asks for.
    pub fn handle_cancel(&mut self, id: &RequestId) {
        if let Some(calls) = self.calls.as_mut() {
            calls.cancel(std::slice::from_ref(id));
        }
    }

    /// The host is stopping (a drain ran out): every request not answered yet gets `-32001`,
    /// recorded — the last one as the stream's terminal event — so that a resume on any
    /// process replays it at once instead of waiting for the lease; the calls stop.
    pub fn handle_shutdown(&mut self, gate: &mut (impl GateApi + ?Sized)) {
        let Some(calls) = self.calls.as_mut() else { return };
        if calls.over {
            return;
        }
        let current = calls.current.take().flatten();
        let unanswered: Vec<RequestId> = current
            .into_iter()
            .chain(calls.queue.iter().filter_map(PendingCall::id).cloned())
            .filter(|id| !calls.cancelled.contains(id))
            .collect();
        calls.queue.clear();
        calls.next_beat = None;
        if unanswered.is_empty() {
            self.record(gate, "", true);
        }
        for (i, id) in unanswered.iter().enumerate() {
            if !self.record(gate, &jsonrpc::result_lost(id), i + 1 == unanswered.len()) {
                break;
            }
        }
        if let Some(calls) = self.calls.as_mut() {
            calls.over = true;
        }
    }

    /// A heartbeat or a poll is due (see [`Exchange::poll_timeout`]).
    pub fn handle_timeout(&mut self, gate: &mut (impl GateApi + ?Sized), now: Millis) {
        let beat = now.saturating_add(self.beat_every());
        if let Some(calls) = self.calls.as_mut()
            && calls.next_beat.is_some_and(|t| t <= now)
        {
            calls.next_beat = Some(beat);
            self.heartbeat(gate);
        } else if self.follow.as_ref().is_some_and(|f| f.next_poll.min(f.deadline) <= now) {
            self.follow_step(gate, now);
        } else if let Some(hold) = self.hold.take_if(|h| h.deadline <= now) {
            self.done = true;
            self.outbox.extend(hold.farewell.as_deref().map(sse::unnamed));
        }
    }

    /// The store says the followed stream changed (a host subscribed to its wake-ups): the
    /// follower polls now instead of at its next poll.
    pub fn handle_wake(&mut self, gate: &mut (impl GateApi + ?Sized), now: Millis) {
        if self.follow.is_some() && !self.done && self.connected {
            self.follow_step(gate, now);
        }
    }

    /// The connection ended (the client went away, or the host closed it): nothing more is
    /// written; the stream is detached unless its terminal was recorded (the gate then holds
    /// what a detach would leave) or another connection took it over. Its calls go on.
    pub fn handle_closed(&mut self, gate: &mut (impl GateApi + ?Sized)) {
        if !self.resumable {
            // The stateless era's cancellation: nobody will ever read what the calls send.
            self.hold = None;
            self.done = true;
            if let Some(calls) = self.calls.as_mut() {
                calls.over = true;
                calls.queue.clear();
            }
        } else if self.connected && !self.answered {
            let _ = gate.detach(&self.session, self.stream, self.attachment);
        }
        self.connected = false;
        self.outbox.clear();
    }

    /// A resume on another connection of this host took the stream over: this exchange's
    /// frames go there now (the host moves them), under that connection's attachment.
    pub fn handle_reattached(&mut self, attachment: u32) {
        self.attachment = attachment;
        self.connected = true;
    }

    /// The connection ends without ending the stream (SEP-1699 polling: the client resumes
    /// with GET); the calls go on. A stateless-era stream, which nothing resumes, stays open:
    /// closing it would cancel its calls.
    pub fn close_connection(&mut self, gate: &mut (impl GateApi + ?Sized)) {
        if self.resumable {
            self.handle_closed(gate);
        }
    }

    /// A session-era stream, which the gate records; `false`: a stateless-era one.
    pub fn is_resumable(&self) -> bool {
        self.resumable
    }

    fn beat_every(&self) -> u64 {
        let lease_beat = (self.options.timing.lease_ms / 3).max(1);
        if self.resumable { lease_beat } else { lease_beat.min(Timing::STATELESS_BEAT_MS) }
    }

    /// Records one event and queues its frame while the connection serves the stream.
    /// `false` when the stream takes no more (the call stops).
    fn record(&mut self, gate: &mut (impl GateApi + ?Sized), data: &str, terminal: bool) -> bool {
        if !self.resumable {
            if self.connected {
                self.outbox.push_back(sse::unnamed(data));
            }
            self.answered |= terminal;
            return self.connected;
        }
        if self.options.shared && self.connected {
            // Asked before recording: a resume elsewhere may have taken the stream over.
            self.check(gate);
        }
        let (session, stream) = (&self.session, self.stream);
        let recorded =
            if terminal { gate.terminal(session, stream, data) } else { gate.emit(session, stream, data) };
        match recorded {
            // (A host without the gate numbers nothing: every event is 0.)
            Ok(event) if event.seq != 0 && event.seq <= self.recorded => {
                // The store went back in time (restored from an older snapshot, a replica
                // promoted) and numbered this event as one the stream had already sent: its
                // later events are lost. Nothing more is recorded or sent under ids a client
                // may hold; every request not answered gets `-32001` here, and on a resume
                // (at once with a cursor past what the store kept, else once the lease ends).
                self.stop(GateError::UnknownStream);
                false
            }
            Ok(event) => {
                self.recorded = event.seq;
                if self.connected {
                    self.outbox.push_back(sse::recorded(&event, data));
                }
                self.answered |= terminal;
                true
            }
            Err(e) => {
                self.stop(e);
                false
            }
        }
    }

    /// The stream takes no more events. Cancelled or given up (`stream-finished`): the calls
    /// stop, silently. Its state gone, or the store failing: every request not answered yet
    /// gets `-32001` on the connection at once, never a connection left open without an answer.
    fn stop(&mut self, e: GateError) {
        self.done = true;
        let Some(calls) = self.calls.as_mut() else { return };
        if calls.over {
            return;
        }
        calls.over = true;
        if e != GateError::StreamFinished && self.connected {
            let current = calls.current.clone().flatten();
            let unanswered =
                current.into_iter().chain(calls.queue.iter().filter_map(PendingCall::id).cloned());
            for id in unanswered.filter(|id| !calls.cancelled.contains(id)) {
                self.outbox.push_back(sse::stranded(&id));
            }
        }
        calls.queue.clear();
    }

    /// A waiting call is alive: its lease is renewed; with a shared store, cancels and take-
    /// overs made elsewhere are learnt.
    fn heartbeat(&mut self, gate: &mut (impl GateApi + ?Sized)) {
        if !self.resumable {
            // No lease: the beat only lets the host look at its connection.
            return;
        }
        match gate.renew_lease(&self.session, self.stream) {
            Ok(()) => {
                if self.options.shared && self.calls.as_ref().is_some_and(|c| c.batch) {
                    self.check(gate);
                }
            }
            Err(e) => self.stop(e),
        }
    }

    /// `check-stream`: whether this connection still serves the stream, and what of its batch
    /// was cancelled.
    fn check(&mut self, gate: &mut (impl GateApi + ?Sized)) {
        match gate.check_stream(&self.session, self.stream, self.attachment) {
            Ok(status) => {
                if !status.attached {
                    self.connected = false;
                    self.outbox.clear();
                }
                if let Some(calls) = self.calls.as_mut() {
                    calls.cancel(&status.cancelled);
                }
            }
            Err(e) => self.stop(e),
        }
    }

    /// One poll of a stream another instance writes: its new events, in order, until its
    /// terminal, until the gate says stop, or the follow's time is up; then a `retry` so that
    /// the client polls again.
    fn follow_step(&mut self, gate: &mut (impl GateApi + ?Sized), now: Millis) {
        let Some(follow) = self.follow.as_mut() else { return };
        if now >= follow.deadline {
            self.end_follow();
            return;
        }
        follow.next_poll = now.saturating_add(self.options.timing.poll_ms);
        let Ok(polled) = gate.poll(&self.session, self.stream, self.attachment, follow.after) else {
            self.end_follow();
            return;
        };
        for event in &polled.events {
            follow.after = event.seq;
            self.outbox.push_back(sse::frame(event));
            if event.terminal {
                self.follow = None;
                self.done = true;
                return;
            }
        }
        if !polled.stranded.is_empty() {
            // The call's writer is gone with its instance: the client gets the errors now.
            self.outbox.extend(polled.stranded.iter().map(sse::stranded));
            self.follow = None;
            self.done = true;
        } else if polled.done {
            self.end_follow();
        }
    }

    fn end_follow(&mut self) {
        self.follow = None;
        self.done = true;
        self.outbox.push_back(sse::retry_only(self.options.timing.retry_ms));
    }
}

impl Calls {
    fn cancel(&mut self, ids: &[RequestId]) {
        for id in ids {
            if !self.cancelled.contains(id) {
                self.cancelled.push(id.clone());
            }
        }
        if self.current.as_ref().and_then(Option::as_ref).is_some_and(|id| self.cancelled.contains(id)) {
            self.stop_current = true;
        }
    }
}
