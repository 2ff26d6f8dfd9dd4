//! Tasks in the 2026-07-28 era (SEP-2663), in process: who gets one, what each `tasks/*`
//! answers, and the record's lifecycle over `MemoryTasks` — a lapsed lease fails a task, a
//! cancel wins over a late completion, the bound and the TTL hold.

use super::*;
use crate::jsonrpc;
use crate::tasks::{self, Lease, MemoryTasks, TaskOp, TaskRequest, TaskSettings};

const MODERN: &str = "2026-07-28";

fn offering() -> Server {
    Server::new(ServerConfig { tasks: true, ..ServerConfig::default() })
}

/// A 2026-07-28 request from a client that takes tasks (or not).
fn modern(method: &str, mut params: Value, takes_tasks: bool) -> HttpRequest {
    let extensions = if takes_tasks { json!({tasks::EXTENSION: {}}) } else { json!({}) };
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"extensions": extensions});
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut req = with_header(post(None, &body), "mcp-protocol-version", MODERN.as_bytes());
    req.headers.push(("mcp-method".into(), method.as_bytes().to_vec()));
    if let Some(name) = params.get("name").or(params.get("taskId")).and_then(Value::as_str) {
        req.headers.push(("mcp-name".into(), name.as_bytes().to_vec()));
    }
    req
}

fn handle(server: &Server, req: &HttpRequest) -> Reply {
    server.handle(&mut InProcess::new(), req, || Some("key".into()))
}

fn body(p: &Plain) -> Value {
    serde_json::from_str(p.body.as_deref().expect("a body")).unwrap()
}

fn settings() -> TaskSettings {
    TaskSettings {
        ttl_ms: 60_000,
        poll_interval_ms: 100,
        lease_ms: 1_000,
        max_tasks: 3,
        max_result_bytes: 1_000,
    }
}

/// Creates a task for `call` at `now`; its id.
fn create(store: &MemoryTasks, now: u64, seed: u8) -> String {
    let call =
        crate::tools::ToolCall::from_params(&json!({"name": "append", "arguments": {"text": "x"}})).unwrap();
    let request = TaskRequest { id: RequestId::Number(1), op: TaskOp::Create(call) };
    let answer = tasks::answer(store, &settings(), &request, now, |b| {
        b.fill(seed);
        true
    });
    let result = body(&answer.reply)["result"].clone();
    assert_eq!((&result["resultType"], &result["status"]), (&json!("task"), &json!("working")));
    let run = answer.run.expect("a task to run");
    assert_eq!(result["taskId"], run.task_id.as_str());
    run.task_id
}

fn get(store: &MemoryTasks, task: &str, now: u64) -> Value {
    let request = TaskRequest { id: RequestId::Number(2), op: TaskOp::Get(task.into()) };
    body(&tasks::answer(store, &settings(), &request, now, |_| false).reply)
}

fn cancel(store: &MemoryTasks, task: &str, now: u64) -> Value {
    let request = TaskRequest { id: RequestId::Number(3), op: TaskOp::Cancel(task.into()) };
    body(&tasks::answer(store, &settings(), &request, now, |_| false).reply)
}

#[test]
fn only_a_client_that_names_the_extension_gets_a_task_and_only_for_a_long_call() {
    let server = offering();
    let long = json!({"name": "slow_compute", "arguments": {"seconds": 5}});
    match handle(&server, &modern("tools/call", long.clone(), true)) {
        Reply::Task(TaskRequest { op: TaskOp::Create(call), .. }) => assert_eq!(call.name, "slow_compute"),
        other => panic!("expected a task, got {other:?}"),
    }
    assert!(matches!(handle(&server, &modern("tools/call", long.clone(), false)), Reply::Stream(_)));
    let quick = json!({"name": "slow_compute", "arguments": {"seconds": 0}});
    assert!(matches!(handle(&server, &modern("tools/call", quick, true)), Reply::Stream(_)));
    let sync = json!({"name": "greet", "arguments": {"name": "a"}});
    assert!(matches!(handle(&server, &modern("tools/call", sync, true)), Reply::Stream(_)));
    // A host that does not offer tasks never makes one, nor advertises them.
    let plain_server = Server::new(ServerConfig::default());
    assert!(matches!(handle(&plain_server, &modern("tools/call", long, true)), Reply::Stream(_)));
    let discover = plain(handle(&plain_server, &modern("server/discover", json!({}), true)));
    assert!(body(&discover)["result"]["capabilities"].get("extensions").is_none());
    let discover = plain(handle(&server, &modern("server/discover", json!({}), true)));
    assert_eq!(body(&discover)["result"]["capabilities"]["extensions"], json!({tasks::EXTENSION: {}}));
}

#[test]
fn tasks_methods_need_the_extension_a_task_id_and_its_mcp_name() {
    let server = offering();
    let get = |params: Value, takes: bool| handle(&server, &modern("tasks/get", params, takes));
    let refused = plain(get(json!({"taskId": "abc"}), false));
    assert_eq!(error_code(&refused), tasks::MISSING_CAPABILITY);
    assert_eq!(
        body(&refused)["error"]["data"]["requiredCapabilities"]["extensions"],
        json!({tasks::EXTENSION: {}})
    );
    // A `taskId` that is not a string cannot be what `Mcp-Name` says.
    assert_eq!(error_code(&plain(get(json!({"taskId": 5}), true))), jsonrpc::HEADER_MISMATCH);
    match get(json!({"taskId": "abc"}), true) {
        Reply::Task(TaskRequest { op: TaskOp::Get(task), .. }) => assert_eq!(task, "abc"),
        other => panic!("expected a task request, got {other:?}"),
    }
    let mut no_name = modern("tasks/cancel", json!({"taskId": "abc"}), true);
    no_name.headers.retain(|(n, _)| n != "mcp-name");
    let p = plain(handle(&server, &no_name));
    assert_eq!((p.status, error_code(&p)), (400, jsonrpc::HEADER_MISMATCH));
    for removed in ["tasks/result", "tasks/list"] {
        let p = plain(handle(&server, &modern(removed, json!({"taskId": "abc"}), true)));
        assert_eq!((p.status, error_code(&p)), (404, METHOD_NOT_FOUND), "{removed}");
    }
}

#[test]
fn a_task_is_stored_before_its_id_is_returned_and_completes_with_its_result() {
    let store = MemoryTasks::default();
    let task = create(&store, 1_000, 1);
    assert_eq!(get(&store, &task, 1_001)["result"]["status"], "working");
    let outcome = Ok(json!({"content": [{"type": "text", "text": "1"}]}));
    assert_eq!(tasks::finish(&store, &settings(), &task, 1_200, &outcome), Ok(true));
    let done = get(&store, &task, 1_300)["result"].clone();
    assert_eq!((&done["status"], &done["resultType"]), (&json!("completed"), &json!("complete")));
    assert_eq!(done["result"]["content"][0]["text"], "1");
    assert_eq!(
        (done["createdAt"].as_str(), done["ttlMs"].as_u64()),
        (Some("1970-01-01T00:00:01.000Z"), Some(60_000))
    );
    assert_eq!(done["lastUpdatedAt"], "1970-01-01T00:00:01.200Z");
    // Terminal is final: a second outcome changes nothing.
    assert_eq!(tasks::finish(&store, &settings(), &task, 1_400, &Err((-32603, "late".into()))), Ok(false));
    assert_eq!(get(&store, &task, 1_500)["result"]["status"], "completed");
}

#[test]
fn a_json_rpc_error_fails_the_task_and_a_tool_error_completes_it() {
    let store = MemoryTasks::default();
    let (failed, tool_error) = (create(&store, 0, 1), create(&store, 0, 2));
    tasks::finish(&store, &settings(), &failed, 10, &Err((-32603, "boom".into()))).unwrap();
    let outcome = Ok(json!({"isError": true, "content": []}));
    tasks::finish(&store, &settings(), &tool_error, 10, &outcome).unwrap();
    let f = get(&store, &failed, 20)["result"].clone();
    assert_eq!((&f["status"], &f["error"]), (&json!("failed"), &json!({"code": -32603, "message": "boom"})));
    assert_eq!(get(&store, &tool_error, 20)["result"]["status"], "completed");
}

#[test]
fn a_task_whose_process_stopped_renewing_fails_once_its_lease_lapses_and_is_never_resumed() {
    let store = MemoryTasks::default();
    let task = create(&store, 0, 1);
    assert_eq!(tasks::renew(&store, &settings(), &task, 900), Ok(Lease::Held));
    assert_eq!(get(&store, &task, 1_800)["result"]["status"], "working", "renewed until 1900");
    let lapsed = get(&store, &task, 1_901)["result"].clone();
    assert_eq!((&lapsed["status"], &lapsed["error"]["code"]), (&json!("failed"), &json!(-32603)));
    assert!(lapsed["statusMessage"].as_str().unwrap().contains("was not run again"));
    // Its process, if it comes back, learns the task ended and records nothing.
    assert_eq!(tasks::renew(&store, &settings(), &task, 2_000), Ok(Lease::Ended));
    assert_eq!(tasks::finish(&store, &settings(), &task, 2_000, &Ok(json!({}))), Ok(false));
}

#[test]
fn a_cancel_ends_the_task_and_wins_over_a_later_completion() {
    let store = MemoryTasks::default();
    let task = create(&store, 0, 1);
    assert_eq!(cancel(&store, &task, 10)["result"], json!({"resultType": "complete"}));
    assert_eq!(get(&store, &task, 20)["result"]["status"], "cancelled");
    assert_eq!(tasks::renew(&store, &settings(), &task, 30), Ok(Lease::Ended));
    assert_eq!(tasks::finish(&store, &settings(), &task, 40, &Ok(json!({}))), Ok(false));
    assert_eq!(cancel(&store, &task, 50)["result"], json!({"resultType": "complete"}), "idempotent");
}

#[test]
fn unknown_malformed_and_expired_task_ids_are_invalid_params() {
    let store = MemoryTasks::default();
    let task = create(&store, 0, 1);
    for unknown in
        ["", "nope", "tasks-conformance-nonexistent-12345", &"f".repeat(32), &"A".repeat(32), &task[..31]]
    {
        assert_eq!(get(&store, unknown, 1)["error"]["code"], -32602, "{unknown:?}");
        assert_eq!(cancel(&store, unknown, 1)["error"]["code"], -32602, "{unknown:?}");
    }
    assert_eq!(get(&store, &task, 59_999)["result"]["taskId"], task.as_str());
    assert_eq!(get(&store, &task, 60_000)["error"]["code"], -32602, "gone after its TTL");
}

#[test]
fn tasks_are_bounded_in_number_and_a_result_in_bytes() {
    let store = MemoryTasks::default();
    let first = create(&store, 0, 1);
    create(&store, 0, 2);
    create(&store, 0, 3);
    let call = crate::tools::ToolCall::from_params(&json!({"name": "append"})).unwrap();
    let request = TaskRequest { id: RequestId::Number(9), op: TaskOp::Create(call) };
    let full = tasks::answer(&store, &settings(), &request, 10, |b| {
        b.fill(4);
        true
    });
    assert!(full.run.is_none());
    assert_eq!((full.reply.status, full.reply.retry_after), (503, Some(1)));
    // A room frees when one expires.
    assert!(
        tasks::answer(&store, &settings(), &request, 60_000, |b| {
            b.fill(5);
            true
        })
        .run
        .is_some()
    );
    let _ = first;
    let task = create(&store, 60_000, 6);
    let big = Ok(json!({"content": [{"type": "text", "text": "x".repeat(2_000)}]}));
    tasks::finish(&store, &settings(), &task, 60_010, &big).unwrap();
    let failed = get(&store, &task, 60_020)["result"].clone();
    assert_eq!(failed["status"], "failed");
    assert!(failed["error"]["message"].as_str().unwrap().contains("exceeds 1000 bytes"));
}

#[test]
fn no_randomness_no_task() {
    let store = MemoryTasks::default();
    let call = crate::tools::ToolCall::from_params(&json!({"name": "append"})).unwrap();
    let request = TaskRequest { id: RequestId::Number(1), op: TaskOp::Create(call) };
    let answer = tasks::answer(&store, &settings(), &request, 0, |_| false);
    assert_eq!((answer.reply.status, answer.run.is_none()), (503, true));
}

/// What another writer does to a task's record, by id, at a time.
type Interference = Box<dyn FnOnce(&MemoryTasks, &str, u64)>;

/// A store where another writer wins the first swap: the record changes under the writer.
struct Contended {
    inner: MemoryTasks,
    /// Runs just before the first swap, then never again.
    interfere: std::cell::RefCell<Option<Interference>>,
}

impl tasks::TaskStore for Contended {
    fn create(&self, id: &str, record: &[u8], ttl_ms: u64, max: u64, now_ms: u64) -> Result<bool, String> {
        self.inner.create(id, record, ttl_ms, max, now_ms)
    }
    fn get(&self, id: &str, now_ms: u64) -> Result<Option<Vec<u8>>, String> {
        self.inner.get(id, now_ms)
    }
    fn swap(&self, id: &str, old: &[u8], new: &[u8], now_ms: u64) -> Result<bool, String> {
        if let Some(interfere) = self.interfere.borrow_mut().take() {
            interfere(&self.inner, id, now_ms);
        }
        self.inner.swap(id, old, new, now_ms)
    }
}

#[test]
fn an_outcome_that_loses_its_race_to_a_cancel_is_not_recorded_and_says_so() {
    let store = Contended { inner: MemoryTasks::default(), interfere: Default::default() };
    let task = create(&store.inner, 0, 1);
    *store.interfere.borrow_mut() = Some(Box::new(|inner, id, now| {
        assert_eq!(cancel(inner, id, now)["result"], json!({"resultType": "complete"}));
    }));
    assert_eq!(tasks::finish(&store, &settings(), &task, 10, &Ok(json!({"content": []}))), Ok(false));
    assert_eq!(get(&store.inner, &task, 20)["result"]["status"], "cancelled");
}
