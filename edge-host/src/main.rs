//! `edge-host`: serves the Spin app (front + gate-kv, composed) per request on
//! http://BIND:PORT/mcp, for those without the `spin` CLI. `edge-host compose --out FILE`
//! writes the composed component instead.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use edge_host::serve::{EdgeHost, Tcp};

#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[arg(long, env = "RESUME_GATE_PORT", default_value_t = 3000)]
    port: u16,
    #[arg(long, env = "RESUME_GATE_BIND", default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// Leave Nagle's algorithm on (no `TCP_NODELAY`), as Spin may: only for measuring the
    /// front's own write coalescing.
    #[arg(long)]
    nagle: bool,
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
        Some(Command::Serve) | None => {
            let host = EdgeHost::built()?;
            let addr = std::net::SocketAddr::new(cli.bind, cli.port);
            let tcp = if cli.nagle { Tcp::Nagle } else { Tcp::NoDelay };
            tokio::runtime::Runtime::new()?.block_on(host.serve(addr, tcp))
        }
    }
}
