//! The server's state: the gate instances (`instances`: who waits for whom), the transport, the
//! journal, and the streams this process serves.
//!
//! No network I/O happens while an instance is held: frames go to bounded per-connection
//! channels. Each served stream has its own lock (`Served`), always taken after the gate's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard};

use mcp_transport::hosts::AllowedHosts;
use mcp_transport::server::{Server, ServerConfig};
use resume_gate::RequestId;

use crate::instances::{Held, Instances};
use crate::journal::Journal;
use crate::serving::Served;

/// A stream, by session and number.
pub type StreamKey = (String, u64);

/// How the server is set up, besides its gate and journal.
#[derive(Clone, Debug)]
pub struct Settings {
    pub allowed_hosts: AllowedHosts,
    /// Messages one 2025-03-26 batch may hold (`--max-batch`).
    pub max_batch: usize,
    /// The gate's bounds in force: the lease a waiting call renews, the budget `/metrics`
    /// reports.
    pub config: resume_gate::Config,
    /// The state is shared with other processes (`--store`): a resume may arrive here for a
    /// call another process runs, and a cancel or take-over may come from one.
    pub shared: bool,
    /// The store's wake-ups (Redis): followers wait for them instead of polling.
    pub wakeups: Option<resume_gate_redis::Wakeups>,
    /// `--session-idle-ms` for the state in this process (a shared store expires sessions
    /// itself); `None`: sessions end only by `DELETE` and admission.
    pub session_idle_ms: Option<u64>,
    /// `--max-stateless-calls`: 2026-07-28 streams open at once. The gate bounds a session's
    /// streams; these have no session, so this is their bound (`503` beyond).
    pub max_stateless_calls: usize,
    /// 2026-07-28 tasks: their TTL, lease (the gate's), and bound.
    pub tasks: mcp_transport::tasks::TaskSettings,
}

/// The default `max_stateless_calls`.
pub const DEFAULT_MAX_STATELESS_CALLS: usize = 1024;

impl Settings {
    pub fn new(allowed_hosts: AllowedHosts, config: resume_gate::Config) -> Self {
        let lease_ms = config.lease_ms;
        Self {
            allowed_hosts,
            max_batch: mcp_transport::server::DEFAULT_MAX_BATCH,
            config,
            shared: false,
            wakeups: None,
            session_idle_ms: None,
            max_stateless_calls: DEFAULT_MAX_STATELESS_CALLS,
            tasks: mcp_transport::tasks::TaskSettings {
                lease_ms,
                ..mcp_transport::tasks::TaskSettings::default()
            },
        }
    }

    /// The state is in `kv`, shared with other processes (`--store`); with Redis, followers
    /// wait for its wake-ups.
    pub fn shared_over(self, kv: &gate_host::keyvalue::SharedKv) -> Self {
        let wakeups = match kv {
            gate_host::keyvalue::SharedKv::Redis(redis) => Some(resume_gate_redis::Wakeups::start(redis)),
            gate_host::keyvalue::SharedKv::Memory(_) => None,
        };
        Self { shared: true, wakeups, session_idle_ms: None, ..self }
    }
}

pub struct App {
    instances: Instances,
    pub(crate) server: Server,
    pub(crate) journal: Journal,
    /// Where 2026-07-28 tasks are recorded: with the journal (Redis), or in this process.
    pub(crate) tasks: crate::tasks::Tasks,
    /// The tasks running here, by id (a drain gives them up).
    pub(crate) running_tasks: Mutex<std::collections::HashSet<String>>,
    pub(crate) settings: Settings,
    /// The streams whose calls run here, by stream and by each request they answer: a
    /// resume here takes a call's stream over, a `notifications/cancelled` stops one.
    served: Mutex<ServedStreams>,
    /// `/metrics` answers (`--metrics`); otherwise it is `404`.
    pub(crate) metrics: AtomicBool,
    pub(crate) requests: AtomicU64,
    /// SSE responses open on this process, for `/metrics`.
    pub(crate) attached: AtomicUsize,
    /// Those of them that carry calls' answers (a drain waits for them).
    pub(crate) answering: AtomicUsize,
    /// Those of them that serve the 2026-07-28 era (`--max-stateless-calls`).
    pub(crate) stateless: AtomicUsize,
    /// When each session was last active (`--session-idle-ms`).
    pub(crate) idle: Option<crate::idle::IdleSessions>,
}

#[derive(Default)]
struct ServedStreams {
    by_stream: HashMap<StreamKey, Arc<Served>>,
    by_request: HashMap<(String, RequestId), Arc<Served>>,
}

impl App {
    /// The server over `instances` (one instance, or a pool over a shared store), with its
    /// `journal`.
    pub fn new(instances: Instances, journal: Journal, settings: Settings) -> Arc<Self> {
        let server = Server::new(ServerConfig {
            name: "resume-gate host-example".into(),
            allowed_hosts: settings.allowed_hosts.clone(),
            max_batch: settings.max_batch,
            tasks: true,
            ..ServerConfig::default()
        });
        let tasks = match journal.redis() {
            Some(redis) => crate::tasks::Tasks::Redis(redis.clone()),
            None => crate::tasks::Tasks::Memory(Default::default()),
        };
        let idle = settings
            .session_idle_ms
            .map(|ms| crate::idle::IdleSessions::new(ms, 2 * settings.config.max_sessions as usize));
        Arc::new(Self {
            instances,
            server,
            journal,
            tasks,
            running_tasks: Mutex::default(),
            served: Mutex::default(),
            metrics: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            attached: AtomicUsize::new(0),
            answering: AtomicUsize::new(0),
            stateless: AtomicUsize::new(0),
            idle,
            settings,
        })
    }

    /// Takes a slot for a 2026-07-28 stream (its SSE body gives it back); `false`: all
    /// `--max-stateless-calls` are taken.
    pub(crate) fn admit_stateless(&self) -> bool {
        let taken = self.stateless.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if taken >= self.settings.max_stateless_calls {
            self.stateless.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Serves `/metrics` from now on (`--metrics`).
    pub fn enable_metrics(&self) {
        self.metrics.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The gate's memory (its instance's linear memory), for tests and metrics.
    pub fn gate_memory_bytes(&self) -> Option<usize> {
        self.instances.memory_bytes()
    }

    /// A gate instance, for one call (or a few that belong together) of `session`.
    pub(crate) fn gate(&self, session: Option<&str>) -> Held<'_> {
        self.instances.hold(session)
    }

    /// Every instance's counters (never waits for a store).
    pub(crate) fn counters(&self) -> resume_gate::Counters {
        self.instances.counters()
    }

    fn served_streams(&self) -> MutexGuard<'_, ServedStreams> {
        self.served.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A stream whose calls now run here.
    pub(crate) fn serving(&self, served: &Arc<Served>) {
        let mut table = self.served_streams();
        let key = served.key.clone();
        for id in &served.requests {
            table.by_request.insert((key.0.clone(), id.clone()), Arc::clone(served));
        }
        table.by_stream.insert(key, Arc::clone(served));
    }

    /// Its calls are over.
    pub(crate) fn served(&self, served: &Served) {
        let mut table = self.served_streams();
        for id in &served.requests {
            table.by_request.remove(&(served.key.0.clone(), id.clone()));
        }
        if table.by_stream.get(&served.key).is_some_and(|s| std::ptr::eq(&**s, served)) {
            table.by_stream.remove(&served.key);
        }
    }

    /// The stream's calls, if they run here.
    pub(crate) fn served_here(&self, key: &StreamKey) -> Option<Arc<Served>> {
        self.served_streams().by_stream.get(key).cloned()
    }

    /// Streams whose calls run here now, or whose answers are still being written, and the
    /// tasks running here.
    pub fn running_calls(&self) -> usize {
        let answering = self.answering.load(std::sync::atomic::Ordering::Relaxed);
        let streams = self.served_streams().by_stream.len().max(answering);
        streams + crate::tasks::running_count(self)
    }

    /// `session` was active now (a request answered, an SSE response opened or ended).
    pub(crate) fn active(&self, session: &str, response: Option<bool>) {
        if let Some(idle) = &self.idle {
            match response {
                None => idle.touch(session, crate::serving::now()),
                Some(opened) => idle.response(session, crate::serving::now(), opened),
            }
        }
    }

    /// Ends the sessions idle past `--session-idle-ms` (memory store); how many.
    pub fn end_idle_sessions(&self) -> usize {
        let Some(idle) = &self.idle else { return 0 };
        let expired = idle.take_expired(crate::serving::now());
        for session in &expired {
            if self.gate(Some(session)).end_session(session).is_ok() {
                tracing::info!(session, "ended: idle past --session-idle-ms");
            }
        }
        expired.len()
    }

    /// Gives up every call running here (a drain's end): each unanswered request's `-32001`
    /// is recorded, so that a reconnect on any process replays it at once; the calls stop.
    /// How many streams had calls.
    pub fn give_up_running_calls(&self) -> usize {
        let running: Vec<Arc<Served>> = self.served_streams().by_stream.values().cloned().collect();
        for served in &running {
            served.give_up(self);
        }
        running.len() + crate::tasks::give_up_running(self)
    }

    /// `notifications/cancelled`: the gate ends the request (a whole stream, or one request of
    /// a batch), also for a call another process runs (it learns at its next event); a call
    /// running here stops at once.
    pub(crate) fn cancel(&self, session: &str, request: &RequestId) {
        let _ = self.gate(Some(session)).abort_request(session, request);
        let served = self.served_streams().by_request.get(&(session.to_owned(), request.clone())).cloned();
        if let Some(served) = served {
            served.cancel(request);
            tracing::info!(session, stream = served.key.1, request = ?request, "cancelled");
        }
    }
}
