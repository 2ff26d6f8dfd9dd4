//! `resume-gate-oci`: push a component to an OCI registry, pull one back by its reference.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(version, about = "The gate's components as OCI artifacts (the layout `wkg oci push` writes).")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Push a component; prints the reference pinned by its digest (deploy that one).
    /// Credentials: REGISTRY_USERNAME and REGISTRY_PASSWORD.
    Push {
        /// The component (e.g. target/component/resume_gate.wasm).
        component: PathBuf,
        /// Where to: registry/repository:tag.
        reference: String,
    },
    /// Pull a component (by digest: registry/repository@sha256:…) and write it to a file.
    Pull {
        reference: String,
        #[arg(long)]
        out: PathBuf,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let auth = resume_gate_oci::auth_from_env();
    match Cli::parse().command {
        Command::Push { component, reference } => {
            let bytes =
                std::fs::read(&component).with_context(|| format!("reading {}", component.display()))?;
            let to = resume_gate_oci::reference(&reference)?;
            let pinned = resume_gate_oci::push(&bytes, &to, &auth).await?;
            println!("{pinned}");
        }
        Command::Pull { reference, out } => {
            let from = resume_gate_oci::reference(&reference)?;
            let bytes = resume_gate_oci::pull(&from, &auth).await?;
            std::fs::write(&out, &bytes).with_context(|| format!("writing {}", out.display()))?;
            eprintln!(
                "{} bytes, {}, written to {}",
                bytes.len(),
                resume_gate_oci::digest_of(&bytes),
                out.display()
            );
        }
    }
    Ok(())
}
