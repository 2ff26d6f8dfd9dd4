//! `edge-host`: serves the Spin app (front + gate-kv, composed) per request on
//! http://BIND:PORT/mcp, for those without the `spin` CLI. `edge-host compose --out FILE`
//! writes the composed component instead.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use edge_host::keyvalue::SharedKv;
use edge_host::serve::EdgeHost;
use edge_host::variables::{self, Variables};
use gate_host::net::Tcp;
use mcp_transport::hosts::{AllowedHosts, LOCALHOST};
use resume_gate::kv::{MemoryKv, Semantics};

#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[arg(long, env = "RESUME_GATE_PORT", default_value_t = 3000)]
    port: u16,
    #[arg(long, env = "RESUME_GATE_BIND", default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// A name the app answers to (`Host`, and `Origin` when sent): `NAME` for any port,
    /// `NAME:PORT` for one; repeat it for several. It becomes the app's `allowed_hosts`
    /// variable, as `SPIN_VARIABLE_ALLOWED_HOSTS` does under Spin. Without it: localhost names
    /// and the bind address only (DNS-rebinding protection).
    #[arg(
        long = "allowed-host",
        value_name = "NAME",
        env = "RESUME_GATE_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    allowed_hosts: Vec<String>,
    /// Sessions the gate keeps at once (the app's `max_sessions` variable, as
    /// `SPIN_VARIABLE_MAX_SESSIONS` sets it under Spin).
    #[arg(long, env = "RESUME_GATE_MAX_SESSIONS")]
    max_sessions: Option<u32>,
    /// How long a running call's instance holds its stream without an event or heartbeat, in
    /// milliseconds (the app's `lease_ms` variable; default 10000).
    #[arg(long, env = "RESUME_GATE_LEASE_MS", global = true)]
    lease_ms: Option<u64>,
    /// How long a stream may go without a connection before it stops holding its session and,
    /// for a call, before the call is given up, in milliseconds (the app's `max_detached_ms`
    /// variable; default: the lease).
    #[arg(long, env = "RESUME_GATE_MAX_DETACHED_MS", value_parser = clap::value_parser!(u64).range(1..))]
    max_detached_ms: Option<u64>,
    /// Messages one 2025-03-26 JSON-RPC batch may hold (the app's `max_batch` variable;
    /// default 64); more is `400`.
    #[arg(long, env = "RESUME_GATE_MAX_BATCH",
          value_parser = clap::value_parser!(u64).range(1..=resume_gate::MAX_BATCH_REQUESTS as u64))]
    max_batch: Option<u64>,
    /// Which of Spin's key-value backends the in-process store answers like: `sqlite` (the
    /// default store) or `redis` (a swap answers `cas-failed` even when it committed, counters
    /// are ASCII decimal), to run the app against either.
    #[arg(long, value_enum, default_value_t = KvSemantics::Sqlite)]
    kv_semantics: KvSemantics,
    /// `--store` (a map in this process by default, or Redis: sessions, streams, events and
    /// the `append` journal) and how the store is reached.
    #[command(flatten)]
    store: gate_host::store_args::StoreArgs,
    /// Every this many seconds, a pass that collects what instances killed mid-request left
    /// in the store (`collect-garbage`, off the request path); 0: never (another process
    /// sharing the store does it).
    #[arg(long, env = "RESUME_GATE_COLLECT_EVERY", default_value_t = 60)]
    collect_every: u64,
    /// On SIGTERM (a deploy): how long the requests running here may take to finish, in ms,
    /// before they are stopped.
    #[arg(long, env = "RESUME_GATE_DRAIN_MS", default_value_t = 10_000)]
    drain_ms: u64,
    /// The composed app to serve instead of composing the front and gate this binary was
    /// built with: a file, such as one `compose` wrote or one pulled from a registry
    /// (`resume-gate-oci pull`).
    #[arg(long, env = "RESUME_GATE_APP")]
    app: Option<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum KvSemantics {
    Sqlite,
    Redis,
}

impl From<KvSemantics> for Semantics {
    fn from(s: KvSemantics) -> Self {
        match s {
            KvSemantics::Sqlite => Semantics::Sqlite,
            KvSemantics::Redis => Semantics::Redis,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Serve the app (the default).
    Serve,
    /// Write the composed component (front + gate) to a file and print the sizes.
    Compose {
        #[arg(long, default_value = "resume-gate-spin.wasm")]
        out: PathBuf,
    },
    /// Run one pass of garbage collection over `--store` and exit: for a store that hosts
    /// without a collecting thread share (a Spin app on Redis), from a scheduler such as cron.
    /// Run it more often than twice the lease for request-id claims to free promptly.
    CollectGarbage,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    match cli.command {
        Some(Command::Compose { out }) => {
            let composed = edge_host::compose::compose_built()?;
            std::fs::write(&out, &composed)?;
            let size = |p: &str| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
            println!("front      {:>8} bytes  {}", size(edge_host::FRONT_WASM), edge_host::FRONT_WASM);
            println!("gate-kv    {:>8} bytes  {}", size(edge_host::GATE_KV_WASM), edge_host::GATE_KV_WASM);
            println!("composed   {:>8} bytes  {}", composed.len(), out.display());
            Ok(())
        }
        Some(Command::CollectGarbage) => {
            let kv = store(&cli)?;
            let defaults = resume_gate::Config::default();
            let config =
                resume_gate::Config { lease_ms: cli.lease_ms.unwrap_or(defaults.lease_ms), ..defaults };
            let pre = edge_host::kv_world::prepare(&wasmtime::Engine::default())?;
            let removed = gate_host::collector::collect_pass(&pre, &kv, &config)?;
            println!("removed {removed} keys");
            Ok(())
        }
        Some(Command::Serve) | None => {
            let invalid = AllowedHosts::invalid(&cli.allowed_hosts);
            if !invalid.is_empty() {
                anyhow::bail!(
                    "--allowed-host: not a host name or address (with an optional :PORT): {}",
                    invalid.join(", ")
                );
            }
            let mut hosts = cli.allowed_hosts.clone();
            if hosts.is_empty() {
                hosts.extend(LOCALHOST.map(str::to_owned));
                if !cli.bind.is_unspecified() {
                    hosts.push(AllowedHosts::entry_for(cli.bind));
                }
            }
            let mut values = vec![(variables::ALLOWED_HOSTS.to_owned(), hosts.join(","))];
            values.extend(cli.max_sessions.map(|n| (variables::MAX_SESSIONS.to_owned(), n.to_string())));
            values.extend(cli.lease_ms.map(|ms| (variables::LEASE_MS.to_owned(), ms.to_string())));
            values.extend(
                cli.max_detached_ms.map(|ms| (variables::MAX_DETACHED_MS.to_owned(), ms.to_string())),
            );
            values.extend(cli.max_batch.map(|n| (variables::MAX_BATCH.to_owned(), n.to_string())));
            let variables = Variables::new(values);
            let kv = store(&cli)?;
            let _collector = match cli.collect_every {
                0 => None,
                secs => {
                    let defaults = resume_gate::Config::default();
                    let config = resume_gate::Config {
                        lease_ms: cli.lease_ms.unwrap_or(defaults.lease_ms),
                        ..defaults
                    };
                    let every = std::time::Duration::from_secs(secs);
                    Some(gate_host::collector::Collector::spawn(kv.clone(), every, config)?)
                }
            };
            let host = match &cli.app {
                None => EdgeHost::built(kv, variables)?,
                Some(path) => {
                    let app = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
                    EdgeHost::new(&app, kv, variables)
                        .with_context(|| format!("{}: not a resume-gate Spin app", path.display()))?
                }
            };
            let addr = std::net::SocketAddr::new(cli.bind, cli.port);
            let drain = std::time::Duration::from_millis(cli.drain_ms);
            let runtime = tokio::runtime::Runtime::new()?;
            let served = runtime.block_on(host.serve_until_stopped(addr, Tcp::NoDelay, drain));
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            served
        }
    }
}

fn store(cli: &Cli) -> Result<SharedKv> {
    Ok(match cli.store.open()? {
        None => MemoryKv::with_semantics(cli.kv_semantics.into()).into(),
        Some(redis) => redis.into(),
    })
}
