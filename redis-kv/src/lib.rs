//! The gate's key-value store over Redis or Valkey, so that any number of host processes
//! serve one set of sessions.
//!
//! [`RedisKv`] implements the gate's [`Kv`] (the `wasi:keyvalue` `store` and `atomics` calls
//! the gate makes) with these semantics:
//!
//! - `swap` is a Lua script that writes only if the key still holds what `watch` read (compared
//!   by SHA-1, so the old value does not travel twice), and answers success exactly when it
//!   wrote — unlike Spin's Redis backend, whose `UNWATCH` after `EXEC` makes every swap look
//!   failed. A key absent when watched must still be absent.
//! - `increment` is `INCRBY`: counters are ASCII decimal, as on Spin's Redis backend (the gate
//!   reads counters only through `increment(key, 0)`).
//!
//! The calls are synchronous because wasmtime calls the key-value host functions of the gate's
//! hosts synchronously. Each call runs on a small tokio runtime owned by the store, over one
//! multiplexed connection with a connection manager (it reconnects by itself after Redis
//! restarts); the caller's thread waits for the answer, inside `block_in_place` when it is a
//! worker of a multi-threaded tokio runtime so that its other tasks move on. A call that gets
//! no answer within [`CALL_TIMEOUT`] fails with a store error (the hosts answer `503`).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, RedisResult, Script};
use resume_gate::StoreError;
use resume_gate::kv::Kv;
use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

/// How long one call may wait for Redis before it fails.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// Writes `ARGV[2]` under `KEYS[1]` if the key holds a value whose SHA-1 is `ARGV[1]`, or is
/// absent and `ARGV[1]` is empty; returns 1 when it wrote.
const COMPARE_AND_SWAP: &str = r"
local current = redis.call('GET', KEYS[1])
if current == false then
  if ARGV[1] ~= '' then return 0 end
elseif redis.sha1hex(current) ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2])
return 1
";

/// A handle on one Redis database; clones share the connection.
#[derive(Clone)]
pub struct RedisKv {
    shared: Arc<Shared>,
    prefix: Arc<str>,
}

struct Shared {
    /// Owned so that dropping the last clone stops it (without blocking: it may happen inside
    /// another runtime).
    runtime: Option<Runtime>,
    handle: Handle,
    conn: ConnectionManager,
    swap: Script,
    calls: AtomicU64,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// What `watch` read, for `swap`: the key and the SHA-1 of its value (`None`: absent).
pub struct Watched {
    key: String,
    digest: Option<String>,
}

impl RedisKv {
    /// Connects to `url` (`redis://HOST:PORT[/DB]`); fails if the server does not answer.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let client = redis::Client::open(url).map_err(|e| error(url, e))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("redis-kv")
            .enable_all()
            .build()
            .map_err(|e| StoreError(format!("starting the Redis runtime: {e}")))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CALL_TIMEOUT))
            .set_response_timeout(Some(CALL_TIMEOUT))
            .set_number_of_retries(2);
        let conn = runtime
            .block_on(async {
                tokio::time::timeout(CALL_TIMEOUT, ConnectionManager::new_with_config(client, config)).await
            })
            .map_err(|_| StoreError(format!("{url}: no answer within {CALL_TIMEOUT:?}")))?
            .map_err(|e| error(url, e))?;
        let handle = runtime.handle().clone();
        let shared = Shared {
            runtime: Some(runtime),
            handle,
            conn,
            swap: Script::new(COMPARE_AND_SWAP),
            calls: AtomicU64::new(0),
        };
        Ok(Self { shared: Arc::new(shared), prefix: Arc::from("") })
    }

    /// The same database with every key under `prefix` (tests share one server this way).
    pub fn with_prefix(&self, prefix: &str) -> Self {
        Self { shared: Arc::clone(&self.shared), prefix: Arc::from(prefix) }
    }

    /// Calls made so far, by every clone.
    pub fn calls(&self) -> u64 {
        self.shared.calls.load(Ordering::Relaxed)
    }

    /// Every key under this handle's prefix, without it (a `SCAN`: for tests and tools; the
    /// gate never lists).
    pub fn keys(&self) -> Result<Vec<String>, StoreError> {
        let pattern = format!("{}*", escape_glob(&self.prefix));
        let mut keys: Vec<String> = self.run(move |mut conn| async move {
            let mut keys = Vec::new();
            let mut iter = conn.scan_match::<_, String>(pattern).await?;
            while let Some(key) = iter.next_item().await {
                keys.push(key?);
            }
            Ok(keys)
        })?;
        for key in &mut keys {
            key.drain(..self.prefix.len());
        }
        keys.sort();
        Ok(keys)
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// Runs one call on the store's runtime and waits for it.
    fn run<T, F>(&self, call: impl FnOnce(ConnectionManager) -> F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Future<Output = RedisResult<T>> + Send + 'static,
    {
        self.shared.calls.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let call = call(self.shared.conn.clone());
        self.shared.handle.spawn(async move {
            let _ = tx.send(tokio::time::timeout(CALL_TIMEOUT, call).await);
        });
        let wait = move || rx.recv();
        let answer = match Handle::try_current() {
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(wait),
            _ => wait(),
        };
        match answer {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(e))) => Err(StoreError(format!("redis: {e}"))),
            Ok(Err(_)) => Err(StoreError(format!("redis: no answer within {CALL_TIMEOUT:?}"))),
            Err(_) => Err(StoreError("redis: the store's runtime stopped".into())),
        }
    }
}

impl Kv for RedisKv {
    type Handle = Watched;

    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let key = self.key(key);
        self.run(|mut conn| async move { conn.get(key).await })
    }

    fn set(&mut self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let (key, value) = (self.key(key), value.to_vec());
        self.run(|mut conn| async move { conn.set(key, value).await })
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        let key = self.key(key);
        self.run(|mut conn| async move { conn.del(key).await })
    }

    fn increment(&mut self, key: &str, delta: i64) -> Result<i64, StoreError> {
        let key = self.key(key);
        self.run(move |mut conn| async move { conn.incr(key, delta).await })
    }

    fn watch(&mut self, key: &str) -> Result<(Option<Vec<u8>>, Watched), StoreError> {
        let value = self.get(key)?;
        let digest = value.as_deref().map(|v| sha1_smol::Sha1::from(v).digest().to_string());
        Ok((value, Watched { key: self.key(key), digest }))
    }

    fn swap(&mut self, watched: Watched, value: &[u8]) -> Result<bool, StoreError> {
        let script = self.shared.swap.clone();
        let value = value.to_vec();
        let wrote: i64 = self.run(move |mut conn| async move {
            script
                .key(watched.key)
                .arg(watched.digest.unwrap_or_default())
                .arg(value)
                .invoke_async(&mut conn)
                .await
        })?;
        Ok(wrote == 1)
    }
}

fn error(url: &str, e: redis::RedisError) -> StoreError {
    StoreError(format!("{url}: {e}"))
}

/// `prefix` as a `SCAN MATCH` pattern that matches it literally.
fn escape_glob(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len());
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
