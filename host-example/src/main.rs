//! The command line: `host-example [serve]` (the MCP server) and `host-example demo` (the
//! seed scenario, through the real component, decision by decision).

mod demo;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Parser, Subcommand};
use gate_host::kv_world::{self, KvWorld};
use gate_host::memory::{self, MemoryWorld};
use gate_host::supervised::{DEFAULT_MEMORY_LIMIT, KvMaker, MemoryMaker, Supervised};
use host_example::{App, Instances, Journal, Settings};
use mcp_transport::gate::GateApi;
use mcp_transport::hosts::AllowedHosts;

/// A sample MCP Streamable HTTP server whose event ids, replays and stale-cursor decisions
/// all come from the resume-gate component.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP on http://BIND:PORT/mcp (the default).
    Serve,
    /// Play the seed's stale-cursor scenario through the gate and print each decision.
    Demo,
}

#[derive(Args)]
struct ServeArgs {
    #[arg(long, env = "RESUME_GATE_PORT", default_value_t = 8080)]
    port: u16,
    #[arg(long, env = "RESUME_GATE_BIND", default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// Where the `append` tool writes its lines.
    #[arg(long, env = "RESUME_GATE_JOURNAL", default_value = "journal.txt")]
    journal: std::path::PathBuf,
    /// A name this server answers to (`Host`, and `Origin` when sent): `NAME` for any port,
    /// `NAME:PORT` for one; repeat it for several. Without it: localhost names and the bind
    /// address only (DNS-rebinding protection).
    #[arg(
        long = "allowed-host",
        value_name = "NAME",
        env = "RESUME_GATE_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    allowed_hosts: Vec<String>,
    /// Sessions the gate keeps at once; when full, the one idle longest that holds no work
    /// is reclaimed for a newcomer.
    #[arg(long, env = "RESUME_GATE_MAX_SESSIONS")]
    max_sessions: Option<u32>,
    /// Bytes the gate keeps in all (events, ids, records); default 256 MiB.
    #[arg(long, env = "RESUME_GATE_MAX_TOTAL_BYTES")]
    max_total_bytes: Option<u64>,
    /// Bytes one session may hold, its share of the total; default 16 MiB.
    #[arg(long, env = "RESUME_GATE_MAX_BYTES_PER_SESSION")]
    max_bytes_per_session: Option<u64>,
    /// Serve the gate's counters and the server's own at `/metrics` (Prometheus text format)
    /// on the same port. Off by default: anyone who reaches the port could read them.
    #[arg(long, env = "RESUME_GATE_METRICS")]
    metrics: bool,
    /// `--store` (in the component instance by default, or Redis: the `append` journal
    /// moves there too) and how the store is reached.
    #[command(flatten)]
    store: gate_host::store_args::StoreArgs,
    /// How long a running call's process holds its stream without an event or heartbeat, in
    /// milliseconds (with `--store`: a resume on another process gets the call's error this
    /// long after its process died); default 10000.
    #[arg(long, env = "RESUME_GATE_LEASE_MS")]
    lease_ms: Option<u64>,
    /// How long a stream may go without a connection, in milliseconds, before it stops
    /// holding its session and, for a call, before the call is given up (its client then gets
    /// `-32001` on reconnect); default: the lease.
    #[arg(long, env = "RESUME_GATE_MAX_DETACHED_MS", value_parser = clap::value_parser!(u64).range(1..))]
    max_detached_ms: Option<u64>,
    /// Messages one 2025-03-26 JSON-RPC batch may hold; more is `400`.
    #[arg(long, env = "RESUME_GATE_MAX_BATCH", default_value_t = mcp_transport::server::DEFAULT_MAX_BATCH as u64,
          value_parser = clap::value_parser!(u64).range(1..=resume_gate::MAX_BATCH_REQUESTS as u64))]
    max_batch: u64,
    /// 2026-07-28 calls (and `subscriptions/listen` streams) open at once; more is `503`. They
    /// have no session, so the gate's bounds do not reach them.
    #[arg(long, env = "RESUME_GATE_MAX_STATELESS_CALLS", default_value_t = host_example::app::DEFAULT_MAX_STATELESS_CALLS as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_stateless_calls: u64,
    /// 2026-07-28 tasks kept at once, running or finished (each until its TTL); more: `503`.
    /// With `--store` the bound is the store's, shared by every process.
    #[arg(long, env = "RESUME_GATE_MAX_TASKS", default_value_t = mcp_transport::tasks::TaskSettings::default().max_tasks,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    max_tasks: u64,
    /// How long a task is kept from its creation, in milliseconds (`ttlMs`); then `tasks/get`
    /// no longer knows it.
    #[arg(long, env = "RESUME_GATE_TASK_TTL_MS", default_value_t = mcp_transport::tasks::TaskSettings::default().ttl_ms,
          value_parser = clap::value_parser!(u64).range(1000..=7 * 24 * 3_600_000))]
    task_ttl_ms: u64,
    /// On SIGTERM (a deploy): how long the calls running here may take to finish, in ms, before
    /// they are given up (their clients' reconnects then get `-32001` at once, on any process).
    #[arg(long, env = "RESUME_GATE_DRAIN_MS", default_value_t = 10_000)]
    drain_ms: u64,
    /// With `--store`: every this many seconds, a pass that collects what processes killed
    /// mid-call left in the store (`collect-garbage`); 0: never (another process does it).
    #[arg(long, env = "RESUME_GATE_COLLECT_EVERY", default_value_t = 60)]
    collect_every: u64,
    /// The gate component to run instead of the one this binary was built with: a file, such
    /// as one pulled from a registry (`resume-gate-oci pull`). The memory world
    /// (`target/component/resume_gate.wasm`), or with `--store` the key-value world
    /// (`target/component-kv/resume_gate.wasm`).
    #[arg(long, env = "RESUME_GATE_COMPONENT")]
    component: Option<String>,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Demo) => demo::run(),
        Some(Command::Serve) | None => serve(cli.serve),
    }
}

fn serve(args: ServeArgs) -> Result<()> {
    tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let hosts = allowed_hosts(&args.allowed_hosts, args.bind)?;
    if args.allowed_hosts.is_empty() && args.bind.is_unspecified() {
        tracing::warn!(
            "listening on all interfaces but answering only localhost names: add --allowed-host for the names clients use"
        );
    }
    let defaults = resume_gate::Config::default();
    let config = resume_gate::Config {
        max_sessions: args.max_sessions.unwrap_or(defaults.max_sessions),
        max_total_bytes: args.max_total_bytes.unwrap_or(defaults.max_total_bytes),
        max_bytes_per_session: args.max_bytes_per_session.unwrap_or(defaults.max_bytes_per_session),
        lease_ms: args.lease_ms.unwrap_or(defaults.lease_ms),
        max_detached_ms: args.max_detached_ms,
        ..defaults
    };
    let mut collector = None;
    let mut settings = Settings::new(hosts, config.clone());
    settings.max_batch = args.max_batch as usize;
    settings.max_stateless_calls = args.max_stateless_calls as usize;
    settings.tasks.max_tasks = args.max_tasks;
    settings.tasks.ttl_ms = args.task_ttl_ms;
    let app = match args.store.open()? {
        None => {
            let path = args.component.as_deref().unwrap_or(gate_host::GATE_MEMORY_WASM);
            let pre = memory::prepare(&wasmtime::Engine::default(), path)
                .with_context(|| format!("{path}: not the gate's memory world (without --store)"))?;
            let mut gate =
                Supervised::<MemoryWorld>::new(MemoryMaker { pre, memory_limit: DEFAULT_MEMORY_LIMIT })?;
            gate.configure(&config).map_err(|e| anyhow!("the gate's bounds: {e}"))?;
            let idle = args.store.session_idle_ms;
            let settings = Settings { session_idle_ms: (idle > 0).then_some(idle), ..settings };
            App::new(Instances::single(Box::new(gate)), Journal::open(args.journal)?, settings)
        }
        Some(redis) => {
            let kv: gate_host::keyvalue::SharedKv = redis.into();
            let path = args.component.as_deref().unwrap_or(gate_host::GATE_KV_WASM);
            let pre = kv_world::prepare_from(&wasmtime::Engine::default(), path)
                .with_context(|| format!("{path}: not the gate's key-value world (with --store)"))?;
            let maker = KvMaker { pre, kv: kv.clone() };
            let make = {
                let (maker, config) = (maker.clone(), config.clone());
                move || -> Result<host_example::instances::Instance> {
                    let mut gate = Supervised::<KvWorld>::new(maker.clone())?;
                    gate.configure(&config).map_err(|e| anyhow!("the gate's bounds: {e}"))?;
                    Ok(Box::new(gate))
                }
            };
            let first = make()?;
            if args.collect_every > 0 {
                let every = std::time::Duration::from_secs(args.collect_every);
                collector = Some(gate_host::collector::Collector::spawn(kv.clone(), every, config.clone())?);
            }
            let settings = settings.shared_over(&kv);
            App::new(Instances::pool(first, Box::new(make)), Journal::in_store(kv), settings)
        }
    };
    if args.metrics {
        app.enable_metrics();
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let served = runtime.block_on(host_example::http::serve(
        app,
        std::net::SocketAddr::new(args.bind, args.port),
        std::time::Duration::from_millis(args.drain_ms),
    ));
    drop(collector);
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    served
}

/// The configured names, or localhost and the bind address.
fn allowed_hosts(configured: &[String], bind: std::net::IpAddr) -> Result<AllowedHosts> {
    let invalid = AllowedHosts::invalid(configured);
    if !invalid.is_empty() {
        bail!("--allowed-host: not a host name or address (with an optional :PORT): {}", invalid.join(", "));
    }
    if !configured.is_empty() {
        return Ok(AllowedHosts::new(configured));
    }
    let hosts = AllowedHosts::localhost();
    Ok(if bind.is_unspecified() { hosts } else { hosts.with(&AllowedHosts::entry_for(bind)) })
}
