//! Tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663) for 2026-07-28 `tools/call`s,
//! sans-IO: the task record, its lifecycle, and the answers to `tasks/get`, `tasks/update` and
//! `tasks/cancel`, over any [`TaskStore`] a host provides (its memory, or the store its
//! processes share). The host only runs the tool and calls [`renew`] and [`finish`].
//!
//! Why a record with a lease: a 2026-07-28 client that loses its connection loses the call,
//! unless the call is a task. Then the task id is the durable handle, so the record is in the
//! store before the id is returned, any process can answer for it, and a task whose process
//! died must not read `working` forever. Its runner renews a lease; a reader that finds the
//! lease lapsed fails the task (`-32603`, "its process stopped") — it is never run again, so
//! a non-idempotent tool runs at most once. Every transition is a compare-and-swap of the
//! whole record, and a terminal record never changes: a cancel and a completion racing each
//! other leave one of them, never a mix.
//!
//! Binding: the extension binds a task to the caller's authorization context; this server has
//! none, so the task id is the bearer token — 128 random bits, checked for its shape before
//! any store sees it. There is no `tasks/list` (SEP-2663 removed it, with `tasks/result`), so
//! no caller can learn another's ids. 2025-era sessions never see tasks at all.

use resume_gate::RequestId;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::jsonrpc::{self, INTERNAL_ERROR, INVALID_PARAMS};
use crate::reply::{Plain, rpc_plain};
use crate::tools::ToolCall;

/// The extension's name, in capabilities.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `-32021` Missing Required Client Capability.
pub const MISSING_CAPABILITY: i64 = -32021;
/// Bytes of randomness in a task id (hex-encoded: 32 characters).
pub const TASK_ID_BYTES: usize = 16;

/// How a host keeps its tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSettings {
    /// How long a task is kept from its creation (`ttlMs`); then it is gone.
    pub ttl_ms: u64,
    /// The polling interval suggested to clients.
    pub poll_interval_ms: u64,
    /// How long a task's process holds it without renewing; a reader then fails it.
    pub lease_ms: u64,
    /// Tasks kept at once (running or finished, until their TTL); more: `503`. With
    /// `max_result_bytes`, what tasks may hold: 256 MiB by default.
    pub max_tasks: u64,
    /// Bytes of one task's result; a larger one fails the task.
    pub max_result_bytes: usize,
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            ttl_ms: 60 * 60 * 1000,
            poll_interval_ms: 500,
            lease_ms: 10_000,
            max_tasks: 1024,
            max_result_bytes: 256 * 1024,
        }
    }
}

/// Where task records live. Each call is one store operation; a record expires `ttl_ms` after
/// [`TaskStore::create`] whatever is swapped in later. `now_ms` is for stores that keep time
/// themselves (memory); a store with its own clock (Redis) may ignore it.
pub trait TaskStore {
    /// Stores a new record unless `max` unexpired ones are kept; `Ok(false)`: full.
    fn create(&self, id: &str, record: &[u8], ttl_ms: u64, max: u64, now_ms: u64) -> Result<bool, String>;
    fn get(&self, id: &str, now_ms: u64) -> Result<Option<Vec<u8>>, String>;
    /// Replaces the record if it still is `old`; `Ok(false)`: it changed or expired meanwhile.
    fn swap(&self, id: &str, old: &[u8], new: &[u8], now_ms: u64) -> Result<bool, String>;
}

/// A request for the task machinery, from [`crate::server::Server`]; the host answers it with
/// [`answer`].
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRequest {
    pub id: RequestId,
    pub op: TaskOp,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TaskOp {
    /// Run this call as a new task.
    Create(ToolCall),
    Get(String),
    Update(String),
    Cancel(String),
}

/// What the host does for a [`TaskRequest`]: write `reply`, and start `run` if there is one.
#[derive(Debug)]
pub struct Answer {
    pub reply: Plain,
    pub run: Option<Run>,
}

/// A task to run now: the host runs `call`, renews the lease, then records the outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub task_id: String,
    pub call: ToolCall,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Working,
    Completed,
    Failed,
    Cancelled,
}

/// What the store keeps of a task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_message: Option<String>,
    created_at_ms: u64,
    updated_at_ms: u64,
    ttl_ms: u64,
    poll_interval_ms: u64,
    lease_until_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
}

impl Record {
    fn is_terminal(&self) -> bool {
        self.status != Status::Working
    }

    fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    fn parse(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }

    /// The task as the wire shows it (`Task`, with its status's payload).
    fn wire(&self, task_id: &str) -> Value {
        let mut task = json!({
            "taskId": task_id,
            "status": self.status,
            "createdAt": iso8601(self.created_at_ms),
            "lastUpdatedAt": iso8601(self.updated_at_ms),
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": self.poll_interval_ms,
        });
        if let Some(m) = &self.status_message {
            task["statusMessage"] = json!(m);
        }
        if let Some(r) = &self.result {
            task["result"] = r.clone();
        }
        if let Some(e) = &self.error {
            task["error"] = e.clone();
        }
        task
    }

    /// Fails a running task whose lease lapsed (its process stopped); whether it did.
    fn lapse(&mut self, now_ms: u64) -> bool {
        let lapsed = !self.is_terminal() && self.lease_until_ms < now_ms;
        if lapsed {
            self.fail(now_ms, INTERNAL_ERROR, LAPSED);
        }
        lapsed
    }

    /// Ends a running task as cancelled; whether it did (a finished one keeps its end).
    fn cancel(&mut self, now_ms: u64) -> bool {
        if self.is_terminal() {
            return false;
        }
        self.status = Status::Cancelled;
        self.status_message = Some("cancelled at the client's request".into());
        self.updated_at_ms = now_ms;
        true
    }

    fn fail(&mut self, now_ms: u64, code: i64, message: &str) {
        self.status = Status::Failed;
        self.status_message = Some(message.to_owned());
        self.error = Some(json!({"code": code, "message": message}));
        self.updated_at_ms = now_ms;
    }
}

/// Milliseconds since the Unix epoch as ISO 8601 (UTC, milliseconds).
fn iso8601(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Whether `text` can be a task id we minted: anything else is unknown without a lookup.
fn well_formed(task_id: &str) -> bool {
    task_id.len() == 2 * TASK_ID_BYTES && task_id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The JSON-RPC error a request for a task we do not have gets (`-32602`, as SEP-2663 says).
fn not_found(id: &RequestId) -> Plain {
    rpc_plain(200, Some(id), INVALID_PARAMS, "Failed to retrieve task: task not found (or expired)")
}

fn store_failed(id: &RequestId, e: &str) -> Plain {
    crate::errors::unavailable(Some(id), &format!("the task store did not answer: {e}"))
}

fn complete(id: &RequestId, mut result: Value) -> Plain {
    result["resultType"] = json!("complete");
    Plain { status: 200, body: Some(jsonrpc::result(id, result)), ..Plain::default() }
}

/// Answers a task request: creates the record (durably, before its id is returned) or reads
/// and changes it. `mint` fills a task id's random bytes.
pub fn answer(
    store: &(impl TaskStore + ?Sized),
    settings: &TaskSettings,
    request: &TaskRequest,
    now_ms: u64,
    mint: impl FnOnce(&mut [u8]) -> bool,
) -> Answer {
    let id = &request.id;
    let found = match &request.op {
        TaskOp::Create(call) => return create(store, settings, id, call, now_ms, mint),
        TaskOp::Get(task) => {
            update(store, task, now_ms, |r| r.lapse(now_ms)).map(|r| r.map(|r| r.wire(task)))
        }
        // No task of ours asks for input: every response is for a key not outstanding.
        TaskOp::Update(task) => read(store, task, now_ms).map(|r| r.map(|_| json!({}))),
        TaskOp::Cancel(task) => {
            update(store, task, now_ms, |r| r.cancel(now_ms)).map(|r| r.map(|_| json!({})))
        }
    };
    let reply = match found {
        Ok(Some(result)) => complete(id, result),
        Ok(None) => not_found(id),
        Err(e) => store_failed(id, &e),
    };
    Answer { reply, run: None }
}

fn create(
    store: &(impl TaskStore + ?Sized),
    settings: &TaskSettings,
    id: &RequestId,
    call: &ToolCall,
    now_ms: u64,
    mint: impl FnOnce(&mut [u8]) -> bool,
) -> Answer {
    let refused = |reply| Answer { reply, run: None };
    let Some(task_id) = crate::server::mint_session_id(mint) else {
        return refused(crate::errors::unavailable(Some(id), "no randomness to name a task"));
    };
    let record = Record {
        status: Status::Working,
        status_message: None,
        created_at_ms: now_ms,
        updated_at_ms: now_ms,
        ttl_ms: settings.ttl_ms,
        poll_interval_ms: settings.poll_interval_ms,
        lease_until_ms: now_ms.saturating_add(settings.lease_ms),
        result: None,
        error: None,
    };
    match store.create(&task_id, &record.bytes(), settings.ttl_ms, settings.max_tasks, now_ms) {
        Ok(true) => {
            let mut result = record.wire(&task_id);
            result["resultType"] = json!("task");
            let reply = Plain { status: 200, body: Some(jsonrpc::result(id, result)), ..Plain::default() };
            Answer { reply, run: Some(Run { task_id, call: call.clone() }) }
        }
        Ok(false) => {
            let message = format!("as many tasks as this server keeps ({}) exist", settings.max_tasks);
            refused(crate::errors::unavailable(Some(id), &message))
        }
        Err(e) => refused(store_failed(id, &e)),
    }
}

/// The record, `None` for an id we never minted or one expired.
fn read(
    store: &(impl TaskStore + ?Sized),
    task: &str,
    now_ms: u64,
) -> Result<Option<(Vec<u8>, Record)>, String> {
    if !well_formed(task) {
        return Ok(None);
    }
    let Some(bytes) = store.get(task, now_ms)? else { return Ok(None) };
    let record = Record::parse(&bytes).ok_or("an unreadable task record")?;
    Ok(Some((bytes, record)))
}

/// Changes the record with `change` (which says whether to write), retrying a lost race a few
/// times; the record as it is now.
fn update(
    store: &(impl TaskStore + ?Sized),
    task: &str,
    now_ms: u64,
    mut change: impl FnMut(&mut Record) -> bool,
) -> Result<Option<Record>, String> {
    for _ in 0..8 {
        let Some((old, mut record)) = read(store, task, now_ms)? else { return Ok(None) };
        if !change(&mut record) {
            return Ok(Some(record));
        }
        if store.swap(task, &old, &record.bytes(), now_ms)? {
            return Ok(Some(record));
        }
    }
    Err("the task record kept changing".into())
}

/// The message a task whose process stopped fails with.
const LAPSED: &str =
    "the process running this task stopped before it finished (its lease lapsed); it was not run again";

/// What a running task's lease renewal found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lease {
    /// Still ours: keep running.
    Held,
    /// Cancelled, failed by a reader, or expired: stop, nothing more will be recorded.
    Ended,
}

/// Renews a running task's lease for another `settings.lease_ms`.
pub fn renew(
    store: &(impl TaskStore + ?Sized),
    settings: &TaskSettings,
    task: &str,
    now_ms: u64,
) -> Result<Lease, String> {
    let until = now_ms.saturating_add(settings.lease_ms);
    let renew = |r: &mut Record| {
        let running = !r.is_terminal();
        if running {
            r.lease_until_ms = until;
        }
        running
    };
    Ok(match update(store, task, now_ms, renew)? {
        Some(r) if !r.is_terminal() => Lease::Held,
        _ => Lease::Ended,
    })
}

/// Records a task's outcome (`Err`: a JSON-RPC error, which fails it); `Ok(false)` when the
/// task had ended meanwhile (cancelled, failed by a reader, expired) and keeps that end.
pub fn finish(
    store: &(impl TaskStore + ?Sized),
    settings: &TaskSettings,
    task: &str,
    now_ms: u64,
    outcome: &Result<Value, (i64, String)>,
) -> Result<bool, String> {
    let too_large = outcome
        .as_ref()
        .is_ok_and(|result| serde_json::to_vec(result).map_or(0, |b| b.len()) > settings.max_result_bytes);
    let mut recorded = false;
    let finish = |r: &mut Record| {
        // Called again after a lost race: only the attempt that writes records.
        recorded = false;
        if r.is_terminal() {
            return false;
        }
        match outcome {
            Ok(_) if too_large => {
                let why = format!("the result exceeds {} bytes", settings.max_result_bytes);
                r.fail(now_ms, INTERNAL_ERROR, &why);
            }
            Ok(result) => {
                r.status = Status::Completed;
                r.result = Some(result.clone());
                r.updated_at_ms = now_ms;
            }
            Err((code, message)) => r.fail(now_ms, *code, message),
        }
        recorded = true;
        true
    };
    update(store, task, now_ms, finish)?;
    Ok(recorded)
}

/// The `-32021` error a client that did not declare the extension gets for `tasks/*`.
pub fn missing_capability(id: &RequestId) -> Plain {
    let data = json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}});
    let body = jsonrpc::error_with_data(
        Some(id),
        MISSING_CAPABILITY,
        "Missing required client capability: io.modelcontextprotocol/tasks",
        data,
    );
    Plain { status: 200, body: Some(body), ..Plain::default() }
}

/// The answer of a host that does not offer tasks, should one reach it: `-32601`.
pub fn not_offered(id: &RequestId) -> Plain {
    rpc_plain(404, Some(id), jsonrpc::METHOD_NOT_FOUND, "Method not found: this server does not offer tasks")
}

/// Tasks kept in this process's memory (a host without a shared store; the tests).
#[derive(Debug, Default)]
pub struct MemoryTasks {
    records: std::sync::Mutex<std::collections::HashMap<String, (Vec<u8>, u64)>>,
}

impl MemoryTasks {
    fn records(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, (Vec<u8>, u64)>> {
        self.records.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl TaskStore for MemoryTasks {
    fn create(&self, id: &str, record: &[u8], ttl_ms: u64, max: u64, now_ms: u64) -> Result<bool, String> {
        let mut records = self.records();
        records.retain(|_, (_, expires)| *expires > now_ms);
        if records.len() as u64 >= max || records.contains_key(id) {
            return Ok(false);
        }
        records.insert(id.to_owned(), (record.to_vec(), now_ms.saturating_add(ttl_ms)));
        Ok(true)
    }

    fn get(&self, id: &str, now_ms: u64) -> Result<Option<Vec<u8>>, String> {
        Ok(self.records().get(id).filter(|(_, expires)| *expires > now_ms).map(|(r, _)| r.clone()))
    }

    fn swap(&self, id: &str, old: &[u8], new: &[u8], now_ms: u64) -> Result<bool, String> {
        let mut records = self.records();
        match records.get_mut(id) {
            Some((record, expires)) if *expires > now_ms && record == old => {
                *record = new.to_vec();
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}
