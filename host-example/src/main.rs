//! `host-example demo`: plays the seed scenario (`shared/spec/seed-stale-cursor.md`) through
//! the real component in wasmtime and prints each decision of the gate with its reason.

use anyhow::{Result, anyhow, bail};
use clap::{Args, Parser, Subcommand};
use host_example::serve::Tcp;
use host_example::types::{Decision, Event, GateError, Origin, RequestId, StaleReason};
use host_example::{GateExports, GateHost, HostState};
use mcp_transport::gate::GateApi as _;
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
    /// Serve without the gate (events without ids, nothing buffered, no resumption): only for
    /// measuring what the gate costs; clients that reconnect lose what they missed.
    #[arg(long)]
    no_gate: bool,
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
    /// Leave Nagle's algorithm on (no `TCP_NODELAY`): only for measuring the server's own
    /// write coalescing; kept-alive clients may then wait for delayed ACKs.
    #[arg(long)]
    nagle: bool,
    /// Where the gate's state lives: `memory` (in the component instance, the default) or
    /// `redis://HOST:PORT[/DB]` (a Redis or Valkey server that any number of host-example and
    /// edge-host processes share; the `append` journal moves there too).
    #[arg(long, env = "RESUME_GATE_STORE", default_value = "memory")]
    store: String,
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
    /// With `--store`: every this many seconds, a pass that collects what processes killed
    /// mid-call left in the store (`collect-garbage`); 0: never (another process does it).
    #[arg(long, env = "RESUME_GATE_COLLECT_EVERY", default_value_t = 60)]
    collect_every: u64,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Demo) => demo(),
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
    let app = match (args.no_gate, args.store.as_str()) {
        (true, "memory") => {
            tracing::warn!("serving without the gate: no event ids, no resumption (--no-gate)");
            host_example::serve::App::without_gate(args.journal, hosts)?
        }
        (true, _) => bail!("--no-gate keeps no state: it takes no --store"),
        (false, "memory") => {
            let mut gate = GateHost::load_default()?;
            gate.configure(&config).map_err(|e| anyhow!("the gate's bounds: {e}"))?;
            host_example::serve::App::new(gate, args.journal, hosts)?
        }
        (false, url) if url.starts_with("redis://") => {
            let kv = resume_gate_redis::RedisKv::connect(url).map_err(|e| anyhow!("--store: {}", e.0))?;
            let mut gate = host_example::store::KvGateHost::new(kv.into())?;
            gate.configure(&config).map_err(|e| anyhow!("the gate's bounds: {e}"))?;
            if args.collect_every > 0 {
                let every = std::time::Duration::from_secs(args.collect_every);
                collector = Some(kv_host::collector::Collector::spawn(gate.kv(), every, config.clone())?);
            }
            tracing::info!("state in {url}, shared with every process that uses it");
            host_example::serve::App::over_store(gate, hosts)?
        }
        (false, other) => bail!("--store: `memory` or `redis://HOST:PORT`, not `{other}`"),
    };
    let app = app.with_max_batch(args.max_batch as usize)?;
    if args.metrics {
        app.enable_metrics();
    }
    let tcp = if args.nagle { Tcp::Nagle } else { Tcp::NoDelay };
    let runtime = tokio::runtime::Runtime::new()?;
    let served = runtime.block_on(host_example::serve::serve(
        app,
        std::net::SocketAddr::new(args.bind, args.port),
        tcp,
    ));
    drop(collector);
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

fn demo() -> Result<()> {
    let mut host = GateHost::load_default()?;
    println!("gate component: {}", host_example::GATE_WASM);
    let (gate, store) = host.gate();

    let session = "demo-session";
    let epoch = ok(gate.call_open_session(&mut *store, session)?)?.epoch;
    println!("\nsession {session} opened, epoch {epoch:016x}");

    println!("\n1. POST tools/call (id 1, `append`): the gate opens a stream");
    let opened = ok(gate.call_open_stream(&mut *store, session, &Origin::Request(RequestId::Number(1)))?)?;
    show("   sent", &opened.priming);
    let message = r#"{"method":"notifications/progress"}"#;
    let progress = ok(gate.call_on_emit(&mut *store, session, opened.stream, message)?)?;
    println!("   sent id={} {message}", progress.id);

    println!("\n2. the connection drops; the tool finishes while nobody listens");
    ok(gate.call_on_detach(&mut *store, session, opened.stream, opened.attachment)?)?;
    let response = r#"{"id":1,"result":"3 lines"}"#;
    let result = ok(gate.call_on_terminal(&mut *store, session, opened.stream, response)?)?;
    println!("   recorded id={} {response} [terminal]", result.id);

    println!("\n3. GET with Last-Event-ID = the progress event: a valid continuation point");
    reconnect(gate, store, session, progress.id.as_bytes(), &Origin::Standalone)?;

    println!("\n4. GET with Last-Event-ID = the terminal event (the seed's failure 1)");
    println!("   the naive rule finds the id in its buffer and replays the result again");
    reconnect(gate, store, session, result.id.as_bytes(), &Origin::Standalone)?;

    println!("\n5. a new POST tools/call (id 2) carrying that same Last-Event-ID (the seed's failure 2)");
    reconnect(gate, store, session, result.id.as_bytes(), &Origin::Request(RequestId::Number(2)))?;

    println!("\n6. same session id, a cursor from the finished stream (the seed's failure 3)");
    reconnect(gate, store, session, progress.id.as_bytes(), &Origin::Standalone)?;

    println!("\n7. the session is re-issued (new epoch); the old cursor comes back");
    ok(gate.call_open_session(&mut *store, session)?)?;
    reconnect(gate, store, session, progress.id.as_bytes(), &Origin::Standalone)?;

    println!("\n8. a cursor minted for another session, and one that is garbage");
    ok(gate.call_open_session(&mut *store, "other-session")?)?;
    let other = ok(gate.call_open_stream(&mut *store, "other-session", &Origin::Standalone)?)?;
    reconnect(gate, store, session, other.priming.id.as_bytes(), &Origin::Standalone)?;
    reconnect(gate, store, session, b"1-2-3", &Origin::Standalone)?;

    let c = gate.call_read_counters(&mut *store)?;
    println!(
        "\ncounters: {} events emitted, {} resumes, {} events replayed, fresh: {}",
        c.events_emitted,
        c.resumes,
        c.events_replayed,
        c.fresh
            .iter()
            .filter(|f| f.count > 0)
            .map(|f| format!("{}={}", reason(f.reason), f.count))
            .collect::<Vec<_>>()
            .join(" ")
    );
    if c.resumes != 1 || c.events_replayed != 1 {
        bail!("the demo expected exactly one resume replaying one event");
    }
    Ok(())
}

fn reason(r: StaleReason) -> &'static str {
    host_example::convert::from_wit_reason(r).as_str()
}

fn ok<T>(r: Result<T, GateError>) -> Result<T> {
    r.map_err(|e| anyhow!("gate error: {e:?}"))
}

fn reconnect(
    gate: &GateExports,
    store: &mut wasmtime::Store<HostState>,
    session: &str,
    cursor: &[u8],
    origin: &Origin,
) -> Result<()> {
    explain(&ok(gate.call_on_reconnect(store, session, cursor, origin)?)?);
    Ok(())
}

fn show(verb: &str, e: &Event) {
    let what = if e.data.is_empty() { "(priming)" } else { &e.data };
    let terminal = if e.terminal { " [terminal]" } else { "" };
    println!("{verb} id={} {what}{terminal}", e.id);
}

fn explain(d: &Decision) {
    match d {
        Decision::Resume(r) => {
            println!("   gate: RESUME stream {}, replaying {} event(s)", r.stream, r.events.len());
            for e in &r.events {
                show("     replay", e);
            }
            if r.includes_terminal {
                println!("     the terminal is among them: the host closes the response after it");
            }
        }
        Decision::Fresh(f) => {
            println!(
                "   gate: FRESH ({}), nothing replayed; new stream {} starts with {}",
                reason(f.reason),
                f.opened.stream,
                f.opened.priming.id
            );
            for id in &f.stranded {
                println!("     stranded request {id:?}: the host answers it with a JSON-RPC error");
            }
        }
    }
}
