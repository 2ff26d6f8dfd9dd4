//! 2026-07-28 calls run as tasks (`mcp_transport::tasks` decides everything): their records in
//! this process's memory, or with `--store` in Redis where every process reads them; and the
//! runner — a tokio task that runs the tool, renews the lease while it runs, and records the
//! outcome. A task cancelled (on any process) stops at its tool's next wait.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_transport::journal::{AppendError, JournalPage};
use mcp_transport::jsonrpc::INTERNAL_ERROR;
use mcp_transport::tasks::{self, Lease, MemoryTasks, Run, TaskRequest, TaskStore};
use mcp_transport::tools::{self, ToolHost};
use resume_gate::RequestId;
use resume_gate::kv::Kv;
use resume_gate_redis::RedisKv;
use tokio::sync::watch;

use crate::app::App;

/// Where the task records are.
pub enum Tasks {
    Memory(MemoryTasks),
    /// All under one hash tag (`{tasks}`): the bound's sorted set and the records go together.
    Redis(RedisKv),
}

const LIVE_KEY: &str = "task/{tasks}/live";

fn record_key(id: &str) -> String {
    format!("task/{{tasks}}/{id}")
}

impl TaskStore for Tasks {
    fn create(&self, id: &str, record: &[u8], ttl_ms: u64, max: u64, now_ms: u64) -> Result<bool, String> {
        match self {
            Self::Memory(m) => m.create(id, record, ttl_ms, max, now_ms),
            Self::Redis(r) => {
                r.create_bounded(&record_key(id), LIVE_KEY, record, ttl_ms, max, now_ms).map_err(|e| e.0)
            }
        }
    }

    fn get(&self, id: &str, now_ms: u64) -> Result<Option<Vec<u8>>, String> {
        match self {
            Self::Memory(m) => m.get(id, now_ms),
            Self::Redis(r) => r.clone().get(&record_key(id)).map_err(|e| e.0),
        }
    }

    fn swap(&self, id: &str, old: &[u8], new: &[u8], now_ms: u64) -> Result<bool, String> {
        match self {
            Self::Memory(m) => m.swap(id, old, new, now_ms),
            Self::Redis(r) => r.swap_keeping_expiry(&record_key(id), old, new).map_err(|e| e.0),
        }
    }
}

/// Milliseconds since the Unix epoch: task times are shared between processes.
pub fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Answers a task request; a created task starts running here.
pub fn answer(app: &Arc<App>, request: &TaskRequest) -> mcp_transport::reply::Plain {
    let fill = |bytes: &mut [u8]| getrandom::fill(bytes).is_ok();
    let answer = tasks::answer(&app.tasks, &app.settings.tasks, request, wall_clock_ms(), fill);
    if let Some(run) = answer.run {
        tracing::info!(task = %run.task_id, tool = %run.call.name, "task created");
        tokio::spawn(run_task(Arc::clone(app), run));
    }
    answer.reply
}

/// Runs a task to its end: the tool, beside a task that renews the lease every third of it
/// and stops the tool once the task ended elsewhere (cancelled, or failed by a reader).
async fn run_task(app: Arc<App>, run: Run) {
    running_here(&app).insert(run.task_id.clone());
    run_and_record(&app, &run).await;
    running_here(&app).remove(&run.task_id);
}

async fn run_and_record(app: &Arc<App>, run: &Run) {
    let (ended, watching) = watch::channel(false);
    let host = TaskTools { app: Arc::clone(app), task: run.task_id.clone(), ended: watching };
    let renewer = tokio::spawn(renew_while_running(Arc::clone(app), run.task_id.clone(), ended));
    let outcome = tools::call(&run.call, &host).await;
    renewer.abort();
    let settings = &app.settings.tasks;
    for attempt in 0..5u64 {
        match tasks::finish(&app.tasks, settings, &run.task_id, wall_clock_ms(), &outcome) {
            Ok(recorded) => {
                tracing::info!(task = %run.task_id, recorded, "task finished");
                return;
            }
            Err(e) => {
                tracing::warn!(task = %run.task_id, error = %e, "task outcome not recorded yet");
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
        }
    }
}

fn running_here(app: &App) -> std::sync::MutexGuard<'_, HashSet<String>> {
    app.running_tasks.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How many tasks run here.
pub fn running_count(app: &App) -> usize {
    running_here(app).len()
}

/// A drain's end: every task still running here fails now, on any process that reads it,
/// instead of when its lease lapses; one that finishes after all keeps the failure. How many.
pub fn give_up_running(app: &App) -> usize {
    let running: Vec<String> = running_here(app).iter().cloned().collect();
    let stopped =
        (INTERNAL_ERROR, "the server stopped before the task finished; it was not run again".to_owned());
    for task in &running {
        let recorded =
            tasks::finish(&app.tasks, &app.settings.tasks, task, wall_clock_ms(), &Err(stopped.clone()));
        tracing::info!(%task, ?recorded, "task given up");
    }
    running.len()
}

async fn renew_while_running(app: Arc<App>, task: String, ended: watch::Sender<bool>) {
    let settings = &app.settings.tasks;
    let every = Duration::from_millis((settings.lease_ms / 3).max(1));
    loop {
        tokio::time::sleep(every).await;
        match tasks::renew(&app.tasks, settings, &task, wall_clock_ms()) {
            Ok(Lease::Held) => {}
            Ok(Lease::Ended) => {
                let _ = ended.send(true);
                return;
            }
            // The store is away: the lease may lapse; a reader then fails the task.
            Err(e) => tracing::warn!(%task, error = %e, "task lease not renewed"),
        }
    }
}

/// What a task's tool runs against: no stream (progress goes nowhere: SEP-2663 sends none for
/// tasks), the journal under the task's own key, and waits that end when the task does.
struct TaskTools {
    app: Arc<App>,
    task: String,
    ended: watch::Receiver<bool>,
}

impl ToolHost for TaskTools {
    fn sleep(&self, ms: u64) -> impl Future<Output = bool> + Send {
        let mut ended = self.ended.clone();
        async move {
            let woken = tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => false,
                _ = ended.wait_for(|e| *e) => true,
            };
            !woken && !*ended.borrow()
        }
    }

    fn notify(&self, _message: String) -> bool {
        !*self.ended.borrow()
    }

    fn close_connection(&self) {}

    fn append(&self, line: &str) -> Result<u64, AppendError> {
        // Once per task: the journal's request key is the task's.
        self.app.journal.append("task", &RequestId::Text(self.task.clone()), line)
    }

    fn journal(&self, from: u64, limit: u64) -> Result<JournalPage, String> {
        self.app.journal.page(from, limit)
    }
}
