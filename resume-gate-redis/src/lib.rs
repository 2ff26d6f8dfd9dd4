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
//! within [`Options::timeout`] fails with a store error (the hosts answer `503`).
//!
//! What an operator sets ([`Options`]): the timeout, a prefix that namespaces every key (two
//! deployments on one database never meet, and a `SCAN` covers only its own), an expiry on
//! every key a session owns (renewed whenever it is written, so what an idle session or a
//! vanished deployment left behind goes by itself), and for `rediss://` the roots to trust.
//! The URL's password is printed nowhere ([`StoreUrl`]).
//!
//! A follower (a GET or resume served by one process while another records the stream's
//! events) does not poll: every swap of a stream head publishes on the stream's channel from
//! inside its script (no extra round trip), and [`Wakeups`] — one subscribed connection per
//! process — wakes the followers of that stream.

mod conn;
mod url;
mod wakeups;

pub use url::StoreUrl;
pub use wakeups::{Wakeup, Wakeups};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use conn::{Backend, Conn};
use redis::{Commands, ConnectionLike, RedisResult, Script};
use resume_gate::StoreError;
use resume_gate::kv::{KeyKind, Kv, outlives_its_session, outlives_sessions, parse_key};
use tokio::runtime::{Handle, RuntimeFlavor};

/// How long one call may wait for Redis before it fails, by default.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// How a host uses the store: set by the operator (`--store-timeout-ms`, `--store-prefix`,
/// `--session-idle-ms`, `--store-ca`).
#[derive(Clone, Debug)]
pub struct Options {
    /// How long one command may wait for its answer (and a connection for its handshake).
    pub timeout: Duration,
    /// Every key is `{prefix}:{key}`; empty: keys as the gate names them.
    pub prefix: String,
    /// Every key a session owns, and every journal line, expires this long after it was last
    /// written; `None`: never. The few global counters never expire.
    pub ttl: Option<Duration>,
    /// PEM roots a `rediss://` server's certificate must chain to, instead of the system's.
    pub ca: Option<Vec<u8>>,
    /// Every write waits until a replica has it (`WAIT 1`), and fails when none acknowledges
    /// it within the timeout: a failover to that replica then loses nothing acknowledged.
    pub durable: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self { timeout: CALL_TIMEOUT, prefix: String::new(), ttl: None, ca: None, durable: false }
    }
}

/// Idle connections the pool keeps; more callers at once open more, and those beyond this are
/// closed when their call ends.
const IDLE_KEPT: usize = 16;

/// Writes `ARGV[2]` under `KEYS[1]` if the key holds a value whose SHA-1 is `ARGV[1]`, or is
/// absent and `ARGV[1]` is empty, with expiry `ARGV[3]` ms (`0`: none); returns 1 when it
/// wrote, and then publishes on channel `ARGV[4]` unless it is empty (a stream head's wake-up).
const COMPARE_AND_SWAP: &str = r"
local current = redis.call('GET', KEYS[1])
if current == false then
  if ARGV[1] ~= '' then return 0 end
elseif redis.sha1hex(current) ~= ARGV[1] then
  return 0
end
if ARGV[3] == '0' then
  redis.call('SET', KEYS[1], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
if ARGV[4] ~= '' then redis.call('PUBLISH', ARGV[4], '') end
return 1
";

/// Appends a line once per request, atomically: `KEYS[1]` the line counter, `KEYS[2]` the
/// request's key, `KEYS[3]` the prefix of the lines' keys (all under one hash tag); `ARGV[1]`
/// the line, `ARGV[2]` the most lines kept, `ARGV[3]` the expiry in ms (`0`: none) of the
/// line and the request's key, which the counter's renews (it goes with the last line). Returns the line's number, the one the request got
/// before if it ran already, or 0 when the journal is full.
const APPEND_ONCE: &str = r"
local done = redis.call('GET', KEYS[2])
if done then return tonumber(done) end
local n = redis.call('INCR', KEYS[1])
if n > tonumber(ARGV[2]) then
  redis.call('DECR', KEYS[1])
  return 0
end
if ARGV[3] == '0' then
  redis.call('SET', KEYS[3] .. string.format('%06d', n), ARGV[1])
  redis.call('SET', KEYS[2], n)
else
  redis.call('SET', KEYS[3] .. string.format('%06d', n), ARGV[1], 'PX', ARGV[3])
  redis.call('SET', KEYS[2], n, 'PX', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return n
";

/// Creates a record that counts against a bound, atomically: `KEYS[1]` the record, `KEYS[2]`
/// the sorted set of live records (score: expiry, ms; one hash tag with `KEYS[1]`); `ARGV[1]`
/// the value, `ARGV[2]` its expiry in ms, `ARGV[3]` the most live records, `ARGV[4]` now (ms),
/// `ARGV[5]` the record's member name. Returns 1, or 0 when full or the key exists.
const CREATE_BOUNDED: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 0 end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[2], tonumber(ARGV[4]) + tonumber(ARGV[2]), ARGV[5])
return 1
";

/// `KEYS[1]` becomes `ARGV[2]` if it holds `ARGV[1]`, keeping its expiry; 1 if it did.
const SWAP_KEEPING_EXPIRY: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
";

/// `INCRBY KEYS[1] ARGV[1]`, then with `ARGV[2]` ms (`0`: none) `PEXPIRE`: one round trip on
/// a cluster, which takes no pipelines (one server gets the two as a pipeline).
const INCREMENT: &str = r"
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if ARGV[2] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
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
    pub(crate) shared: Arc<Shared>,
    pub(crate) prefix: Arc<str>,
}

pub(crate) struct Shared {
    pub(crate) backend: Backend,
    url: StoreUrl,
    pub(crate) timeout: Duration,
    /// Expiry in milliseconds; 0: none.
    ttl_ms: u64,
    durable: bool,
    idle: Mutex<Vec<Conn>>,
    swap: Script,
    append_once: Script,
    increment: Script,
    create_bounded: Script,
    swap_keeping_expiry: Script,
    calls: AtomicU64,
}

/// What `watch` read, for `swap`: the key and the SHA-1 of its value (`None`: absent).
pub struct Watched {
    key: String,
    ttl_ms: u64,
    digest: Option<String>,
    /// Where a successful swap announces itself: a stream head's wake-up channel, or empty.
    channel: String,
}

impl RedisKv {
    /// Connects to `url` (`redis://HOST:PORT[/DB]`) with the default options; fails if the
    /// server does not answer.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        Self::open_with(&StoreUrl::parse(url)?, &Options::default())
    }

    /// Connects to `url` as `options` say; fails (naming the URL without its password) if the
    /// server does not answer or refuses the credentials.
    pub fn open_with(url: &StoreUrl, options: &Options) -> Result<Self, StoreError> {
        let backend = Backend::new(url, options).map_err(|e| error(url, &e))?;
        let ttl_ms = options.ttl.map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1));
        let shared = Shared {
            backend,
            url: url.clone(),
            timeout: options.timeout.max(Duration::from_millis(1)),
            ttl_ms,
            durable: options.durable,
            idle: Mutex::new(Vec::new()),
            swap: Script::new(COMPARE_AND_SWAP),
            append_once: Script::new(APPEND_ONCE),
            increment: Script::new(INCREMENT),
            create_bounded: Script::new(CREATE_BOUNDED),
            swap_keeping_expiry: Script::new(SWAP_KEEPING_EXPIRY),
            calls: AtomicU64::new(0),
        };
        let prefix = if options.prefix.is_empty() { String::new() } else { format!("{}:", options.prefix) };
        let kv = Self { shared: Arc::new(shared), prefix: Arc::from(prefix) };
        let first = kv.open()?;
        kv.idle().push(first);
        Ok(kv)
    }

    /// The store's URL, as it may be shown.
    pub fn url(&self) -> &StoreUrl {
        &self.shared.url
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
        let (mut keys, mut cursor) = (Vec::new(), None);
        loop {
            let (page, next) = self.clone().list_keys(cursor.as_deref())?;
            keys.extend(page);
            let Some(next) = next else { break };
            cursor = Some(next);
        }
        keys.sort();
        keys.dedup();
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
        let n: Result<u64, StoreError> = self.write(&keys[0], |conn| {
            sent = true;
            script
                .key(&keys[0])
                .key(&keys[1])
                .key(&keys[2])
                .arg(line)
                .arg(max)
                .arg(self.shared.ttl_ms)
                .invoke(conn)
        });
        match n {
            Ok(0) => Ok(None),
            Ok(n) => Ok(Some(n)),
            Err(e) if sent => Err(ScriptError::Unknown(e)),
            Err(e) => Err(ScriptError::NotSent(e)),
        }
    }

    /// Stores `value` under `key` for `ttl_ms` unless it exists or `live` (a sorted set on
    /// `key`'s hash tag) holds `max` unexpired members: one atomic script. `Ok(false)`: full.
    /// The bound for records that expire on their own (tasks), where a counter would drift.
    pub fn create_bounded(
        &self,
        key: &str,
        live: &str,
        value: &[u8],
        ttl_ms: u64,
        max: u64,
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        let (full_key, live) = (self.key(key), self.key(live));
        let created: i64 = self.write(&full_key, |conn| {
            let script = &self.shared.create_bounded;
            let mut invocation = script.key(&full_key);
            invocation.key(&live).arg(value).arg(ttl_ms.max(1)).arg(max).arg(now_ms).arg(key);
            invocation.invoke(conn)
        })?;
        Ok(created == 1)
    }

    /// `key` becomes `new` if it holds `old`, keeping its expiry: one atomic script.
    pub fn swap_keeping_expiry(&self, key: &str, old: &[u8], new: &[u8]) -> Result<bool, StoreError> {
        let key = self.key(key);
        let swapped: i64 = self
            .write(&key, |conn| self.shared.swap_keeping_expiry.key(&key).arg(old).arg(new).invoke(conn))?;
        Ok(swapped == 1)
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Conn>> {
        self.shared.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The expiry, in ms, a write of `key` sets (0: none).
    fn ttl_for(&self, key: &str) -> u64 {
        if outlives_sessions(key) {
            0
        } else if outlives_its_session(key) {
            self.shared.ttl_ms.saturating_mul(2)
        } else {
            self.shared.ttl_ms
        }
    }

    fn open(&self) -> Result<Conn, StoreError> {
        self.shared.backend.connect(self.shared.timeout).map_err(|e| error(&self.shared.url, &e))
    }

    /// Runs one call on a pooled connection (a new one if none is idle). A connection that
    /// failed is not given back.
    fn run<T>(&self, call: impl FnOnce(&mut Conn) -> RedisResult<T>) -> Result<T, StoreError> {
        self.shared.calls.fetch_add(1, Ordering::Relaxed);
        let blocking = || {
            let started = std::time::Instant::now();
            let pooled = self.idle().pop();
            let fresh = pooled.is_none();
            let mut conn = match pooled {
                Some(conn) => conn,
                None => self.open()?,
            };
            if fresh {
                // One timeout for the whole call: what opening the connection took is spent.
                let left =
                    self.shared.timeout.saturating_sub(started.elapsed()).max(Duration::from_millis(1));
                conn.set_timeout(left).map_err(|e| error(&self.shared.url, &e))?;
            }
            let answer = call(&mut conn);
            if fresh && answer.is_ok() {
                let _ = conn.set_timeout(self.shared.timeout);
            }
            let broken = answer.as_ref().is_err_and(|e| e.is_unrecoverable_error() || e.is_timeout());
            if !broken && conn.is_open() {
                let mut idle = self.idle();
                if idle.len() < IDLE_KEPT {
                    idle.push(conn);
                }
            }
            answer.map_err(|e| error(&self.shared.url, &e))
        };
        match Handle::try_current() {
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(blocking)
            }
            _ => blocking(),
        }
    }
}

impl RedisKv {
    /// Runs a write; with [`Options::durable`], on the same connection, `WAIT` for a replica
    /// to have it (and everything this connection wrote before).
    fn write<T>(&self, key: &str, call: impl FnOnce(&mut Conn) -> RedisResult<T>) -> Result<T, StoreError> {
        if !self.shared.durable {
            return self.run(call);
        }
        // Answered before the connection's own read timeout runs out.
        let wait_ms = u64::try_from(self.shared.timeout.as_millis() * 3 / 4).unwrap_or(u64::MAX).max(1);
        let (value, replicas) = self.run(|conn| {
            let value = call(conn)?;
            let replicas = conn.wait_for_replica(key, wait_ms)?;
            Ok((value, replicas))
        })?;
        if replicas < 1 {
            let url = &self.shared.url;
            return Err(StoreError(format!(
                "redis at {url}: no replica acknowledged a write within {wait_ms} ms (--store-durable)"
            )));
        }
        Ok(value)
    }
}

impl Kv for RedisKv {
    type Handle = Watched;

    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let key = self.key(key);
        self.run(|conn| conn.get(key))
    }

    fn set(&mut self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let ttl = self.ttl_for(key);
        let key = self.key(key);
        match ttl {
            0 => self.write(&key, |conn| conn.set(&key, value)),
            ms => self.write(&key, |conn| conn.pset_ex(&key, value, ms)),
        }
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        let key = self.key(key);
        self.write(&key, |conn| conn.del(&key))
    }

    /// `INCRBY`, and with an expiry `PEXPIRE` in the same round trip (a pipeline, or on a
    /// cluster a script; also when adding 0 reads it: a counter read into being expires like
    /// one written).
    fn increment(&mut self, key: &str, delta: i64) -> Result<i64, StoreError> {
        let ttl = self.ttl_for(key);
        let key = self.key(key);
        let script = &self.shared.increment;
        let add = |conn: &mut Conn| match ttl {
            0 => conn.incr(&key, delta),
            ms if conn.supports_pipelining() => {
                let (n,): (i64,) =
                    redis::pipe().incr(&key, delta).pexpire(&key, ms as i64).ignore().query(conn)?;
                Ok(n)
            }
            ms => script.key(&key).arg(delta).arg(ms).invoke(conn),
        };
        // Adding 0 reads the counter: nothing for a replica to acknowledge.
        if delta == 0 { self.run(add) } else { self.write(&key, add) }
    }

    fn watch(&mut self, key: &str) -> Result<(Option<Vec<u8>>, Watched), StoreError> {
        let value = self.get(key)?;
        let digest = value.as_deref().map(|v| sha1_smol::Sha1::from(v).digest().to_string());
        let channel = match parse_key(key) {
            Some((_, KeyKind::Stream(_))) => wakeups::channel(&self.prefix, key),
            _ => String::new(),
        };
        Ok((value, Watched { key: self.key(key), ttl_ms: self.ttl_for(key), digest, channel }))
    }

    /// A `SCAN` step under this handle's prefix: Redis's cursor is the page cursor (`0`: done).
    fn list_keys(&mut self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>), StoreError> {
        let pattern = format!("{}*", escape_glob(&self.prefix));
        let (mut keys, next) = self.run(|conn| conn.scan_step(cursor, &pattern))?;
        for key in &mut keys {
            key.drain(..self.prefix.len());
        }
        Ok((keys, next))
    }

    fn swap(&mut self, watched: Watched, value: &[u8]) -> Result<bool, StoreError> {
        let script = &self.shared.swap;
        let wrote: i64 = self.write(&watched.key.clone(), |conn| {
            script
                .key(watched.key)
                .arg(watched.digest.unwrap_or_default())
                .arg(value)
                .arg(watched.ttl_ms)
                .arg(&watched.channel)
                .invoke(conn)
        })?;
        Ok(wrote == 1)
    }
}

/// A store error that names the store without its password, whatever the client wrote.
fn error(url: &StoreUrl, e: &redis::RedisError) -> StoreError {
    StoreError(url.scrub(&format!("redis at {url}: {e}")))
}

/// `prefix` as a `SCAN MATCH` pattern that matches it literally.
pub(crate) fn escape_glob(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len());
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
