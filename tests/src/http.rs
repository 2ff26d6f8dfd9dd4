//! The servers under test on a loopback port — host-example and the Spin app served by
//! edge-host — and a raw HTTP client for the scenarios.
//!
//! The client speaks HTTP/1.0 over a plain `TcpStream`, so a streamed response arrives
//! close-delimited (no chunked framing to undo) and a test can read SSE frames one by one,
//! wait with a timeout, or cut the connection by dropping it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use edge_host::keyvalue::SharedKv;
use edge_host::serve::EdgeHost;
use edge_host::variables::{ALLOWED_HOSTS, LEASE_MS, MAX_BATCH, MAX_DETACHED_MS, MAX_SESSIONS, Variables};
use gate_host::kv_world::KvWorld;
use gate_host::memory::MemoryWorld;
pub use gate_host::net::Tcp;
use gate_host::supervised::{DEFAULT_MEMORY_LIMIT, KvMaker, MemoryMaker, Supervised};
use host_example::{App, Journal, Settings};
use mcp_transport::gate::GateApi;
use mcp_transport::hosts::{AllowedHosts, LOCALHOST};
use resume_gate::kv::{MemoryKv, Semantics};
use serde_json::{Value, json};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::drivers::{prepared_kv, prepared_memory};

/// A running server; dropping it stops the server (its memory store is gone).
pub struct TestServer {
    pub addr: SocketAddr,
    /// Where host-example writes its journal (the edge app keeps it in its key-value store).
    pub journal: PathBuf,
    _dir: Option<tempfile::TempDir>,
    runtime: Option<tokio::runtime::Runtime>,
    /// host-example's app, to look at its gate from the test.
    pub app: Option<std::sync::Arc<App>>,
    /// The edge host, to stop its instances from the test.
    pub edge: Option<std::sync::Arc<EdgeHost>>,
    /// A server in a process of its own (the SDK packages' examples).
    _process: Option<crate::processes::ServerProcess>,
}

fn runtime_and_listener() -> (tokio::runtime::Runtime, tokio::net::TcpListener) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    (runtime, listener)
}

/// The composed Spin app (front + gate-kv), compiled once per test process.
fn compiled_edge_app() -> Component {
    static APP: OnceLock<Component> = OnceLock::new();
    APP.get_or_init(|| {
        let bytes = edge_host::compose::compose_built().expect("compose front and gate");
        Component::new(&Engine::default(), bytes).expect("compile the composed app")
    })
    .clone()
}

/// host-example's app over world `gate-memory`, its journal at `journal`.
fn gated_app(journal: PathBuf, setup: &Setup) -> std::sync::Arc<App> {
    let maker = MemoryMaker { pre: prepared_memory(), memory_limit: DEFAULT_MEMORY_LIMIT };
    let gate = Supervised::<MemoryWorld>::new(maker).expect("instantiate the gate");
    app_with(Box::new(gate), Journal::open(journal).expect("open the journal"), setup, false)
}

/// host-example's app over `kv` (`--store`): world `gate-kv`, the journal in the store too.
fn app_over(kv: resume_gate_redis::RedisKv, setup: &Setup) -> std::sync::Arc<App> {
    let kv: SharedKv = kv.into();
    let gate = Supervised::<KvWorld>::new(KvMaker { pre: prepared_kv(), kv: kv.clone() })
        .expect("instantiate gate-kv");
    app_with(Box::new(gate), Journal::in_store(kv), setup, true)
}

fn app_with(
    mut gate: Box<dyn GateApi + Send>,
    journal: Journal,
    setup: &Setup,
    shared: bool,
) -> std::sync::Arc<App> {
    let config = setup.config();
    gate.configure(&config).expect("a valid configuration");
    let settings = Settings { max_batch: setup.max_batch(), shared, ..Settings::new(setup.hosts(), config) };
    App::new(gate, journal, settings)
}

/// How a test server is set up, beyond its defaults.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    pub tcp: Tcp,
    /// `--allowed-host` values; none: the localhost names.
    pub allowed_hosts: Vec<&'static str>,
    /// `--max-sessions` (host-example and edge-host) and `--max-total-bytes` (host-example).
    pub max_sessions: Option<u32>,
    pub max_total_bytes: Option<u64>,
    /// Which of Spin's key-value backends the edge app's store answers like.
    pub kv_semantics: Semantics,
    /// `--lease-ms` (the edge app's `lease_ms` variable).
    pub lease_ms: Option<u64>,
    /// `--max-detached-ms` (the edge app's `max_detached_ms` variable).
    pub max_detached_ms: Option<u64>,
    /// `--max-batch` (the edge app's `max_batch` variable).
    pub max_batch: Option<usize>,
    /// The edge app's state on the tests' Redis server instead of in process (`--store`).
    pub redis: bool,
}

impl Setup {
    /// The gate's bounds this setup names, the defaults for the rest.
    pub fn config(&self) -> resume_gate::Config {
        let defaults = resume_gate::Config::default();
        resume_gate::Config {
            max_sessions: self.max_sessions.unwrap_or(defaults.max_sessions),
            max_total_bytes: self.max_total_bytes.unwrap_or(defaults.max_total_bytes),
            lease_ms: self.lease_ms.unwrap_or(defaults.lease_ms),
            max_detached_ms: self.max_detached_ms,
            ..defaults
        }
    }

    fn max_batch(&self) -> usize {
        self.max_batch.unwrap_or(mcp_transport::server::DEFAULT_MAX_BATCH)
    }

    fn hosts(&self) -> AllowedHosts {
        if self.allowed_hosts.is_empty() {
            AllowedHosts::localhost()
        } else {
            AllowedHosts::new(&self.allowed_hosts)
        }
    }
}

impl TestServer {
    fn serve_app(
        app: std::sync::Arc<App>,
        journal: PathBuf,
        dir: Option<tempfile::TempDir>,
        tcp: Tcp,
    ) -> Self {
        let (runtime, listener) = runtime_and_listener();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(host_example::http::serve_on(app.clone(), listener, tcp));
        Self { addr, journal, _dir: dir, runtime: Some(runtime), app: Some(app), edge: None, _process: None }
    }

    /// host-example with a journal in a directory of its own.
    pub fn host_example() -> Self {
        Self::host_example_with(Setup::default())
    }

    /// host-example set up as `setup` says (`--nagle`, `--allowed-host`).
    pub fn host_example_with(setup: Setup) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.txt");
        Self::serve_app(gated_app(journal.clone(), &setup), journal, Some(dir), setup.tcp)
    }

    /// host-example over the tests' Redis server (`--store redis://…`).
    pub fn host_example_over_redis() -> Self {
        Self::host_example_over(crate::redis::fresh_kv())
    }

    /// host-example over the tests' Redis server, set up as `setup` says.
    pub fn host_example_over_redis_with(setup: Setup) -> Self {
        Self::host_example_over_with(crate::redis::fresh_kv(), setup)
    }

    /// host-example over `kv` (a Redis server of the caller's).
    pub fn host_example_over(kv: resume_gate_redis::RedisKv) -> Self {
        Self::host_example_over_with(kv, Setup::default())
    }

    /// host-example over `kv`, set up as `setup` says.
    pub fn host_example_over_with(kv: resume_gate_redis::RedisKv, setup: Setup) -> Self {
        Self::serve_app(app_over(kv, &setup), PathBuf::new(), None, setup.tcp)
    }

    /// Two host-example servers that share nothing but the tests' Redis server, behind a proxy
    /// that hands each new connection to the other one (as [`TestServer::two_edges_over_redis`]).
    pub fn two_host_examples_over_redis() -> Self {
        let prefix = crate::redis::fresh_prefix();
        let apps: Vec<_> =
            (0..2).map(|_| app_over(crate::redis::shared().kv(&prefix), &Setup::default())).collect();
        let (runtime, addr) = behind_round_robin(2, |i, runtime, listener| {
            runtime.spawn(host_example::http::serve_on(apps[i].clone(), listener, Tcp::NoDelay));
        });
        let app = apps.into_iter().next();
        Self {
            addr,
            journal: PathBuf::new(),
            _dir: None,
            runtime: Some(runtime),
            app,
            edge: None,
            _process: None,
        }
    }

    /// host-example with the gate bypassed (`--no-gate`): for measuring the gate's share.
    pub fn host_example_without_gate() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.txt");
        let app = app_with(
            Box::new(crate::bypass::NoGate::default()),
            Journal::open(journal.clone()).expect("open the journal"),
            &Setup::default(),
            false,
        );
        Self::serve_app(app, journal, Some(dir), Tcp::NoDelay)
    }

    /// The Spin app (front + gate-kv composed, an instance per request) over a fresh store.
    pub fn edge() -> Self {
        Self::edge_with(Setup::default())
    }

    /// The Spin app over a store that answers like Spin's Redis backend (`edge-host
    /// --kv-semantics redis`).
    pub fn edge_over_redis_semantics() -> Self {
        Self::edge_with(Setup { kv_semantics: Semantics::Redis, ..Setup::default() })
    }

    /// The Spin app over the tests' Redis server (`edge-host --store redis://…`).
    pub fn edge_over_redis() -> Self {
        Self::edge_with(Setup { redis: true, ..Setup::default() })
    }

    /// The Spin app over `kv` (a Redis server of the caller's).
    pub fn edge_over(kv: resume_gate_redis::RedisKv) -> Self {
        Self::edge_over_with(kv, Setup::default())
    }

    /// The Spin app over `kv`, set up as `setup` says.
    pub fn edge_over_with(kv: resume_gate_redis::RedisKv, setup: Setup) -> Self {
        Self::serve_edge(edge_host_over(&setup, kv.into()), setup.tcp)
    }

    /// Two Spin app hosts that share nothing but the tests' Redis server (each with its own
    /// connection and runtime, as two processes), behind a proxy that hands each new
    /// connection to the other host: every request of the raw client lands on the other one.
    pub fn two_edges_over_redis() -> Self {
        let prefix = crate::redis::fresh_prefix();
        let setup = Setup::default();
        let hosts: Vec<_> =
            (0..2).map(|_| edge_host_over(&setup, crate::redis::shared().kv(&prefix).into())).collect();
        let (runtime, addr) = behind_round_robin(2, |i, runtime, listener| {
            runtime.spawn(hosts[i].clone().serve_on(listener, Tcp::NoDelay));
        });
        let edge = hosts.into_iter().next();
        Self {
            addr,
            journal: PathBuf::new(),
            _dir: None,
            runtime: Some(runtime),
            app: None,
            edge,
            _process: None,
        }
    }

    /// The Spin app set up as `setup` says: `--nagle` (the front's own write coalescing is all
    /// that keeps a kept-alive call from waiting), `--allowed-host` (its `allowed_hosts`
    /// variable), `--store`.
    pub fn edge_with(setup: Setup) -> Self {
        let kv: SharedKv = if setup.redis {
            crate::redis::fresh_kv().into()
        } else {
            MemoryKv::with_semantics(setup.kv_semantics).into()
        };
        Self::serve_edge(edge_host_over(&setup, kv), setup.tcp)
    }

    fn serve_edge(host: std::sync::Arc<EdgeHost>, tcp: Tcp) -> Self {
        let (runtime, listener) = runtime_and_listener();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(host.clone().serve_on(listener, tcp));
        Self {
            addr,
            journal: PathBuf::new(),
            _dir: None,
            runtime: Some(runtime),
            app: None,
            edge: Some(host),
            _process: None,
        }
    }

    /// The Node package's example server: the TypeScript SDK's `StreamableHTTPServerTransport`
    /// with the gate's adapter, in a Node process.
    pub fn node_example() -> Self {
        Self::sdk_example(crate::sdk_hosts::node_example, crate::sdk_hosts::Store::Gate)
    }

    /// The same Node server with the TypeScript SDK's example `InMemoryEventStore`, no gate.
    pub fn node_sdk_store() -> Self {
        Self::sdk_example(crate::sdk_hosts::node_example, crate::sdk_hosts::Store::Sdk)
    }

    /// The Python package's example server: the `mcp` SDK's streamable HTTP server with the
    /// gate's adapter, in a Python process.
    pub fn python_example() -> Self {
        Self::sdk_example(crate::sdk_hosts::python_example, crate::sdk_hosts::Store::Gate)
    }

    /// The same Python server with the SDK examples' event store, no gate.
    pub fn python_sdk_store() -> Self {
        Self::sdk_example(crate::sdk_hosts::python_example, crate::sdk_hosts::Store::Sdk)
    }

    fn sdk_example(
        serve: fn(&std::path::Path, crate::sdk_hosts::Store) -> crate::processes::ServerProcess,
        store: crate::sdk_hosts::Store,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.txt");
        let process = serve(&journal, store);
        let addr = process.addr;
        Self { addr, journal, _dir: Some(dir), runtime: None, app: None, edge: None, _process: Some(process) }
    }

    /// Stops every instance of the edge app handling a request now, as a crash would.
    pub fn stop_instances(&self) -> usize {
        self.edge.as_ref().expect("an edge server").stop_instances()
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Runs a client program against this server (`MCP_URL` in its environment), echoes its
    /// output into the test log, and returns whether it succeeded and its stdout.
    pub fn run_client(&self, cmd: &mut std::process::Command) -> (bool, String) {
        let out = cmd.env("MCP_URL", self.url()).output().expect("run the client");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        (out.status.success(), stdout)
    }

    /// The journal as the `journal` tool reports it, from a session of its own.
    pub fn journal_lines(&self) -> Vec<String> {
        let c = Client::initialize(self.addr);
        let frames = c.call(1, "journal", json!({}), &[]).frames_until_closed(Duration::from_secs(10));
        let result = frames.iter().map(Frame::json).find(|v| v.get("result").is_some());
        let lines = result.expect("the journal tool answers")["result"]["structuredContent"]["lines"].clone();
        serde_json::from_value(lines).expect("the journal is a list of lines")
    }
}

/// The Spin app with `setup`'s variables over `kv`.
fn edge_host_over(setup: &Setup, kv: SharedKv) -> std::sync::Arc<EdgeHost> {
    let hosts = if setup.allowed_hosts.is_empty() { LOCALHOST.to_vec() } else { setup.allowed_hosts.clone() };
    let mut values = vec![(ALLOWED_HOSTS.to_owned(), hosts.join(","))];
    values.extend(setup.max_sessions.map(|n| (MAX_SESSIONS.to_owned(), n.to_string())));
    values.extend(setup.lease_ms.map(|ms| (LEASE_MS.to_owned(), ms.to_string())));
    values.extend(setup.max_detached_ms.map(|ms| (MAX_DETACHED_MS.to_owned(), ms.to_string())));
    values.extend(setup.max_batch.map(|n| (MAX_BATCH.to_owned(), n.to_string())));
    EdgeHost::from_compiled(&compiled_edge_app(), kv, Variables::new(values)).expect("link the app")
}

/// A runtime with `hosts` servers, each started by `serve(i, runtime, listener)` on a loopback
/// listener of its own, behind [`round_robin`]; the proxy's address.
fn behind_round_robin(
    hosts: usize,
    mut serve: impl FnMut(usize, &tokio::runtime::Runtime, tokio::net::TcpListener),
) -> (tokio::runtime::Runtime, SocketAddr) {
    let (runtime, listener) = runtime_and_listener();
    let backends = (0..hosts)
        .map(|i| {
            let backend = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
            let addr = backend.local_addr().unwrap();
            serve(i, &runtime, backend);
            addr
        })
        .collect();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(round_robin(listener, backends));
    (runtime, addr)
}

/// Hands each accepted connection to the next of `backends` in turn, bytes both ways. When
/// the server stops reading (it refused an oversized body), what the client still sends is
/// read and dropped, so that closing never resets the connection before the client has read
/// the answer.
async fn round_robin(listener: tokio::net::TcpListener, backends: Vec<SocketAddr>) {
    use tokio::io::AsyncWriteExt;
    for turn in 0.. {
        let Ok((client, _)) = listener.accept().await else { return };
        let backend = backends[turn % backends.len()];
        tokio::spawn(async move {
            let Ok(server) = tokio::net::TcpStream::connect(backend).await else { return };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let ((mut from_client, mut to_client), (mut from_server, mut to_server)) =
                (client.into_split(), server.into_split());
            let up = tokio::spawn(async move {
                let _ = tokio::io::copy(&mut from_client, &mut to_server).await;
                let _ = to_server.shutdown().await;
                let _ = tokio::io::copy(&mut from_client, &mut tokio::io::sink()).await;
            });
            let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
            let _ = to_client.shutdown().await;
            let _ = tokio::time::timeout(Duration::from_secs(5), up).await;
        });
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// One SSE event as received.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    pub id: Option<String>,
    pub retry: Option<String>,
    pub data: String,
}

impl Frame {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or(Value::Null)
    }

    pub fn is_priming(&self) -> bool {
        self.id.is_some() && self.data.is_empty()
    }
}

/// A response whose body is read as it arrives.
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The next SSE frame, or `None` when the body ends or nothing arrives within `wait`.
    pub fn next_frame(&mut self, wait: Duration) -> Option<Frame> {
        self.reader.get_ref().set_read_timeout(Some(wait)).ok()?;
        let mut frame = Frame::default();
        let mut data: Vec<String> = Vec::new();
        let mut seen = false;
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if seen {
                    frame.data = data.join("\n");
                    return Some(frame);
                }
                continue;
            }
            seen = true;
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
            match field {
                "id" => frame.id = Some(value),
                "retry" => frame.retry = Some(value),
                "data" => data.push(value),
                _ => {}
            }
        }
    }

    /// Every frame until the server closes the body (at most `wait` between frames).
    pub fn frames_until_closed(&mut self, wait: Duration) -> Vec<Frame> {
        std::iter::from_fn(|| self.next_frame(wait)).collect()
    }

    pub fn body(mut self) -> String {
        let mut s = String::new();
        let _ = self.reader.get_ref().set_read_timeout(Some(Duration::from_secs(10)));
        let _ = self.reader.read_to_string(&mut s);
        s
    }

    pub fn json(self) -> Value {
        serde_json::from_str(&self.body()).unwrap_or(Value::Null)
    }
}

/// Sends one request; `headers` are added to `Host`, `Content-Length` and the MCP defaults.
pub fn request(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect");
    let mut head = format!("{method} /mcp HTTP/1.0\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("status line");
    let status = status_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((n, v)) = line.split_once(':') {
            headers.push((n.trim().to_owned(), v.trim().to_owned()));
        }
    }
    Response { status, headers, reader }
}

/// A session with the latest protocol, opened through `initialize`.
pub struct Client {
    pub addr: SocketAddr,
    pub session: String,
    pub version: &'static str,
}

pub const JSON: (&str, &str) = ("Content-Type", "application/json");
pub const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");

impl Client {
    pub fn initialize(addr: SocketAddr) -> Self {
        let resp = Self::send_initialize(addr);
        assert_eq!(resp.status, 200);
        let session = resp.header("mcp-session-id").expect("a session id").to_owned();
        Self { addr, session, version: "2025-11-25" }
    }

    /// A session, or the status that refused it.
    pub fn open(addr: SocketAddr) -> Result<Self, u16> {
        let resp = Self::send_initialize(addr);
        match resp.header("mcp-session-id") {
            Some(session) if resp.status == 200 => {
                Ok(Self { addr, session: session.to_owned(), version: "2025-11-25" })
            }
            _ => Err(resp.status),
        }
    }

    /// The status an `initialize` gets, for tests that expect a refusal.
    pub fn try_initialize(addr: SocketAddr) -> u16 {
        Self::send_initialize(addr).status
    }

    fn send_initialize(addr: SocketAddr) -> Response {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
        request(addr, "POST", &[JSON, ACCEPT], body.to_string().as_bytes())
    }

    fn headers<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut h = vec![
            JSON,
            ACCEPT,
            ("Mcp-Session-Id", self.session.as_str()),
            ("MCP-Protocol-Version", self.version),
        ];
        h.extend_from_slice(extra);
        h
    }

    pub fn post(&self, body: &Value, extra: &[(&str, &str)]) -> Response {
        request(self.addr, "POST", &self.headers(extra), body.to_string().as_bytes())
    }

    pub fn call(&self, id: i64, tool: &str, arguments: Value, extra: &[(&str, &str)]) -> Response {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool, "arguments": arguments, "_meta": {"progressToken": format!("p{id}")}}});
        self.post(&body, extra)
    }

    pub fn get(&self, last_event_id: Option<&str>) -> Response {
        let mut extra = Vec::new();
        if let Some(id) = last_event_id {
            extra.push(("Last-Event-ID", id));
        }
        request(self.addr, "GET", &self.headers(&extra), b"")
    }

    pub fn delete(&self) -> Response {
        request(self.addr, "DELETE", &self.headers(&[]), b"")
    }
}
