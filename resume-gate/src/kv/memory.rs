//! A `Kv` in this process's memory, answering as one of Spin's backends does: the store of
//! edge-host's in-process map and of the tests.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::StoreError;

use super::Kv;

/// A `Kv` in process memory that many gates (and threads) can share by cloning it.
///
/// It answers as one of Spin's backends does (`Semantics`), so that the gate is tested
/// against each: a swap on a key that changed (or was deleted) since it was watched fails.
/// Every call is counted, so tests and benchmarks can report round trips.
#[derive(Clone, Default)]
pub struct MemoryKv {
    shared: Arc<Mutex<Shared>>,
}

/// Which of Spin's key-value backends a [`MemoryKv`] behaves like.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Semantics {
    /// The default SQLite store: a counter is 8 little-endian bytes; a swap on a key that was
    /// absent when watched is an unconditional upsert.
    #[default]
    Sqlite,
    /// The Redis store: a counter is ASCII decimal (`INCRBY`); a swap commits only if the key
    /// is unchanged (`WATCH`, `MULTI`, `EXEC`) and then answers `cas-failed` whether or not it
    /// committed (the failing `UNWATCH key` Spin sends after `EXEC`).
    Redis,
}

#[derive(Default)]
struct Shared {
    map: BTreeMap<String, (u64, Vec<u8>)>,
    next_version: u64,
    calls: u64,
    /// Bytes of keys and values that crossed to or from the store.
    bytes: u64,
    semantics: Semantics,
}

/// A `MemoryKv` watch: the key and the version it held (`None`: absent).
pub struct Watched {
    key: String,
    version: Option<u64>,
}

impl MemoryKv {
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that answers like `semantics`.
    pub fn with_semantics(semantics: Semantics) -> Self {
        let kv = Self::default();
        kv.shared().semantics = semantics;
        kv
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Calls made so far, by every clone.
    pub fn calls(&self) -> u64 {
        self.shared().calls
    }

    /// Bytes of keys and values that crossed to or from the store so far, by every clone: what
    /// a networked store would carry.
    pub fn bytes(&self) -> u64 {
        self.shared().bytes
    }

    pub fn len(&self) -> usize {
        self.shared().map.len()
    }

    /// Every key, in order (`wasi:keyvalue` `list-keys` for a host; the gate never lists).
    pub fn keys(&self) -> Vec<String> {
        let mut s = self.shared();
        s.calls += 1;
        s.map.keys().cloned().collect()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every key and value, in key order: for tests that check bounds and look for leaks.
    pub fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        self.shared().map.iter().map(|(k, (_, v))| (k.clone(), v.clone())).collect()
    }
}

impl Shared {
    /// One call carrying `key` and `value` bytes.
    fn count(&mut self, key: &str, value: usize) {
        self.calls += 1;
        self.bytes += (key.len() + value) as u64;
    }

    fn write(&mut self, key: &str, value: Vec<u8>) {
        self.next_version += 1;
        self.map.insert(key.to_owned(), (self.next_version, value));
    }
}

/// Keys a `MemoryKv` lists per page.
const PAGE: usize = 64;

impl Kv for MemoryKv {
    type Handle = Watched;

    fn list_keys(&mut self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>), StoreError> {
        use std::ops::Bound;
        let mut s = self.shared();
        let from = cursor.map_or(Bound::Unbounded, |c| Bound::Excluded(c.to_owned()));
        let mut keys: Vec<String> = s
            .map
            .range::<String, _>((from, Bound::Unbounded))
            .take(PAGE + 1)
            .map(|(k, _)| k.clone())
            .collect();
        let more = keys.len() > PAGE;
        keys.truncate(PAGE);
        let bytes: usize = keys.iter().map(String::len).sum();
        s.count("", bytes);
        let next = if more { keys.last().cloned() } else { None };
        Ok((keys, next))
    }

    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let mut s = self.shared();
        let value = s.map.get(key).map(|(_, v)| v.clone());
        s.count(key, value.as_ref().map_or(0, Vec::len));
        Ok(value)
    }

    fn set(&mut self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let mut s = self.shared();
        s.count(key, value.len());
        s.write(key, value.to_vec());
        Ok(())
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        let mut s = self.shared();
        s.count(key, 0);
        s.map.remove(key);
        Ok(())
    }

    fn increment(&mut self, key: &str, delta: i64) -> Result<i64, StoreError> {
        let mut s = self.shared();
        s.count(key, 8);
        let not_a_counter = || StoreError(format!("{key}: not a counter"));
        let current = match (s.map.get(key), s.semantics) {
            (None, _) => 0,
            (Some((_, v)), Semantics::Sqlite) => {
                i64::from_le_bytes(v.as_slice().try_into().map_err(|_| not_a_counter())?)
            }
            (Some((_, v)), Semantics::Redis) => {
                std::str::from_utf8(v).ok().and_then(|v| v.parse().ok()).ok_or_else(not_a_counter)?
            }
        };
        let sum = current.checked_add(delta).ok_or_else(not_a_counter)?;
        let stored = match s.semantics {
            Semantics::Sqlite => sum.to_le_bytes().to_vec(),
            Semantics::Redis => sum.to_string().into_bytes(),
        };
        s.write(key, stored);
        Ok(sum)
    }

    fn watch(&mut self, key: &str) -> Result<(Option<Vec<u8>>, Watched), StoreError> {
        let mut s = self.shared();
        let (version, value) = match s.map.get(key) {
            Some((ver, v)) => (Some(*ver), Some(v.clone())),
            None => (None, None),
        };
        s.count(key, value.as_ref().map_or(0, Vec::len));
        Ok((value, Watched { key: key.to_owned(), version }))
    }

    fn swap(&mut self, handle: Watched, value: &[u8]) -> Result<bool, StoreError> {
        let mut s = self.shared();
        s.count(&handle.key, value.len());
        let current = s.map.get(&handle.key).map(|(ver, _)| *ver);
        let wins = match s.semantics {
            Semantics::Sqlite => handle.version.is_none() || current == handle.version,
            Semantics::Redis => current == handle.version,
        };
        if wins {
            s.write(&handle.key, value.to_vec());
        }
        Ok(wins && s.semantics == Semantics::Sqlite)
    }
}
