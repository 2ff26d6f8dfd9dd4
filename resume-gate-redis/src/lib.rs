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
//! hosts synchronously, so each is one blocking request on a connection of the store's own
//! pool, with no hand-off to another thread (an async client on a runtime of its own, waited
//! for per call, made a `tools/call` over Redis 5× slower in `cargo bench --bench redis`). A
//! caller on a worker of a multi-threaded tokio runtime waits inside `block_in_place`, so that
//! thread's other tasks move on. A connection that fails is dropped and the next call opens a
//! new one, so service resumes by itself after Redis restarts; a call that gets no answer
//! within [`CALL_TIMEOUT`] fails with a store error (the hosts answer `503`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::{Commands, Connection, ConnectionLike, RedisResult, Script};
use resume_gate::StoreError;
use resume_gate::kv::Kv;
use tokio::runtime::{Handle, RuntimeFlavor};

/// How long one call may wait for Redis before it fails.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// Idle connections the pool keeps; more callers at once open more, and those beyond this are
/// closed when their call ends.
const IDLE_KEPT: usize = 16;

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

/// Appends a line once per request, atomically: `KEYS[1]` the line counter, `KEYS[2]` the
/// request's key, `KEYS[3]` the prefix of the lines' keys (all under one hash tag); `ARGV[1]`
/// the line, `ARGV[2]` the most lines kept. Returns the line's number, the one the request got
/// before if it ran already, or 0 when the journal is full.
const APPEND_ONCE: &str = r"
local done = redis.call('GET', KEYS[2])
if done then return tonumber(done) end
local n = redis.call('INCR', KEYS[1])
if n > tonumber(ARGV[2]) then
  redis.call('DECR', KEYS[1])
  return 0
end
redis.call('SET', KEYS[3] .. string.format('%06d', n), ARGV[1])
redis.call('SET', KEYS[2], n)
return n
";

/// Why a script's outcome is not known or not had.
#[derive(Debug)]
pub enum ScriptError {
    /// It never reached the server (no connection could be made): it did nothing.
    NotSent(StoreError),
    /// It was sent and no answer came, or the answer was an error: it may have run.
    Unknown(StoreError),
}

/// A handle on one Redis database; clones share the connection pool.
#[derive(Clone)]
pub struct RedisKv {
    shared: Arc<Shared>,
    prefix: Arc<str>,
}

struct Shared {
    client: redis::Client,
    url: String,
    idle: Mutex<Vec<Connection>>,
    swap: Script,
    append_once: Script,
    calls: AtomicU64,
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
        let shared = Shared {
            client,
            url: url.to_owned(),
            idle: Mutex::new(Vec::new()),
            swap: Script::new(COMPARE_AND_SWAP),
            append_once: Script::new(APPEND_ONCE),
            calls: AtomicU64::new(0),
        };
        let kv = Self { shared: Arc::new(shared), prefix: Arc::from("") };
        let first = kv.open()?;
        kv.idle().push(first);
        Ok(kv)
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
        let mut keys: Vec<String> =
            self.run(|conn| conn.scan_match::<_, String>(pattern)?.collect::<RedisResult<Vec<String>>>())?;
        for key in &mut keys {
            key.drain(..self.prefix.len());
        }
        keys.sort();
        Ok(keys)
    }

    /// Appends `line` under `line_prefix` + its number, numbered by `counter`, once for
    /// `request` (its key remembers the number): one atomic script. `Ok(None)`: `max` lines are
    /// kept already.
    pub fn append_once(
        &self,
        counter: &str,
        request: &str,
        line_prefix: &str,
        line: &str,
        max: u64,
    ) -> Result<Option<u64>, ScriptError> {
        let script = &self.shared.append_once;
        let keys = [self.key(counter), self.key(request), self.key(line_prefix)];
        let mut sent = false;
        let n: Result<u64, StoreError> = self.run(|conn| {
            sent = true;
            script.key(&keys[0]).key(&keys[1]).key(&keys[2]).arg(line).arg(max).invoke(conn)
        });
        match n {
            Ok(0) => Ok(None),
            Ok(n) => Ok(Some(n)),
            Err(e) if sent => Err(ScriptError::Unknown(e)),
            Err(e) => Err(ScriptError::NotSent(e)),
        }
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        self.shared.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn open(&self) -> Result<Connection, StoreError> {
        let url = &self.shared.url;
        let conn = self.shared.client.get_connection_with_timeout(CALL_TIMEOUT).map_err(|e| error(url, e))?;
        conn.set_read_timeout(Some(CALL_TIMEOUT)).map_err(|e| error(url, e))?;
        conn.set_write_timeout(Some(CALL_TIMEOUT)).map_err(|e| error(url, e))?;
        Ok(conn)
    }

    /// Runs one call on a pooled connection (a new one if none is idle). A connection that
    /// failed is not given back.
    fn run<T>(&self, call: impl FnOnce(&mut Connection) -> RedisResult<T>) -> Result<T, StoreError> {
        self.shared.calls.fetch_add(1, Ordering::Relaxed);
        let blocking = || {
            let pooled = self.idle().pop();
            let mut conn = match pooled {
                Some(conn) => conn,
                None => self.open()?,
            };
            let answer = call(&mut conn);
            let broken = answer.as_ref().is_err_and(|e| e.is_unrecoverable_error() || e.is_timeout());
            if !broken && conn.is_open() {
                let mut idle = self.idle();
                if idle.len() < IDLE_KEPT {
                    idle.push(conn);
                }
            }
            answer.map_err(|e| StoreError(format!("redis: {e}")))
        };
        match Handle::try_current() {
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(blocking)
            }
            _ => blocking(),
        }
    }
}

impl Kv for RedisKv {
    type Handle = Watched;

    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let key = self.key(key);
        self.run(|conn| conn.get(key))
    }

    fn set(&mut self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let key = self.key(key);
        self.run(|conn| conn.set(key, value))
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        let key = self.key(key);
        self.run(|conn| conn.del(key))
    }

    fn increment(&mut self, key: &str, delta: i64) -> Result<i64, StoreError> {
        let key = self.key(key);
        self.run(|conn| conn.incr(key, delta))
    }

    fn watch(&mut self, key: &str) -> Result<(Option<Vec<u8>>, Watched), StoreError> {
        let value = self.get(key)?;
        let digest = value.as_deref().map(|v| sha1_smol::Sha1::from(v).digest().to_string());
        Ok((value, Watched { key: self.key(key), digest }))
    }

    /// A `SCAN` step under this handle's prefix: Redis's cursor is the page cursor (`0`: done).
    fn list_keys(&mut self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>), StoreError> {
        let pattern = format!("{}*", escape_glob(&self.prefix));
        let at = cursor.unwrap_or("0").to_owned();
        let (next, mut keys): (String, Vec<String>) = self.run(|conn| {
            redis::cmd("SCAN").arg(at).arg("MATCH").arg(pattern).arg("COUNT").arg(64).query(conn)
        })?;
        for key in &mut keys {
            key.drain(..self.prefix.len());
        }
        Ok((keys, (next != "0").then_some(next)))
    }

    fn swap(&mut self, watched: Watched, value: &[u8]) -> Result<bool, StoreError> {
        let script = &self.shared.swap;
        let wrote: i64 = self.run(|conn| {
            script.key(watched.key).arg(watched.digest.unwrap_or_default()).arg(value).invoke(conn)
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
