//! The gate's state in a key-value store shared by many instances (`wasi:keyvalue`).
//!
//! Hosts such as Spin run a fresh instance per request, so state must outlive the instance,
//! and two instances may touch one session at once. The layout is one key per record:
//!
//! | key | value |
//! | --- | --- |
//! | `rg/sessions` | counter: open sessions (for `max-sessions`) |
//! | `rg/s/{session}` | session record (epoch, standalone stream, listed streams) |
//! | `rg/n/{session}` | counter: last stream number handed out |
//! | `rg/r/{session}/{request}` | counter: claims of a JSON-RPC request id |
//! | `rg/t/{session}/{stream}` | stream record (state, attachment, buffer index) |
//! | `rg/e/{session}/{stream}/{key}` | one event's data |
//! | `rg/q/tail`, `rg/q/head` | counters: the admission queue's ends |
//! | `rg/q/{slot}` | the session queued in that slot |
//! | `rg/p/{session}` | the slot the session is queued in |
//!
//! Admission at `max-sessions` needs the session idle longest that holds no work, and a
//! key-value store has no ordered index to ask. Sessions therefore queue in creation order;
//! admission takes sessions from the head and reclaims the first that holds no work, and a
//! session that still does goes back to the tail (a second chance), at most
//! `ADMISSION_PROBES` per call: constant work, never a listing of the bucket.
//!
//! Why it is safe with concurrent instances:
//! - numbers come from atomic `increment` (stream numbers, request-id claims), never from a
//!   compare-and-swap that creates a key: Spin's CAS on an absent key is an unconditional
//!   upsert. Counter keys are never `set` (Spin's increment panics on a value that is not 8
//!   bytes).
//! - records change only by compare-and-swap on a value read before (the gate retries a lost
//!   race from a fresh load), so two writers never both win;
//! - an event's data goes under a key of its own (random per instance, plus a counter) before
//!   the record that lists it is swapped in, so no record names missing data and no writer
//!   clobbers another's event; a sequence number is assigned by the swap that publishes it;
//! - a record is removed by first swapping in a tombstone (the empty value), so a slower
//!   writer's swap fails instead of resurrecting it; the key is deleted afterwards.
//!
//! Values are postcard with a leading format byte. Session ids are escaped (`%` and `/`) so
//! that no key of one session is a prefix-collision with another's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::config::Millis;
use crate::error::StoreError;
use crate::session::SessionMeta;
use crate::store::{Store, holds_no_work};
use crate::stream::{EventKey, RequestId, StreamMeta, StreamNo};

/// The operations of `wasi:keyvalue/store` and `wasi:keyvalue/atomics` the gate needs.
pub trait Kv {
    /// What `watch` remembers for `swap` (a `wasi:keyvalue/atomics.cas`).
    type Handle;
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;
    fn set(&mut self, key: &str, value: &[u8]) -> Result<(), StoreError>;
    fn delete(&mut self, key: &str) -> Result<(), StoreError>;
    /// Atomically adds `delta` to the 8-byte counter under `key` (absent: 0) and returns the sum.
    fn increment(&mut self, key: &str, delta: i64) -> Result<i64, StoreError>;
    /// Reads a key for a later `swap`.
    fn watch(&mut self, key: &str) -> Result<(Option<Vec<u8>>, Self::Handle), StoreError>;
    /// Writes `value` if the key still holds what `watch` read; `false` if another writer won.
    fn swap(&mut self, handle: Self::Handle, value: &[u8]) -> Result<bool, StoreError>;
}

const FORMAT: u8 = 1;
const SESSION_COUNT: &str = "rg/sessions";
const QUEUE_TAIL: &str = "rg/q/tail";
const QUEUE_HEAD: &str = "rg/q/head";
/// Queued sessions one admission looks at before it gives up (`too-many-sessions`); the ones
/// it passed over wait at the tail, so the next admission looks at others.
const ADMISSION_PROBES: usize = 8;

/// A `Store` over any `Kv`.
pub struct KvStore<K: Kv> {
    kv: K,
    next_event_key: EventKey,
}

impl<K: Kv> KvStore<K> {
    /// `seed` should be random per instance: event keys start from it, so two instances
    /// writing to one stream never pick the same key.
    pub fn new(kv: K, seed: u64) -> Self {
        Self { kv, next_event_key: seed }
    }

    pub fn kv(&mut self) -> &mut K {
        &mut self.kv
    }

    fn load<T: DeserializeOwned>(&mut self, key: &str) -> Result<Option<(T, K::Handle)>, StoreError> {
        let (value, handle) = self.kv.watch(key)?;
        Ok(decode(key, value)?.map(|v| (v, handle)))
    }

    /// Swaps in a tombstone; returns the record it replaced, if this call removed it.
    fn bury<T: DeserializeOwned>(&mut self, key: &str) -> Result<Option<T>, StoreError> {
        for _ in 0..64 {
            let Some((old, handle)) = self.load::<T>(key)? else {
                return Ok(None);
            };
            if self.kv.swap(handle, &[])? {
                return Ok(Some(old));
            }
        }
        Err(StoreError(format!("{key}: still contended after 64 attempts")))
    }

    fn counter(&mut self, key: &str) -> Result<i64, StoreError> {
        Ok(match self.kv.get(key)? {
            Some(bytes) => bytes.as_slice().try_into().map(i64::from_le_bytes).unwrap_or(0),
            None => 0,
        })
    }

    /// Queues a session at the tail of the admission queue.
    fn enqueue(&mut self, session: &str) -> Result<(), StoreError> {
        let slot = self.kv.increment(QUEUE_TAIL, 1)?;
        self.kv.set(&queue_key(slot), session.as_bytes())?;
        self.kv.set(&slot_key(session), &slot.to_le_bytes())
    }

    /// Takes the session at the head of the queue, if any: `Some(None)` for a slot whose
    /// session has ended since.
    fn dequeue(&mut self) -> Result<Option<Option<String>>, StoreError> {
        if self.counter(QUEUE_HEAD)? >= self.counter(QUEUE_TAIL)? {
            return Ok(None);
        }
        let slot = self.kv.increment(QUEUE_HEAD, 1)?;
        if slot > self.counter(QUEUE_TAIL)? {
            // Another instance took the last slot first: give this one back.
            self.kv.increment(QUEUE_HEAD, -1)?;
            return Ok(None);
        }
        let key = queue_key(slot);
        let Some(id) = self.kv.get(&key)? else { return Ok(Some(None)) };
        self.kv.delete(&key)?;
        Ok(Some(String::from_utf8(id).ok()))
    }

    fn holds_no_work(
        &mut self,
        session: &SessionMeta,
        now: Millis,
        retention: Millis,
    ) -> Result<bool, StoreError> {
        let mut streams = Vec::with_capacity(session.streams.len());
        for no in &session.streams {
            if let Some((st, _)) = self.load::<StreamMeta>(&stream_key(&session.id, *no))?
                && st.epoch == session.epoch
            {
                streams.push(st);
            }
        }
        let touched = streams.iter().map(|st| st.last_active).fold(session.last_active, Millis::max);
        Ok(holds_no_work(&streams, touched, now, retention))
    }

    fn drop_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError> {
        let keys: Vec<EventKey> = meta.buffer.iter().map(|b| b.key).collect();
        self.delete_events(session, meta.no, &keys)?;
        if let Some(id) = meta.origin.request_id() {
            self.kv.delete(&claim_key(session, id))?;
        }
        self.kv.delete(&stream_key(session, meta.no))
    }
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    let mut bytes = vec![FORMAT];
    bytes.extend(postcard::to_allocvec(value).map_err(|e| StoreError(format!("encoding a record: {e}")))?);
    Ok(bytes)
}

/// `None` for an absent key or a tombstone.
fn decode<T: DeserializeOwned>(key: &str, value: Option<Vec<u8>>) -> Result<Option<T>, StoreError> {
    match value.as_deref() {
        None | Some([]) => Ok(None),
        Some([FORMAT, rest @ ..]) => postcard::from_bytes(rest)
            .map(Some)
            .map_err(|e| StoreError(format!("{key}: unreadable record: {e}"))),
        Some(_) => Err(StoreError(format!("{key}: record of an unknown format"))),
    }
}

fn escape(session: &str) -> String {
    session.replace('%', "%25").replace('/', "%2F")
}

fn session_key(session: &str) -> String {
    format!("rg/s/{}", escape(session))
}

fn stream_counter_key(session: &str) -> String {
    format!("rg/n/{}", escape(session))
}

fn stream_key(session: &str, no: StreamNo) -> String {
    format!("rg/t/{}/{no}", escape(session))
}

fn event_key(session: &str, no: StreamNo, key: EventKey) -> String {
    format!("rg/e/{}/{no}/{key:016x}", escape(session))
}

fn queue_key(slot: i64) -> String {
    format!("rg/q/{slot}")
}

fn slot_key(session: &str) -> String {
    format!("rg/p/{}", escape(session))
}

fn claim_key(session: &str, id: &RequestId) -> String {
    let id = match id {
        RequestId::Number(n) => format!("n{n}"),
        RequestId::Text(t) => format!("t{}", hex::encode(&Sha256::digest(t.as_bytes())[..16])),
    };
    format!("rg/r/{}/{id}", escape(session))
}

impl<K: Kv> Store for KvStore<K> {
    type Version = K::Handle;

    fn session(&mut self, id: &str) -> Result<Option<(SessionMeta, K::Handle)>, StoreError> {
        self.load(&session_key(id))
    }

    fn create_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError> {
        self.kv.increment(SESSION_COUNT, 1)?;
        self.kv.set(&session_key(&meta.id), &encode(meta)?)?;
        self.enqueue(&meta.id)
    }

    fn save_session(&mut self, meta: &SessionMeta, version: K::Handle) -> Result<bool, StoreError> {
        self.kv.swap(version, &encode(meta)?)
    }

    fn remove_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError> {
        let key = session_key(&meta.id);
        let Some(current) = self.bury::<SessionMeta>(&key)? else {
            return Ok(());
        };
        self.kv.increment(SESSION_COUNT, -1)?;
        for no in &current.streams {
            if let Some(stream) = self.bury::<StreamMeta>(&stream_key(&meta.id, *no))? {
                self.drop_stream(&meta.id, &stream)?;
            }
        }
        self.kv.delete(&stream_counter_key(&meta.id))?;
        let slot = slot_key(&meta.id);
        if let Some(bytes) = self.kv.get(&slot)? {
            if let Ok(n) = bytes.as_slice().try_into().map(i64::from_le_bytes) {
                self.kv.delete(&queue_key(n))?;
            }
            self.kv.delete(&slot)?;
        }
        self.kv.delete(&key)
    }

    fn session_count(&mut self) -> Result<u64, StoreError> {
        let count = match self.kv.get(SESSION_COUNT)? {
            Some(bytes) => bytes.as_slice().try_into().map(i64::from_le_bytes).unwrap_or(0),
            None => 0,
        };
        Ok(u64::try_from(count).unwrap_or(0))
    }

    /// From the admission queue (see the module docs): the first of at most
    /// `ADMISSION_PROBES` queued sessions that holds no work.
    fn idlest_session(
        &mut self,
        now: Millis,
        retention: Millis,
        except: &str,
    ) -> Result<Option<String>, StoreError> {
        for _ in 0..ADMISSION_PROBES {
            let Some(taken) = self.dequeue()? else { return Ok(None) };
            let Some(id) = taken else { continue };
            let Some((session, _)) = self.session(&id)? else {
                self.kv.delete(&slot_key(&id))?;
                continue;
            };
            if id != except && self.holds_no_work(&session, now, retention)? {
                return Ok(Some(id));
            }
            self.enqueue(&id)?;
        }
        Ok(None)
    }

    fn bytes_held(&mut self, _: Option<&str>) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }

    fn oldest_answered_buffer(&mut self, _: Option<&str>) -> Result<Option<(String, StreamNo)>, StoreError> {
        Ok(None)
    }

    fn allocate_stream_no(&mut self, session: &str) -> Result<StreamNo, StoreError> {
        let no = self.kv.increment(&stream_counter_key(session), 1)?;
        u64::try_from(no).map_err(|_| StoreError("stream counter went negative".into()))
    }

    fn claim_request(&mut self, session: &str, id: &RequestId) -> Result<bool, StoreError> {
        Ok(self.kv.increment(&claim_key(session, id), 1)? == 1)
    }

    fn stream(&mut self, session: &str, no: StreamNo) -> Result<Option<(StreamMeta, K::Handle)>, StoreError> {
        self.load(&stream_key(session, no))
    }

    fn create_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError> {
        self.kv.set(&stream_key(session, meta.no), &encode(meta)?)
    }

    fn save_stream(&mut self, _: &str, meta: &StreamMeta, version: K::Handle) -> Result<bool, StoreError> {
        self.kv.swap(version, &encode(meta)?)
    }

    fn remove_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError> {
        match self.bury::<StreamMeta>(&stream_key(session, meta.no))? {
            Some(current) => self.drop_stream(session, &current),
            None => Ok(()),
        }
    }

    fn put_event(&mut self, session: &str, no: StreamNo, data: &str) -> Result<EventKey, StoreError> {
        let key = self.next_event_key;
        self.next_event_key = self.next_event_key.wrapping_add(1);
        self.kv.set(&event_key(session, no, key), data.as_bytes())?;
        Ok(key)
    }

    fn event_data(
        &mut self,
        session: &str,
        no: StreamNo,
        keys: &[EventKey],
    ) -> Result<Option<Vec<String>>, StoreError> {
        let mut data = Vec::with_capacity(keys.len());
        for key in keys {
            let name = event_key(session, no, *key);
            let Some(bytes) = self.kv.get(&name)? else {
                return Ok(None);
            };
            data.push(String::from_utf8(bytes).map_err(|_| StoreError(format!("{name}: not UTF-8")))?);
        }
        Ok(Some(data))
    }

    fn delete_events(&mut self, session: &str, no: StreamNo, keys: &[EventKey]) -> Result<(), StoreError> {
        for key in keys {
            self.kv.delete(&event_key(session, no, *key))?;
        }
        Ok(())
    }
}

/// A `Kv` in process memory that many gates (and threads) can share by cloning it.
///
/// It reproduces the semantics that bind the design, Spin's included: a swap on a key that
/// was absent when watched is an unconditional upsert; one on a key that changed (or was
/// deleted) since fails. Every call is counted, so tests and benchmarks can report round trips.
#[derive(Clone, Default)]
pub struct MemoryKv {
    shared: Arc<Mutex<Shared>>,
}

#[derive(Default)]
struct Shared {
    map: BTreeMap<String, (u64, Vec<u8>)>,
    next_version: u64,
    calls: u64,
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

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Calls made so far, by every clone.
    pub fn calls(&self) -> u64 {
        self.shared().calls
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
    fn write(&mut self, key: &str, value: Vec<u8>) {
        self.next_version += 1;
        self.map.insert(key.to_owned(), (self.next_version, value));
    }
}

impl Kv for MemoryKv {
    type Handle = Watched;

    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let mut s = self.shared();
        s.calls += 1;
        Ok(s.map.get(key).map(|(_, v)| v.clone()))
    }

    fn set(&mut self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let mut s = self.shared();
        s.calls += 1;
        s.write(key, value.to_vec());
        Ok(())
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        let mut s = self.shared();
        s.calls += 1;
        s.map.remove(key);
        Ok(())
    }

    fn increment(&mut self, key: &str, delta: i64) -> Result<i64, StoreError> {
        let mut s = self.shared();
        s.calls += 1;
        let current = match s.map.get(key) {
            None => 0,
            Some((_, v)) => {
                let bytes: [u8; 8] =
                    v.as_slice().try_into().map_err(|_| StoreError(format!("{key}: not a counter")))?;
                i64::from_le_bytes(bytes)
            }
        };
        let sum = current.wrapping_add(delta);
        s.write(key, sum.to_le_bytes().to_vec());
        Ok(sum)
    }

    fn watch(&mut self, key: &str) -> Result<(Option<Vec<u8>>, Watched), StoreError> {
        let mut s = self.shared();
        s.calls += 1;
        let entry = s.map.get(key);
        let handle = Watched { key: key.to_owned(), version: entry.map(|(ver, _)| *ver) };
        Ok((entry.map(|(_, v)| v.clone()), handle))
    }

    fn swap(&mut self, handle: Watched, value: &[u8]) -> Result<bool, StoreError> {
        let mut s = self.shared();
        s.calls += 1;
        let current = s.map.get(&handle.key).map(|(ver, _)| *ver);
        let wins = handle.version.is_none() || current == handle.version;
        if wins {
            s.write(&handle.key, value.to_vec());
        }
        Ok(wins)
    }
}
