//! The gate's state in a key-value store shared by many instances (`wasi:keyvalue`).
//!
//! Hosts such as Spin run a fresh instance per request, so state must outlive the instance,
//! and two instances may touch one session at once. The layout is one key per record:
//!
//! | key | value |
//! | --- | --- |
//! | `rg/sessions` | counter: open sessions (for `max-sessions`) |
//! | `rg/changes` | counter: sessions created or removed (garbage collection's check) |
//! | `rg/count-check` | garbage collection's evidence that no session changed for a while |
//! | `rg/{session}/s` | session record (epoch, standalone stream, listed streams) |
//! | `rg/{session}/n` | counter: last stream number handed out |
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
//! What a killed instance leaves between two calls is collected off the request path
//! (`collect`). Records are values of a format byte, the version, the writers' tokens, then
//! postcard; event data is its write time, then the data. Session ids are
//! escaped (`%`, `/`, `{`, `}`) so that no key of one session is a prefix of another's and the
//! hash tag is the whole id.

mod collect;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::config::Millis;
use crate::error::StoreError;
use crate::session::SessionMeta;
use crate::store::{AppendEdit, Edit, MAX_ATTEMPTS, Store, Swept, contention, holds_no_work};
use crate::stream::{DataKey, EventRef, Hold, RequestId, Seq, StreamMeta, StreamNo};

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

/// A record's first byte: a record, or a tombstone (a removed record, with its writers).
const RECORD: u8 = 3;
/// Records written before stream heads named batches, detachment and delivery: read as gone
/// (a session of that format is unknown, its client starts over).
const RECORD_BEFORE_BATCHES: u8 = 2;
const TOMBSTONE: u8 = 0;
/// Tokens of a record's latest writers kept in it (see the module docs).
const WRITERS_KEPT: usize = 8;
/// Format byte, version, token count.
const HEADER: usize = 1 + 8 + 1;
/// Unique to one write: the instance's seed and its count of writes.
type Token = [u8; 16];
const SESSION_COUNT: &str = "rg/sessions";
/// Counter: sessions created or removed so far (each counts itself before it changes the
/// session count); garbage collection reconciles the count only while it stands still.
const SESSION_CHANGES: &str = "rg/changes";
/// Garbage collection's record of the session count's reconciliation (`collect`).
const COUNT_CHECK: &str = "rg/count-check";
const QUEUE_TAIL: &str = "rg/q/tail";
const QUEUE_HEAD: &str = "rg/q/head";
/// Queued sessions one admission looks at before it gives up (`too-many-sessions`); the ones
/// it passed over wait at the tail, so the next admission looks at others.
const ADMISSION_PROBES: usize = 8;

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
}

/// Streams whose numbering an instance remembers; another one starts a fresh block (a new
/// run in its stream's head, nothing worse).
const NUMBERED_STREAMS: usize = 16;

/// A record as loaded, for the swap that saves it: its key, version and latest writers, and
/// the watch.
pub struct Loaded<H> {
    key: String,
    stamp: Stamp,
    handle: H,
}

/// A stored value's version and the tokens of its latest writers, newest first.
#[derive(Default)]
struct Stamp {
    version: u64,
    writers: Vec<Token>,
}

impl<K: Kv> KvStore<K> {
    /// `seed` should be random per instance: it names the instance as an events' writer and
    /// starts its write tokens, so two instances never pick the same key or token.
    pub fn new(kv: K, seed: u64) -> Self {
        Self { kv, seed, writes: 0, numbering: Vec::new(), blocks: 0, hold: crate::Config::default().hold() }
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

    fn load<T: DeserializeOwned>(&mut self, key: &str) -> Result<Option<(T, Loaded<K::Handle>)>, StoreError> {
        let (value, handle) = self.kv.watch(key)?;
        let (record, stamp) = decode(key, value.as_deref())?;
        Ok(record.map(|v| (v, Loaded { key: key.to_owned(), stamp, handle })))
    }

    /// Writes a record that does not exist yet (its key is fresh).
    fn create<T: Serialize>(&mut self, key: &str, value: &T) -> Result<(), StoreError> {
        let stamp = Stamp { version: 1, writers: vec![self.token()] };
        self.kv.set(key, &encode(Some(value), &stamp)?)
    }

    /// Saves `value` (`None`: a tombstone) over the record as loaded; `false` when another
    /// writer got there first. A `cas-failed` answer is checked by a re-read (module docs).
    fn swap<T: Serialize>(
        &mut self,
        loaded: Loaded<K::Handle>,
        value: Option<&T>,
    ) -> Result<bool, StoreError> {
        let token = self.token();
        let version = loaded.stamp.version.wrapping_add(1);
        let mut writers = vec![token];
        writers.extend(loaded.stamp.writers.into_iter().take(WRITERS_KEPT - 1));
        if self.kv.swap(loaded.handle, &encode(value, &Stamp { version, writers })?)? {
            return Ok(true);
        }
        let now = stamp_of(self.kv.get(&loaded.key)?.as_deref().unwrap_or_default());
        let back = now.version.wrapping_sub(version);
        Ok(usize::try_from(back).ok().and_then(|i| now.writers.get(i)) == Some(&token))
    }

    /// Swaps in a tombstone; returns the record it replaced, if this call removed it.
    fn bury<T: Serialize + DeserializeOwned>(&mut self, key: &str) -> Result<Option<T>, StoreError> {
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

    /// Takes a session that is gone out of the admission queue: its slot and what names it.
    fn leave_queue(&mut self, session: &str) -> Result<(), StoreError> {
        let slot = slot_key(session);
        if let Some(bytes) = self.kv.get(&slot)? {
            if let Ok(n) = bytes.as_slice().try_into().map(i64::from_le_bytes) {
                self.kv.delete(&queue_key(n))?;
            }
            self.kv.delete(&slot)?;
        }
        Ok(())
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

    fn drop_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError> {
        let events: Vec<EventRef> = meta.buffered_after(0).collect();
        self.delete_events(session, meta.no, &events)?;
        for id in meta.requests() {
            self.kv.delete(&claim_key(session, id))?;
        }
        self.kv.delete(&stream_key(session, meta.no))
    }
}

fn encode<T: Serialize>(value: Option<&T>, stamp: &Stamp) -> Result<Vec<u8>, StoreError> {
    let mut bytes = vec![if value.is_some() { RECORD } else { TOMBSTONE }];
    bytes.extend(stamp.version.to_le_bytes());
    bytes.push(stamp.writers.len() as u8);
    bytes.extend(stamp.writers.iter().flatten());
    if let Some(value) = value {
        let value =
            postcard::to_allocvec(value).map_err(|e| StoreError(format!("encoding a record: {e}")))?;
        bytes.extend(value);
    }
    Ok(bytes)
}

/// The record a stored value holds (`None` for a tombstone, a counter or event data): for
/// tests and tools that look into the store.
pub fn read_record<T: DeserializeOwned>(value: &[u8]) -> Option<T> {
    decode::<T>("", Some(value)).ok().and_then(|(record, _)| record)
}

/// Whether a stored value is a live record (not a tombstone, not a counter or event data):
/// for tests and tools that look into the store.
pub fn is_record(value: &[u8]) -> bool {
    value.first() == Some(&RECORD)
}

/// A stored value's version and latest writers (none for a value that is not a record or a
/// tombstone).
fn stamp_of(value: &[u8]) -> Stamp {
    let (Some(version), Some(n)) = (value.get(1..9), value.get(9)) else { return Stamp::default() };
    let version = version.try_into().map(u64::from_le_bytes).unwrap_or_default();
    let tokens = value.get(HEADER..HEADER + 16 * usize::from(*n)).unwrap_or_default();
    Stamp { version, writers: tokens.chunks_exact(16).filter_map(|t| t.try_into().ok()).collect() }
}

/// The record (`None` for an absent key or a tombstone) and its stamp.
fn decode<T: DeserializeOwned>(key: &str, value: Option<&[u8]>) -> Result<(Option<T>, Stamp), StoreError> {
    let Some(value) = value else { return Ok((None, Stamp::default())) };
    let stamp = stamp_of(value);
    let unreadable = |why: String| StoreError(format!("{key}: unreadable record: {why}"));
    match value.first() {
        None | Some(&TOMBSTONE) | Some(&RECORD_BEFORE_BATCHES) => Ok((None, stamp)),
        Some(&RECORD) => {
            let body = value
                .get(HEADER + 16 * stamp.writers.len()..)
                .ok_or_else(|| unreadable("cut short".into()))?;
            let record = postcard::from_bytes(body).map_err(|e| unreadable(e.to_string()))?;
            Ok((Some(record), stamp))
        }
        Some(_) => Err(StoreError(format!("{key}: record of an unknown format"))),
    }
}

fn escape(session: &str) -> String {
    let mut out = String::with_capacity(session.len());
    for c in session.chars() {
        match c {
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(escaped: &str) -> String {
    escaped.replace("%2F", "/").replace("%7B", "{").replace("%7D", "}").replace("%25", "%")
}

/// The session record's key.
pub fn session_key(session: &str) -> String {
    format!("rg/{{{}}}/s", escape(session))
}

fn stream_counter_key(session: &str) -> String {
    format!("rg/{{{}}}/n", escape(session))
}

/// The key of a stream's record.
pub fn stream_key(session: &str, no: StreamNo) -> String {
    format!("rg/{{{}}}/t/{no}", escape(session))
}

/// The key of one event's data.
pub fn event_key(session: &str, no: StreamNo, key: DataKey) -> String {
    format!("rg/{{{}}}/e/{no}/{:x}.{:x}", escape(session), key.writer, key.n)
}

/// Bytes before an event's data in its value: when it was written (garbage collection tells
/// data a writer is about to publish from data nobody will).
const WRITTEN_AT: usize = 8;

fn event_value(now: Millis, data: &str) -> Vec<u8> {
    let mut value = Vec::with_capacity(WRITTEN_AT + data.len());
    value.extend(now.to_le_bytes());
    value.extend(data.as_bytes());
    value
}

fn written_at(value: &[u8]) -> Millis {
    value.get(..WRITTEN_AT).and_then(|t| t.try_into().ok()).map_or(0, Millis::from_le_bytes)
}

/// The data key an event key names.
fn parse_data_key(key: &str) -> Option<DataKey> {
    let (writer, n) = key.rsplit_once('/')?.1.split_once('.')?;
    Some(DataKey { writer: u64::from_str_radix(writer, 16).ok()?, n: u64::from_str_radix(n, 16).ok()? })
}

/// The mark garbage collection leaves on a claim no stream holds: when it first saw it so.
fn claim_mark_key(claim: &str) -> Option<String> {
    let (session, id) = claim.rsplit_once("/r/")?;
    Some(format!("{session}/x/{id}"))
}

fn queue_key(slot: i64) -> String {
    format!("rg/q/{slot}")
}

fn slot_key(session: &str) -> String {
    format!("rg/{{{}}}/p", escape(session))
}

/// The key of a request id's claim.
pub fn claim_key(session: &str, id: &RequestId) -> String {
    let id = match id {
        RequestId::Number(n) => format!("n{n}"),
        RequestId::Text(t) => format!("t{}", hex::encode(&Sha256::digest(t.as_bytes())[..16])),
    };
    format!("rg/{{{}}}/r/{id}", escape(session))
}

/// Every global key; all others belong to one session.
pub fn is_global_key(key: &str) -> bool {
    [SESSION_COUNT, SESSION_CHANGES, COUNT_CHECK].contains(&key) || key.starts_with("rg/q/")
}

/// What a key of the layout holds: for tests and tools that look into a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Session,
    StreamCounter,
    QueueSlot,
    Stream(StreamNo),
    Event(StreamNo),
    Claim,
    /// Garbage collection's mark on a claim no stream held when it looked.
    ClaimMark,
}

/// The session a key belongs to (unescaped) and what it holds; `None` for a global key or one
/// outside the layout.
pub fn parse_key(key: &str) -> Option<(String, KeyKind)> {
    let rest = key.strip_prefix("rg/{")?;
    let (session, rest) = rest.split_once("}/")?;
    let mut parts = rest.split('/');
    let kind = match (parts.next()?, parts.next(), parts.next(), parts.next()) {
        ("s", None, ..) => KeyKind::Session,
        ("n", None, ..) => KeyKind::StreamCounter,
        ("p", None, ..) => KeyKind::QueueSlot,
        ("r", Some(_), None, _) => KeyKind::Claim,
        ("x", Some(_), None, _) => KeyKind::ClaimMark,
        ("t", Some(no), None, _) => KeyKind::Stream(no.parse().ok()?),
        ("e", Some(no), Some(_), None) => KeyKind::Event(no.parse().ok()?),
        _ => return None,
    };
    Some((unescape(session), kind))
}

impl<K: Kv> Store for KvStore<K> {
    type Version = Loaded<K::Handle>;

    fn session(&mut self, id: &str) -> Result<Option<(SessionMeta, Self::Version)>, StoreError> {
        self.load(&session_key(id))
    }

    fn create_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError> {
        self.kv.increment(SESSION_CHANGES, 1)?;
        self.kv.increment(SESSION_COUNT, 1)?;
        self.create(&session_key(&meta.id), meta)?;
        self.enqueue(&meta.id)
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
        self.kv.increment(SESSION_COUNT, -1)?;
        for no in &current.streams {
            if let Some(stream) = self.bury::<StreamMeta>(&stream_key(&meta.id, *no))? {
                self.drop_stream(&meta.id, &stream)?;
            }
        }
        self.kv.delete(&stream_counter_key(&meta.id))?;
        self.leave_queue(&meta.id)?;
        self.kv.delete(&key)
    }

    fn session_count(&mut self) -> Result<u64, StoreError> {
        Ok(u64::try_from(self.counter(SESSION_COUNT)?).unwrap_or(0))
    }

    /// From the admission queue (see the module docs): the first of at most
    /// `ADMISSION_PROBES` queued sessions that holds no work.
    fn set_hold(&mut self, hold: Hold) {
        self.hold = hold;
    }

    fn idlest_session(&mut self, now: Millis, except: &str) -> Result<Option<String>, StoreError> {
        for _ in 0..ADMISSION_PROBES {
            let Some(taken) = self.dequeue()? else { return Ok(None) };
            let Some(id) = taken else { continue };
            let Some((session, _)) = self.session(&id)? else {
                self.kv.delete(&slot_key(&id))?;
                continue;
            };
            if id != except && self.holds_no_work(&session, now)? {
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
