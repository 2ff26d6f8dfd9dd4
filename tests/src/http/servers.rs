//! The servers under test on a loopback port: host-example (either world), the Spin app
//! served by edge-host, two of either behind a proxy that alternates connections, the SDK
//! packages' example servers in processes of their own.

use std::net::SocketAddr;
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
use host_example::{App, Instances, Journal, Settings};
use mcp_transport::gate::GateApi;
use mcp_transport::hosts::{AllowedHosts, LOCALHOST};
use resume_gate::kv::{MemoryKv, Semantics};
use serde_json::json;
use wasmtime::Engine;
use wasmtime::component::Component;

use super::client::{Client, Frame};
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
    let mut gate: Box<dyn GateApi + Send> = Box::new(gate);
    gate.configure(&setup.config()).expect("a valid configuration");
    app_with(Instances::single(gate), Journal::open(journal).expect("open the journal"), setup)
}

/// host-example's app over `kv` (`--store`): world `gate-kv`, the journal in the store too.
fn app_over(kv: resume_gate_redis::RedisKv, setup: &Setup) -> std::sync::Arc<App> {
    let kv: SharedKv = kv.into();
    let maker = KvMaker { pre: prepared_kv(), kv: kv.clone() };
    let config = setup.config();
    let make = move || -> anyhow::Result<host_example::instances::Instance> {
        let mut gate = Supervised::<KvWorld>::new(maker.clone())?;
        gate.configure(&config).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Box::new(gate))
    };
    let first = make().expect("instantiate gate-kv");
    let settings = settings(setup).shared_over(&kv);
    App::new(Instances::pool(first, Box::new(make)), Journal::in_store(kv), settings)
}

fn settings(setup: &Setup) -> Settings {
    let mut settings =
        Settings { max_batch: setup.max_batch(), ..Settings::new(setup.hosts(), setup.config()) };
    if let Some(max) = setup.max_stateless_calls {
        settings.max_stateless_calls = max;
    }
    settings
}

fn app_with(instances: Instances, journal: Journal, setup: &Setup) -> std::sync::Arc<App> {
    App::new(instances, journal, settings(setup))
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
    /// host-example's `--max-stateless-calls`.
    pub max_stateless_calls: Option<usize>,
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

    /// host-example set up as `setup` says (Nagle's algorithm on or off, `--allowed-host`).
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
        Self::two_host_examples_over(crate::redis::shared().kv(&crate::redis::fresh_prefix()))
    }

    /// Two host-examples over `kv`, behind the round-robin proxy.
    fn two_host_examples_over(kv: resume_gate_redis::RedisKv) -> Self {
        let apps: Vec<_> = (0..2).map(|_| app_over(kv.clone(), &Setup::default())).collect();
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

    /// The same two over a Redis Cluster of three masters (`redis+cluster://`): sessions spread
    /// over the masters by their hash tags.
    pub fn two_host_examples_over_cluster() -> Self {
        let kv = resume_gate_redis::RedisKv::connect(&crate::redis_cluster::shared().url())
            .expect("connect to the test cluster")
            .with_prefix(&crate::redis::fresh_prefix());
        Self::two_host_examples_over(kv)
    }

    /// host-example over any `gate` (the benches' host without one, say), with a journal in a
    /// directory of its own.
    pub fn host_example_over_gate(mut gate: Box<dyn GateApi + Send>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.txt");
        gate.configure(&Setup::default().config()).expect("a valid configuration");
        let app = app_with(
            Instances::single(gate),
            Journal::open(journal.clone()).expect("open the journal"),
            &Setup::default(),
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

    /// The Spin app set up as `setup` says: Nagle's algorithm left on (the front's own write coalescing is all
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

    /// The Node package's example on the TypeScript SDK 2.x: the gate's sessions (a
    /// `WebStandardStreamableHTTPServerTransport` each) beside the SDK's 2026-07-28 entry.
    pub fn node_v2_example() -> Self {
        Self::sdk_example(crate::sdk_hosts::node_v2_example, crate::sdk_hosts::Store::Gate)
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
