//! `--store` and what goes with it, one definition for every native host: where the state
//! lives, and how a Redis store is reached (timeout, prefix, expiry, TLS roots).
//!
//! The URL is taken apart at once into a [`StoreUrl`], so nothing after parsing can print its
//! password.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use resume_gate_redis::{Options, RedisKv, StoreUrl};

/// Where the gate's state lives, as the operator says.
#[derive(clap::Args, Clone, Debug)]
pub struct StoreArgs {
    /// Where the state lives: `memory` (this process, the default), or a Redis or Valkey
    /// server that any number of processes share: `redis://[USER:PASSWORD@]HOST:PORT[/DB]`,
    /// `rediss://…` for TLS, `redis+cluster://[USER:PASSWORD@]HOST:PORT[,HOST:PORT…]` for a
    /// Redis Cluster (`rediss+cluster://` with TLS). The password is never printed.
    #[arg(long, env = "RESUME_GATE_STORE", default_value = "memory", global = true)]
    pub store: String,
    /// How long one store command may wait before the call fails with `503`, in ms.
    #[arg(long, env = "RESUME_GATE_STORE_TIMEOUT_MS", default_value_t = 2000, global = true,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub store_timeout_ms: u64,
    /// Every key this deployment writes is `NAME:…` (journal included), so deployments that
    /// share a database never meet, and garbage collection scans only its own keys.
    #[arg(long, env = "RESUME_GATE_STORE_PREFIX", default_value = "rg", value_name = "NAME", global = true)]
    pub store_prefix: String,
    /// A session idle this long, in ms, is gone: in a Redis store every key of a session
    /// expires this long after it was last written (and every journal line after it was
    /// written), so what an idle session or a vanished deployment left behind goes without a
    /// garbage-collection pass; in memory (host-example), a session that saw no request and
    /// held no open response for this long is ended. 0: never.
    #[arg(long, env = "RESUME_GATE_SESSION_IDLE_MS", default_value_t = 24 * 60 * 60 * 1000, global = true)]
    pub session_idle_ms: u64,
    /// PEM certificates a `rediss://` server must chain to, instead of the system's roots.
    #[arg(long, env = "RESUME_GATE_STORE_CA", value_name = "FILE", global = true)]
    pub store_ca: Option<PathBuf>,
    /// Every write to a Redis store waits until a replica has it (`WAIT 1`), and the call fails
    /// with `503` when none acknowledges it within `--store-timeout-ms`: a failover then loses
    /// nothing a client was told. (Or run Redis with `appendfsync always`, and no failover to
    /// an asynchronous replica.)
    #[arg(long, env = "RESUME_GATE_STORE_DURABLE", global = true)]
    pub store_durable: bool,
}

impl StoreArgs {
    /// The Redis store, or `None` for `memory`.
    pub fn open(&self) -> Result<Option<RedisKv>> {
        if self.store == "memory" {
            return Ok(None);
        }
        let url = StoreUrl::parse(&self.store).map_err(|e| anyhow!("--store: {}", e.0))?;
        if self.store_prefix.is_empty() || self.store_prefix.contains(['*', '?', '[', ']', '{', '}']) {
            bail!("--store-prefix: a name without glob characters or braces");
        }
        let ca = match &self.store_ca {
            Some(path) => {
                Some(std::fs::read(path).with_context(|| format!("--store-ca {}", path.display()))?)
            }
            None => None,
        };
        let options = Options {
            timeout: Duration::from_millis(self.store_timeout_ms),
            prefix: self.store_prefix.clone(),
            ttl: (self.session_idle_ms > 0).then(|| Duration::from_millis(self.session_idle_ms)),
            ca,
            durable: self.store_durable,
        };
        let kv = RedisKv::open_with(&url, &options).map_err(|e| anyhow!("--store: {}", e.0))?;
        tracing::info!(store = %url, prefix = %self.store_prefix, durable = self.store_durable, "state in the store, shared with every process that uses it");
        Ok(Some(kv))
    }
}
