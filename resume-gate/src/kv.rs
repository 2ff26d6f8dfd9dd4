//! The gate's state in a key-value store shared by many instances (`wasi:keyvalue`).
//!
//! Hosts such as Spin run a fresh instance per request, so state must outlive the instance,
//! and two instances may touch one session at once. The layout is one key per record:
//!
//! | key | value |
//! | --- | --- |
//! | `rg/sessions` | counter: open sessions (for `max-sessions`) |
//! | `rg/changes` | counter: sessions created or removed (garbage collection's check) |
//! | `rg/bytes` | counter: bytes all sessions hold (for `max-total-bytes`) |
//! | `rg/count-check` | garbage collection's evidence that no session changed for a while |
//! | `rg/{session}/s` | session record (epoch, standalone stream, listed streams) |
//! | `rg/{session}/n` | counter: last stream number handed out |
//! | `rg/{session}/b` | counter: bytes the session holds (for `max-bytes-per-session`) |
//! | `rg/{session}/r/{request}` | counter: claims of a JSON-RPC request id |
//! | `rg/{session}/x/{request}` | when garbage collection first found that claim held by no stream |
//! | `rg/{session}/t/{stream}` | stream head (state, attachment, sequence numbers, writers) |
//! | `rg/{session}/e/{stream}/{writer}.{n}` | one event's data |
//! | `rg/{session}/p` | the admission-queue slot the session is queued in |
//! | `rg/q/tail`, `rg/q/head` | counters: the admission queue's ends |
//! | `rg/q/{slot}` | the session queued in that slot |
//!
//! Every key of a session carries the session's id in braces, a Redis Cluster hash tag: a
//! cluster keeps all of a session's keys on one shard, and sessions spread over the shards.
//! The gate never touches two keys in one call, so nothing needs keys on one shard but a
//! session's; the session count and the admission queue are shared by all sessions.
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
//! - an event's data goes under a key of its own — its writer (the instance's seed) and the
//!   writer's number for it — before the stream head that raises `last_seq` to it is swapped
//!   in, so no head names missing data and racing writers never clobber each other's data; a
//!   sequence number is assigned by the swap that publishes it. The head stays small whatever
//!   it buffers: it names the buffered range and, as runs of consecutive numbers, where their
//!   data is. An emit is three calls (write the event, watch the head, swap the head);
//! - a record is removed by first swapping in a tombstone, so a slower writer's swap fails
//!   instead of resurrecting it; the key is deleted afterwards.
//!
//! Backends differ, and the gate trusts only what every one of Spin's gets right:
//! - a swap's answer is not trusted when it says `cas-failed`: Spin's Redis backend says so
//!   even after it committed. Every record carries a version that each write raises by one,
//!   and the tokens (unique per write) of its last `WRITERS_KEPT` versions' writers, so a
//!   failed swap re-reads the key and counts as written when its version's token is its own.
//!   If more writes than that came in between, it counts as lost; the gate's retries of
//!   `on-emit` and of listing a stream notice their own committed change and do not repeat it.
//! - a counter's raw bytes are never decoded (SQLite stores 8 little-endian bytes, Redis ASCII
//!   decimal): it is read with `increment(key, 0)`.
//!
//! The byte budgets are kept as counters beside the records: every write of a session's
//! record, a stream head or a tombstone adds what it changed (the record's [`Charged`] cost,
//! which names the event data and claims a head lists) to the session's count and the total,
//! after it committed. An instance killed between the two leaves the counts off by one
//! write's change until the session ends (its removal takes what its count still holds off the
//! total, and so does garbage collection for a session that expired).
//!
//! What a killed instance leaves between two calls is collected off the request path
//! (`collect`). Records are values of a format byte, the version, the writers' tokens, then
//! postcard; event data is its write time, then the data. Session ids are
//! escaped (`%`, `/`, `{`, `}`) so that no key of one session is a prefix of another's and the
//! hash tag is the whole id.
//!
//! # Layout
//!
//! - this file: the `Kv` calls the gate needs, and `KvStore`, the gate's `Store` over them;
//! - `keys`: the key layout above, and parsing a key back;
//! - `record`: a record's bytes (format, version, writers' tokens, postcard) and event data's;
//! - `admission`: the admission queue;
//! - `collect`: garbage collection;
//! - `memory`: `MemoryKv`, a `Kv` in process that answers as one of Spin's backends.

mod admission;
mod collect;
mod keys;
mod memory;
mod record;

pub use keys::{
    KeyKind, claim_key, event_key, is_global_key, outlives_its_session, outlives_sessions, parse_key,
    session_key, stream_key,
};
pub use memory::{MemoryKv, Semantics, Watched};
pub use record::{is_record, read_record};

use keys::*;
use record::*;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::config::{Hold, Millis};
use crate::error::StoreError;
use crate::session::SessionMeta;
use crate::store::{
    AppendEdit, CLAIM_RECORD_BYTES, EVENT_RECORD_BYTES, Edit, MAX_ATTEMPTS, Store, Swept, contention,
    holds_no_work, session_cost, stream_record_bytes,
};
use crate::stream::StreamState;
use crate::stream::{DataKey, EventRef, RequestId, Seq, StreamMeta, StreamNo};

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
    /// One page of the bucket's keys, from `cursor` (`None`: the first page) on, and the
    /// cursor of the next page (`None`: this was the last). Only garbage collection lists.
    fn list_keys(&mut self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>), StoreError>;
}

/// A `Store` over any `Kv`.
pub struct KvStore<K: Kv> {
    kv: K,
    seed: u64,
    writes: u64,
    /// The next data number for the streams this instance wrote to last (see `data_key`).
    numbering: Vec<(String, StreamNo, u64)>,
    /// Blocks of data numbers handed out: each starts a stream's numbering afresh.
    blocks: u64,
    /// How long streams keep their session, for admission (`Store::set_hold`).
    hold: Hold,
    /// The session count as this instance last read or changed it (`Store::sessions_seen`).
    sessions_seen: u64,
}

/// Streams whose numbering an instance remembers; another one starts a fresh block (a new
/// run in its stream's head, nothing worse).
const NUMBERED_STREAMS: usize = 16;

impl<K: Kv> KvStore<K> {
    /// `seed` should be random per instance: it names the instance as an events' writer and
    /// starts its write tokens, so two instances never pick the same key or token.
    pub fn new(kv: K, seed: u64) -> Self {
        Self {
            kv,
            seed,
            writes: 0,
            numbering: Vec::new(),
            blocks: 0,
            hold: crate::Config::default().hold(),
            sessions_seen: 0,
        }
    }

    /// A key for the data of this instance's next event on the stream: numbered on from its
    /// previous one there (so one run names both), or from a fresh block of 2^32 numbers, which
    /// no earlier key of this writer on any stream used.
    fn data_key(&mut self, session: &str, no: StreamNo) -> DataKey {
        let known = self.numbering.iter().position(|(s, n, _)| *n == no && s == session);
        let n = match known {
            Some(i) => self.numbering.remove(i).2,
            None => {
                self.blocks = self.blocks.wrapping_add(1);
                self.blocks << 32
            }
        };
        if self.numbering.len() >= NUMBERED_STREAMS {
            self.numbering.remove(0);
        }
        self.numbering.push((session.to_owned(), no, n.wrapping_add(1)));
        DataKey { writer: self.seed, n }
    }

    pub fn kv(&mut self) -> &mut K {
        &mut self.kv
    }

    fn token(&mut self) -> Token {
        self.writes = self.writes.wrapping_add(1);
        let mut token = [0; 16];
        token[..8].copy_from_slice(&self.seed.to_le_bytes());
        token[8..].copy_from_slice(&self.writes.to_le_bytes());
        token
    }

    fn load<T: DeserializeOwned + Charged>(
        &mut self,
        key: &str,
    ) -> Result<Option<Found<T, K::Handle>>, StoreError> {
        let (value, handle) = self.kv.watch(key)?;
        let (record, stamp) = decode::<T>(key, value.as_deref())?;
        Ok(record.map(|v| {
            let charge = v.charge();
            (v, Loaded { key: key.to_owned(), stamp, handle, charge })
        }))
    }

    /// Writes a record that does not exist yet (its key is fresh).
    fn create<T: Serialize + Charged>(&mut self, key: &str, value: &T) -> Result<(), StoreError> {
        let stamp = Stamp { version: 1, writers: vec![self.token()] };
        self.kv.set(key, &encode(Some(value), &stamp)?)?;
        self.count(key, value.charge(), 0)
    }

    /// Adds what a committed write of `key` changed to its session's byte count and the total.
    fn count(&mut self, key: &str, now: u64, before: u64) -> Result<(), StoreError> {
        let delta = i64::try_from(now).unwrap_or(i64::MAX) - i64::try_from(before).unwrap_or(i64::MAX);
        if delta == 0 {
            return Ok(());
        }
        if let Some((session, _)) = parse_key(key) {
            self.kv.increment(&bytes_key(&session), delta)?;
            self.kv.increment(TOTAL_BYTES, delta)?;
        }
        Ok(())
    }

    /// Saves `value` (`None`: a tombstone) over the record as loaded; `false` when another
    /// writer got there first. A `cas-failed` answer is checked by a re-read (module docs).
    fn swap<T: Serialize + Charged>(
        &mut self,
        loaded: Loaded<K::Handle>,
        value: Option<&T>,
    ) -> Result<bool, StoreError> {
        let token = self.token();
        let version = loaded.stamp.version.wrapping_add(1);
        let mut writers = vec![token];
        writers.extend(loaded.stamp.writers.into_iter().take(WRITERS_KEPT - 1));
        let (key, before) = (loaded.key, loaded.charge);
        let wrote = self.kv.swap(loaded.handle, &encode(value, &Stamp { version, writers })?)? || {
            let now = stamp_of(self.kv.get(&key)?.as_deref().unwrap_or_default());
            let back = now.version.wrapping_sub(version);
            usize::try_from(back).ok().and_then(|i| now.writers.get(i)) == Some(&token)
        };
        if wrote {
            self.count(&key, value.map_or(0, Charged::charge), before)?;
        }
        Ok(wrote)
    }

    /// Swaps in a tombstone; returns the record it replaced, if this call removed it.
    fn bury<T: Serialize + DeserializeOwned + Charged>(
        &mut self,
        key: &str,
    ) -> Result<Option<T>, StoreError> {
        for _ in 0..64 {
            let Some((old, loaded)) = self.load::<T>(key)? else {
                return Ok(None);
            };
            if self.swap::<T>(loaded, None)? {
                return Ok(Some(old));
            }
        }
        Err(StoreError(format!("{key}: still contended after 64 attempts")))
    }

    /// A counter's value, without decoding its bytes (their format is the backend's).
    fn counter(&mut self, key: &str) -> Result<i64, StoreError> {
        self.kv.increment(key, 0)
    }

    fn holds_no_work(&mut self, session: &SessionMeta, now: Millis) -> Result<bool, StoreError> {
        let mut streams = Vec::with_capacity(session.streams.len());
        for no in &session.streams {
            if let Some((st, _)) = self.load::<StreamMeta>(&stream_key(&session.id, *no))?
                && st.epoch == session.epoch
            {
                streams.push(st);
            }
        }
        Ok(holds_no_work(&streams, now, self.hold))
    }

    /// The compare-and-swap loop of `append_event`, its data stored under `key`; the result,
    /// and whether the head names the data.
    fn publish<R>(
        &mut self,
        session: &str,
        no: StreamNo,
        head: &str,
        key: DataKey,
        edit: &mut AppendEdit<'_, R>,
    ) -> Result<Option<(R, bool)>, StoreError> {
        let mut tried: Option<(Seq, R)> = None;
        for _ in 0..MAX_ATTEMPTS {
            let Some((mut meta, loaded)) = self.load::<StreamMeta>(head)? else { return Ok(None) };
            if let Some((seq, result)) = tried.take()
                && meta.event_ref(seq).is_some_and(|e| e.key == key)
            {
                return Ok(Some((result, true)));
            }
            let mut failed = None;
            let edited = {
                let kv = &mut self.kv;
                let mut data_len = |e: EventRef| match kv.get(&event_key(session, no, e.key)) {
                    Ok(value) => value.map_or(0, |v| v.len().saturating_sub(WRITTEN_AT) as u64),
                    Err(err) => {
                        failed = Some(err);
                        0
                    }
                };
                edit(&mut meta, key, &mut data_len)
            };
            if let Some(err) = failed {
                return Err(err);
            }
            let (result, appended) = match edited {
                Edit::Keep(r) => return Ok(Some((r, false))),
                Edit::Save(r) => (r, false),
                Edit::Append(r) => (r, true),
            };
            if self.swap(loaded, Some(&meta))? {
                return Ok(Some((result, appended)));
            }
            if appended {
                tried = Some((meta.last_seq, result));
            }
        }
        Err(contention())
    }

    /// Takes what a session that is gone still counts (what a killed writer left uncounted
    /// back) off the total, and its count with it.
    fn settle_bytes(&mut self, session: &str) -> Result<(), StoreError> {
        let key = bytes_key(session);
        let left = self.counter(&key)?;
        if left != 0 {
            self.kv.increment(TOTAL_BYTES, -left)?;
        }
        self.kv.delete(&key)
    }

    /// The answered stream with buffered events in `session` that was active longest ago.
    fn oldest_answered_in(&mut self, session: &str) -> Result<Option<StreamNo>, StoreError> {
        let Some((meta, _)) = self.session(session)? else { return Ok(None) };
        let mut oldest: Option<(Millis, StreamNo)> = None;
        for no in &meta.streams {
            if let Some((st, _)) = self.load::<StreamMeta>(&stream_key(session, *no))?
                && st.epoch == meta.epoch
                && st.state == StreamState::TerminalSent
                && st.buffered() > 0
                && oldest.is_none_or(|o| (st.last_active, st.no) < o)
            {
                oldest = Some((st.last_active, st.no));
            }
        }
        Ok(oldest.map(|(_, no)| no))
    }

    fn drop_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError> {
        let events: Vec<EventRef> = meta.buffered_after(0).collect();
        self.delete_events(session, meta.no, &events)?;
        for id in meta.requests() {
            self.kv.delete(&claim_key(session, id))?;
        }
        self.kv.delete(&stream_key(session, meta.no))
    }
}

impl<K: Kv> Store for KvStore<K> {
    type Version = Loaded<K::Handle>;

    fn session(&mut self, id: &str) -> Result<Option<(SessionMeta, Self::Version)>, StoreError> {
        self.load(&session_key(id))
    }

    fn create_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError> {
        self.kv.increment(SESSION_CHANGES, 1)?;
        self.sessions_seen = u64::try_from(self.kv.increment(SESSION_COUNT, 1)?).unwrap_or(0);
        self.create(&session_key(&meta.id), meta)?;
        admission::enqueue(&mut self.kv, &meta.id)
    }

    fn save_session(&mut self, meta: &SessionMeta, version: Self::Version) -> Result<bool, StoreError> {
        self.swap(version, Some(meta))
    }

    fn remove_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError> {
        let key = session_key(&meta.id);
        self.kv.increment(SESSION_CHANGES, 1)?;
        let Some(current) = self.bury::<SessionMeta>(&key)? else {
            return Ok(());
        };
        self.sessions_seen = u64::try_from(self.kv.increment(SESSION_COUNT, -1)?).unwrap_or(0);
        for no in &current.streams {
            if let Some(stream) = self.bury::<StreamMeta>(&stream_key(&meta.id, *no))? {
                self.drop_stream(&meta.id, &stream)?;
            }
        }
        self.kv.delete(&stream_counter_key(&meta.id))?;
        self.settle_bytes(&meta.id)?;
        admission::leave(&mut self.kv, &meta.id)?;
        self.kv.delete(&key)
    }

    fn session_count(&mut self) -> Result<u64, StoreError> {
        self.sessions_seen = u64::try_from(self.counter(SESSION_COUNT)?).unwrap_or(0);
        Ok(self.sessions_seen)
    }

    fn sessions_seen(&self) -> u64 {
        self.sessions_seen
    }

    /// From the admission queue (see the module docs): the first of at most
    /// `ADMISSION_PROBES` queued sessions that holds no work.
    fn set_hold(&mut self, hold: Hold) {
        self.hold = hold;
    }

    fn idlest_session(&mut self, now: Millis, except: &str) -> Result<Option<String>, StoreError> {
        for _ in 0..admission::PROBES {
            let Some(taken) = admission::dequeue(&mut self.kv)? else { return Ok(None) };
            let Some(id) = taken else { continue };
            let Some((session, _)) = self.session(&id)? else {
                self.kv.delete(&slot_key(&id))?;
                continue;
            };
            if id != except && self.holds_no_work(&session, now)? {
                return Ok(Some(id));
            }
            admission::enqueue(&mut self.kv, &id)?;
        }
        Ok(None)
    }

    /// From the counters beside the records (see the module docs).
    /// (A session's count is read only where it exists: reading a counter creates it.)
    fn bytes_held(&mut self, session: Option<&str>) -> Result<Option<u64>, StoreError> {
        let key = match session {
            None => TOTAL_BYTES.to_owned(),
            Some(id) => bytes_key(id),
        };
        if session.is_some() && self.kv.get(&key)?.is_none() {
            return Ok(Some(0));
        }
        Ok(Some(u64::try_from(self.counter(&key)?).unwrap_or(0)))
    }

    /// In one session: from its streams' heads. In all: none (there is no index to ask), so
    /// the total budget reclaims idle sessions instead.
    fn oldest_answered_buffer(
        &mut self,
        session: Option<&str>,
    ) -> Result<Option<(String, StreamNo)>, StoreError> {
        let Some(session) = session else { return Ok(None) };
        Ok(self.oldest_answered_in(session)?.map(|no| (session.to_owned(), no)))
    }

    /// The session's counter in the low 32 bits, a random part above: a store that went back
    /// in time (restored from an older snapshot, a replica promoted) counts again from where it
    /// was, and the random part keeps the new stream's number, and so its event ids, apart from
    /// the one it handed out before (whose cursors then name no stream: `unknown`).
    fn allocate_stream_no(&mut self, session: &str) -> Result<StreamNo, StoreError> {
        let count = self.kv.increment(&stream_counter_key(session), 1)?;
        let count = u64::try_from(count).map_err(|_| StoreError("stream counter went negative".into()))?;
        self.writes = self.writes.wrapping_add(1);
        let random = splitmix64(self.seed ^ self.writes.rotate_left(32)) >> 33;
        Ok(random << 32 | (count & 0xffff_ffff))
    }

    fn claim_request(&mut self, session: &str, id: &RequestId) -> Result<bool, StoreError> {
        Ok(self.kv.increment(&claim_key(session, id), 1)? == 1)
    }

    fn stream(
        &mut self,
        session: &str,
        no: StreamNo,
    ) -> Result<Option<(StreamMeta, Self::Version)>, StoreError> {
        self.load(&stream_key(session, no))
    }

    fn create_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError> {
        self.create(&stream_key(session, meta.no), meta)
    }

    fn save_stream(
        &mut self,
        _: &str,
        meta: &StreamMeta,
        version: Self::Version,
    ) -> Result<bool, StoreError> {
        self.swap(version, Some(meta))
    }

    fn remove_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError> {
        match self.bury::<StreamMeta>(&stream_key(session, meta.no))? {
            Some(current) => self.drop_stream(session, &current),
            None => Ok(()),
        }
    }

    /// Write the event's data under this writer's next key, then watch the head and swap it:
    /// three calls when nothing is evicted. The data is written once: a lost race retries
    /// only the swap, and the retry sees it when a swap that answered `cas-failed` committed
    /// (Spin's Redis backend). Data that ends up unpublished is deleted.
    fn append_event<R>(
        &mut self,
        session: &str,
        no: StreamNo,
        data: String,
        now: Millis,
        edit: &mut AppendEdit<'_, R>,
    ) -> Result<Option<R>, StoreError> {
        let head = stream_key(session, no);
        let key = self.data_key(session, no);
        let name = event_key(session, no, key);
        self.kv.set(&name, &event_value(now, &data))?;
        let published = self.publish(session, no, &head, key, edit);
        if !matches!(published, Ok(Some((_, true)))) {
            // A store that failed may keep it; no head names it.
            let _ = self.kv.delete(&name);
        }
        Ok(published?.map(|(r, _)| r))
    }

    fn collect_garbage(
        &mut self,
        cursor: Option<&str>,
        now: Millis,
        grace: Millis,
    ) -> Result<Swept, StoreError> {
        self.collect(cursor, now, grace)
    }

    fn event_data(
        &mut self,
        session: &str,
        no: StreamNo,
        events: &[EventRef],
    ) -> Result<Option<Vec<String>>, StoreError> {
        let mut data = Vec::with_capacity(events.len());
        for event in events {
            let name = event_key(session, no, event.key);
            let Some(mut bytes) = self.kv.get(&name)? else {
                return Ok(None);
            };
            bytes.drain(..bytes.len().min(WRITTEN_AT));
            data.push(String::from_utf8(bytes).map_err(|_| StoreError(format!("{name}: not UTF-8")))?);
        }
        Ok(Some(data))
    }

    fn delete_events(&mut self, session: &str, no: StreamNo, events: &[EventRef]) -> Result<(), StoreError> {
        for event in events {
            self.kv.delete(&event_key(session, no, event.key))?;
        }
        Ok(())
    }
}

/// A well-mixed 64-bit value of `x` (SplitMix64's finaliser).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What a record costs against the byte budgets in a key-value store: what the memory store
/// counts for it, the event data and claims a stream head names, and the store's own overhead
/// for each key ([`KEY_OVERHEAD`]).
pub(crate) trait Charged {
    fn charge(&self) -> u64;
}

/// What a store spends on a key besides its value (Redis: the key, its entry and expiry),
/// rounded up: it keeps the number of keys a session holds within its byte budget too.
pub(crate) const KEY_OVERHEAD: u64 = 128;

impl Charged for SessionMeta {
    /// The record, and its stream counter, queue slot and byte count.
    fn charge(&self) -> u64 {
        session_cost(&self.id) + 4 * KEY_OVERHEAD
    }
}

impl Charged for StreamMeta {
    fn charge(&self) -> u64 {
        let claims = self.requests().count() as u64;
        let events = self.buffered();
        stream_record_bytes(self)
            + self.buffered_bytes
            + events * (EVENT_RECORD_BYTES + KEY_OVERHEAD)
            + claims * (CLAIM_RECORD_BYTES + KEY_OVERHEAD)
            + KEY_OVERHEAD
    }
}
