//! Where the gate keeps its state.
//!
//! The gate never touches a map directly: it loads and saves small records through `Store`.
//! Every record change is a *load, then a save that only succeeds if nobody wrote the record
//! in between* (`Version`), so the same gate logic is correct whether one instance owns the
//! state (the memory store: a save always succeeds) or many instances share it (the key-value
//! store: the save is a compare-and-swap, and the gate retries a lost race from a fresh load).
//! The hot path, appending an event, is an `append_event` instead: the gate's change runs on
//! the record in place in the memory store (no copy), and as load, write the event, swap in
//! the key-value store.
//!
//! Event data is written under its own key *before* the stream record that publishes it is
//! saved, so a record never names data that is not there; data is deleted only after the save
//! that stopped buffering it.
//!
//! A store only holds what it is given; every bound is enforced by the gate.

use std::collections::{BTreeMap, VecDeque};

// Seeded per process like std's maps, and several times faster on short keys.
use foldhash::{HashMap, HashSet, HashSetExt};

use crate::config::Millis;
use crate::error::StoreError;
use crate::event_id::SessionTag;
use crate::session::SessionMeta;
use crate::stream::{
    DataKey, EventRef, Hold, RequestId, Seq, StreamMeta, StreamNo, StreamState, StreamSummary, Writer,
};

pub trait Store {
    /// What a load remembers so that the matching save can tell whether another writer got
    /// there first.
    type Version;

    fn session(&mut self, id: &str) -> Result<Option<(SessionMeta, Self::Version)>, StoreError>;
    /// The session's epoch and tag (what minting its event ids needs), without the rest.
    fn session_stamp(&mut self, id: &str) -> Result<Option<(u64, SessionTag)>, StoreError> {
        Ok(self.session(id)?.map(|(s, _)| (s.epoch, s.tag)))
    }
    /// Writes the record of a session that does not exist yet (a fresh, unguessable id).
    fn create_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError>;
    /// Saves the record if it is still at `version`; `false` when another writer won.
    fn save_session(&mut self, meta: &SessionMeta, version: Self::Version) -> Result<bool, StoreError>;
    /// Removes the session, its counters and every stream it lists, with their events.
    fn remove_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError>;
    fn session_count(&mut self) -> Result<u64, StoreError>;
    /// How long streams keep their session (see [`StreamMeta::holds_until`]): the gate sets it
    /// from its configuration before any other call and on every `configure`.
    fn set_hold(&mut self, hold: Hold);
    /// A session that holds no work at `now` (see [`holds_no_work`]), the one idle longest
    /// (ties broken by id; a store without an ordered index may approximate the order, never
    /// the check): admission and the memory budget remove it as nominated. Called only when a
    /// bound is reached. `except` is never nominated (the session an operation works in).
    fn idlest_session(&mut self, now: Millis, except: &str) -> Result<Option<String>, StoreError>;
    /// Bytes the store holds in all (as counted against `max-total-bytes`), or for one
    /// session (`max-bytes-per-session`); `None` when the store does not count them (its
    /// backend bounds itself).
    fn bytes_held(&mut self, session: Option<&str>) -> Result<Option<u64>, StoreError>;
    /// The answered stream (terminal sent) with buffered events that was active longest ago,
    /// in all or in one session: the first buffer a memory budget frees.
    fn oldest_answered_buffer(
        &mut self,
        session: Option<&str>,
    ) -> Result<Option<(String, StreamNo)>, StoreError>;

    /// A stream number never handed out before for this session id, not even before a
    /// re-issue (a key-value store: an atomic increment).
    fn allocate_stream_no(&mut self, session: &str) -> Result<StreamNo, StoreError>;
    /// Claims a JSON-RPC request id for one stream of the session; `false` if it is taken.
    /// The claim ends when that stream's record is removed.
    fn claim_request(&mut self, session: &str, id: &RequestId) -> Result<bool, StoreError>;
    fn stream(
        &mut self,
        session: &str,
        no: StreamNo,
    ) -> Result<Option<(StreamMeta, Self::Version)>, StoreError>;
    /// Number, epoch, state and last activity of each of these streams that exists, in order,
    /// without loading their records where the store can avoid it.
    fn stream_summaries(
        &mut self,
        session: &str,
        nos: &[StreamNo],
    ) -> Result<Vec<StreamSummary>, StoreError> {
        let mut summaries = Vec::with_capacity(nos.len());
        for no in nos {
            summaries.extend(self.stream(session, *no)?.map(|(st, _)| StreamSummary::of(&st)));
        }
        Ok(summaries)
    }
    /// Writes the record of a stream whose number was just allocated.
    fn create_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError>;
    /// Saves the record if it is still at `version`; `false` when another writer won.
    fn save_stream(
        &mut self,
        session: &str,
        meta: &StreamMeta,
        version: Self::Version,
    ) -> Result<bool, StoreError>;
    /// Changes the stream record with `edit`, which may add an event: in place where the store
    /// has one owner, else by load, change and compare-and-swap, running `edit` again from a
    /// fresh load after a lost race (`None`: no such stream). The store stores `data` under a
    /// key of its own first, and `edit` answers `Edit::Append` when it pushed the event with that
    /// key (`StreamMeta::push`); the record is then saved. `edit` may also drop old events; it
    /// learns each one's data length from the lookup it is given. The memory store keeps
    /// `data` itself, without a copy.
    fn append_event<R>(
        &mut self,
        session: &str,
        no: StreamNo,
        data: String,
        now: Millis,
        edit: &mut AppendEdit<'_, R>,
    ) -> Result<Option<R>, StoreError>;
    /// Removes the stream record, the data of the events it lists and its request claim.
    fn remove_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError>;

    /// The data of each event, in order; `None` if any of them is missing.
    fn event_data(
        &mut self,
        session: &str,
        no: StreamNo,
        events: &[EventRef],
    ) -> Result<Option<Vec<String>>, StoreError>;
    fn delete_events(&mut self, session: &str, no: StreamNo, events: &[EventRef]) -> Result<(), StoreError>;

    /// One step of a pass over the store that collects what instances killed between two
    /// calls left behind and no record leads to any more (see `kv`): bounded work per call,
    /// off the request path. `grace`: how long a write may be in flight. A store whose records
    /// cannot be orphaned (the memory store) has nothing to collect.
    fn collect_garbage(
        &mut self,
        cursor: Option<&str>,
        now: Millis,
        grace: Millis,
    ) -> Result<Swept, StoreError> {
        let _ = (cursor, now, grace);
        Ok(Swept::default())
    }
}

/// What one step of garbage collection did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Where the next step goes on; `None`: the pass is over.
    pub next: Option<String>,
    /// Keys removed.
    pub removed: u32,
}

/// An edit that may append an event: it gets the record, the key the event's data is stored
/// under, and a lookup of a buffered event's data length (for dropping old ones).
pub type AppendEdit<'a, R> =
    dyn FnMut(&mut StreamMeta, DataKey, &mut dyn FnMut(EventRef) -> u64) -> Edit<R> + 'a;

/// What an edit of a stream record decided.
pub enum Edit<R> {
    /// The record was changed: save it.
    Save(R),
    /// The record was left as it was.
    Keep(R),
    /// The record gained the event (as its last): save the record.
    Append(R),
}

/// A lost compare-and-swap race is retried from a fresh load this many times.
pub(crate) const MAX_ATTEMPTS: usize = 64;

pub(crate) fn contention() -> StoreError {
    StoreError(format!("record still contended after {MAX_ATTEMPTS} attempts"))
}

/// Whether a session with these streams may be reclaimed at `now`: none of them holds it any
/// more (see [`StreamMeta::holds_until`]: a connection attached, a call whose writer holds its
/// lease, a detached stream within `max-detached`, an answer nobody was attached to receive
/// within retention). A result written in full holds nothing.
pub fn holds_no_work<'a>(streams: impl IntoIterator<Item = &'a StreamMeta>, now: Millis, hold: Hold) -> bool {
    streams.into_iter().all(|st| st.holds_until(hold) < now)
}

/// What a new session, stream or event adds to the memory store's count: what the gate asks
/// room for before it writes one.
pub(crate) fn session_cost(id: &str) -> u64 {
    SESSION_RECORD_BYTES + 3 * id.len() as u64
}

pub(crate) fn stream_cost(origin: &crate::stream::Origin) -> u64 {
    let id = origin.request_id().map_or(0, request_id_bytes);
    STREAM_RECORD_BYTES + CLAIM_RECORD_BYTES + INDEX_SLOT_BYTES + 2 * id
}

/// What one more request of a batch adds: its claim, and its id in the stream record.
pub(crate) fn claim_cost(id: &RequestId) -> u64 {
    CLAIM_RECORD_BYTES + INDEX_SLOT_BYTES + 2 * request_id_bytes(id)
}

pub(crate) fn event_cost(data: &str) -> u64 {
    EVENT_OVERHEAD + data.len() as u64
}

/// What an event's data costs besides its bytes.
pub(crate) const EVENT_OVERHEAD: u64 = EVENT_RECORD_BYTES + INDEX_SLOT_BYTES;

/// What the memory store counts per record besides its variable-length parts: map entries,
/// headers and allocator slack, rounded up.
const SESSION_RECORD_BYTES: u64 = 384;
const STREAM_RECORD_BYTES: u64 = 320;
const EVENT_RECORD_BYTES: u64 = 64;
const CLAIM_RECORD_BYTES: u64 = 64;
/// Per listed stream in a session record, per buffered event in a stream record.
const INDEX_SLOT_BYTES: u64 = 16;

/// State in the instance's own memory: one owner, so every save succeeds.
///
/// Besides the records it keeps two ordered indexes, so that admission and the memory budget
/// find what to reclaim in O(log n) without a walk: sessions by when their streams stop
/// holding them, then by latest activity (those with a connection attached are not indexed),
/// and answered streams that still buffer events. It also counts the bytes it holds.
#[derive(Debug)]
pub struct MemoryStore {
    sessions: HashMap<String, SessionEntry>,
    /// Sessions without an open stream, by (held until, latest activity, serial): those held
    /// by nothing first, idle longest first. (The answered index's map type: one copy of the
    /// B-tree code in the component.)
    reclaimable: BTreeMap<(Millis, Millis, u64), String>,
    hold: Hold,
    answered: AnsweredIndex,
    bytes: u64,
    /// The serial number the next session gets.
    next_serial: u64,
}

#[derive(Debug)]
struct SessionEntry {
    meta: SessionMeta,
    last_stream_no: StreamNo,
    /// Names the session in [`AnsweredIndex`] keys: unique for the store's life.
    serial: u64,
    claims: HashSet<RequestId>,
    streams: BTreeMap<StreamNo, StreamEntry>,
    /// Streams in state `Open`: a connection is attached.
    open: u32,
    /// Until when each other stream that does holds the session, as (time, stream): a few per
    /// session (`max-streams-per-session`), so a list.
    holds: Vec<(Millis, StreamNo)>,
    /// Latest activity of the session or any of its streams.
    touched: Millis,
    bytes: u64,
}

#[derive(Debug)]
struct StreamEntry {
    meta: StreamMeta,
    data: EventData,
}

/// A stream's event data by sequence number. Events arrive in order and leave
/// mostly oldest first, so a deque indexed from its first sequence number does without hashing.
#[derive(Debug, Default)]
struct EventData {
    /// The sequence number of `slots[0]`.
    first: Seq,
    slots: VecDeque<Option<String>>,
    len: usize,
}

impl EventData {
    fn insert(&mut self, seq: Seq, data: String) {
        if self.slots.is_empty() {
            self.first = seq;
        }
        let Some(at) = seq.checked_sub(self.first).and_then(|i| usize::try_from(i).ok()) else { return };
        while self.slots.len() <= at {
            self.slots.push_back(None);
        }
        if self.slots[at].replace(data).is_none() {
            self.len += 1;
        }
    }

    fn index(&self, seq: Seq) -> Option<usize> {
        usize::try_from(seq.checked_sub(self.first)?).ok().filter(|i| *i < self.slots.len())
    }

    fn get(&self, seq: Seq) -> Option<&String> {
        self.slots.get(self.index(seq)?)?.as_ref()
    }

    fn remove(&mut self, seq: Seq) -> Option<String> {
        let data = self.slots.get_mut(self.index(seq)?)?.take()?;
        self.len -= 1;
        while self.slots.front().is_some_and(Option::is_none) {
            self.slots.pop_front();
            self.first += 1;
        }
        Some(data)
    }

    fn values(&self) -> impl Iterator<Item = &String> {
        self.slots.iter().flatten()
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// Where a session sits in the reclaim index: `(held until, latest activity)`, or `None` while
/// a connection is attached.
type Slot = Option<(Millis, Millis)>;

/// What a stream contributes to its session's slot: attached, or held until when (0: not).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Holding {
    open: bool,
    until: Millis,
}

impl Holding {
    fn of(meta: &StreamMeta, hold: Hold) -> Self {
        let open = meta.state == StreamState::Open;
        Self { open, until: if open { 0 } else { meta.holds_until(hold) } }
    }
}

impl SessionEntry {
    fn slot(&self) -> Slot {
        let held = self.holds.iter().map(|(t, _)| *t).max().unwrap_or(0);
        (self.open == 0).then_some((held, self.touched))
    }

    /// Stream `no` holds the session as `to` now, not as `from`.
    fn track(&mut self, no: StreamNo, from: Option<Holding>, to: Option<Holding>) {
        if from == to {
            return;
        }
        if let Some(h) = from {
            self.open = self.open.saturating_sub(u32::from(h.open));
            if let Some(i) = self.holds.iter().position(|held| *held == (h.until, no)) {
                self.holds.swap_remove(i);
            }
        }
        if let Some(h) = to {
            self.open = self.open.saturating_add(u32::from(h.open));
            if h.until > 0 {
                self.holds.push((h.until, no));
            }
        }
    }

    fn charge(&mut self, total: &mut u64, add: u64, sub: u64) {
        self.bytes = self.bytes.saturating_add(add).saturating_sub(sub);
        *total = total.saturating_add(add).saturating_sub(sub);
    }
}

fn stream_record_bytes(meta: &StreamMeta) -> u64 {
    let origin = meta.origin.request_id().map_or(0, request_id_bytes);
    let batch: u64 =
        meta.batch.iter().chain(&meta.cancelled).map(|id| request_id_bytes(id) + INDEX_SLOT_BYTES).sum();
    STREAM_RECORD_BYTES + origin + batch + INDEX_SLOT_BYTES * meta.buffered()
}

fn request_id_bytes(id: &RequestId) -> u64 {
    match id {
        RequestId::Number(_) => 0,
        RequestId::Text(s) => s.len() as u64,
    }
}

/// A stream whose final response was sent and that still buffers events.
fn is_answered(meta: &StreamMeta) -> bool {
    meta.state == StreamState::TerminalSent && meta.buffered() > 0
}

/// Where an answered stream sorts: least recently active first, then by session serial and
/// stream number.
type AnsweredKey = (Millis, u64, StreamNo);

/// The answered streams that still buffer events, in the order a memory budget frees them. Keys
/// are numbers only, so that moving a stream compares integers and allocates nothing; the
/// session id is the value.
#[derive(Default, Debug)]
struct AnsweredIndex(BTreeMap<AnsweredKey, String>);

impl AnsweredIndex {
    fn key(serial: u64, meta: &StreamMeta) -> Option<AnsweredKey> {
        is_answered(meta).then_some((meta.last_active, serial, meta.no))
    }

    /// Moves a stream of `session` from key `from` to key `to` (either may be none).
    fn moved(&mut self, session: &str, from: Option<AnsweredKey>, to: Option<AnsweredKey>) {
        if from == to {
            return;
        }
        if let Some(key) = from {
            self.0.remove(&key);
        }
        if let Some(key) = to {
            self.0.insert(key, session.to_owned());
        }
    }

    fn first(&self) -> Option<(String, StreamNo)> {
        self.0.first_key_value().map(|(&(_, _, no), session)| (session.clone(), no))
    }
}

/// What a memory store holds right now: for metrics, and for tests that check the bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    pub sessions: usize,
    pub streams: usize,
    pub events: usize,
    /// Event data only.
    pub bytes: u64,
    /// Everything counted against `max-total-bytes`.
    pub held: u64,
    pub most_streams_in_a_session: usize,
    pub most_events_in_a_stream: usize,
    pub most_bytes_in_a_stream: u64,
    /// The most any one session holds, as counted against `max-bytes-per-session`.
    pub most_held_by_a_session: u64,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self {
            sessions: HashMap::default(),
            reclaimable: BTreeMap::new(),
            hold: crate::Config::default().hold(),
            answered: AnsweredIndex::default(),
            bytes: 0,
            next_serial: 0,
        }
    }
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn has_session(&self, id: &str) -> bool {
        self.sessions.contains_key(id)
    }

    /// Counts what is actually held (a walk over every stream: not for the hot path).
    pub fn stats(&self) -> MemoryStats {
        let mut st =
            MemoryStats { sessions: self.sessions.len(), held: self.bytes, ..MemoryStats::default() };
        for session in self.sessions.values() {
            st.streams += session.streams.len();
            st.most_streams_in_a_session = st.most_streams_in_a_session.max(session.streams.len());
            st.most_held_by_a_session = st.most_held_by_a_session.max(session.bytes);
            for stream in session.streams.values() {
                let bytes: u64 = stream.data.values().map(|d| d.len() as u64).sum();
                st.events += stream.data.len();
                st.bytes += bytes;
                st.most_events_in_a_stream = st.most_events_in_a_stream.max(stream.data.len());
                st.most_bytes_in_a_stream = st.most_bytes_in_a_stream.max(bytes);
            }
        }
        st
    }

    /// Runs `change` on a session's entry and moves the session in the indexes if its slot
    /// changed.
    fn update<R>(
        &mut self,
        id: &str,
        change: impl FnOnce(&mut SessionEntry, &mut u64, &mut AnsweredIndex, Hold) -> R,
    ) -> Result<R, StoreError> {
        let entry = self.sessions.get_mut(id).ok_or_else(|| StoreError("no such session".into()))?;
        let before = entry.slot();
        let r = change(entry, &mut self.bytes, &mut self.answered, self.hold);
        let after = entry.slot();
        let serial = entry.serial;
        Self::reindex(&mut self.reclaimable, id, serial, before, after);
        Ok(r)
    }

    /// Moves a session in the reclaim index from `before` to `after`.
    fn reindex(
        index: &mut BTreeMap<(Millis, Millis, u64), String>,
        id: &str,
        serial: u64,
        before: Slot,
        after: Slot,
    ) {
        if before == after {
            return;
        }
        if let Some((held, touched)) = before {
            index.remove(&(held, touched, serial));
        }
        if let Some((held, touched)) = after {
            index.insert((held, touched, serial), id.to_owned());
        }
    }
}

/// The writer of every event in a memory store: it has one owner.
const MEMORY_WRITER: Writer = 0;

impl MemoryStore {
    /// Runs `edit` on a stream entry in place (no copy of the record, one lookup); the indexes
    /// and the byte count follow the change as `save_stream` would, and an appended event's
    /// data is counted. `None`: no such stream.
    fn edit_in_place<R>(
        &mut self,
        session: &str,
        no: StreamNo,
        edit: impl FnOnce(&mut StreamEntry) -> Edit<R>,
    ) -> Option<R> {
        let entry = self.sessions.get_mut(session)?;
        let stream = entry.streams.get_mut(&no)?;
        let hold = self.hold;
        let (holding, bytes) = (Holding::of(&stream.meta, hold), stream_record_bytes(&stream.meta));
        let answered = AnsweredIndex::key(entry.serial, &stream.meta);
        let (r, added) = match edit(stream) {
            Edit::Keep(r) => return Some(r),
            Edit::Save(r) => (r, 0),
            Edit::Append(result) => {
                let data = stream.data.get(stream.meta.last_seq).map_or(0, |d| d.len() as u64);
                (result, EVENT_RECORD_BYTES + data)
            }
        };
        let meta = &stream.meta;
        self.answered.moved(session, answered, AnsweredIndex::key(entry.serial, meta));
        let (now_holding, now_bytes, active) =
            (Holding::of(meta, hold), stream_record_bytes(meta), meta.last_active);
        let before = entry.slot();
        entry.track(no, Some(holding), Some(now_holding));
        entry.touched = entry.touched.max(active);
        entry.charge(&mut self.bytes, now_bytes + added, bytes);
        let after = entry.slot();
        Self::reindex(&mut self.reclaimable, session, entry.serial, before, after);
        Some(r)
    }
}

impl Store for MemoryStore {
    type Version = ();

    fn session(&mut self, id: &str) -> Result<Option<(SessionMeta, ())>, StoreError> {
        Ok(self.sessions.get(id).map(|s| (s.meta.clone(), ())))
    }

    fn session_stamp(&mut self, id: &str) -> Result<Option<(u64, SessionTag)>, StoreError> {
        Ok(self.sessions.get(id).map(|s| (s.meta.epoch, s.meta.tag)))
    }

    fn create_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError> {
        let bytes = session_cost(&meta.id);
        let entry = SessionEntry {
            meta: meta.clone(),
            last_stream_no: 0,
            serial: self.next_serial,
            claims: HashSet::new(),
            streams: BTreeMap::new(),
            open: 0,
            holds: Vec::new(),
            touched: meta.last_active,
            bytes,
        };
        Self::reindex(&mut self.reclaimable, &meta.id, entry.serial, None, entry.slot());
        self.bytes += bytes;
        self.next_serial += 1;
        self.sessions.insert(meta.id.clone(), entry);
        Ok(())
    }

    fn save_session(&mut self, meta: &SessionMeta, (): ()) -> Result<bool, StoreError> {
        self.update(&meta.id, |entry, total, _, _| {
            let slots = |m: &SessionMeta| INDEX_SLOT_BYTES * m.streams.len() as u64;
            entry.charge(total, slots(meta), slots(&entry.meta));
            entry.touched = entry.touched.max(meta.last_active);
            entry.meta = meta.clone();
        })?;
        Ok(true)
    }

    fn remove_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError> {
        if let Some(entry) = self.sessions.remove(&meta.id) {
            Self::reindex(&mut self.reclaimable, &meta.id, entry.serial, entry.slot(), None);
            for stream in entry.streams.values() {
                self.answered.moved(&meta.id, AnsweredIndex::key(entry.serial, &stream.meta), None);
            }
            self.bytes = self.bytes.saturating_sub(entry.bytes);
        }
        Ok(())
    }

    fn session_count(&mut self) -> Result<u64, StoreError> {
        Ok(self.sessions.len() as u64)
    }

    fn set_hold(&mut self, hold: Hold) {
        self.hold = hold;
    }

    fn idlest_session(&mut self, now: Millis, except: &str) -> Result<Option<String>, StoreError> {
        // Held by nothing first, idle longest first; then the hold that ended earliest.
        let found =
            self.reclaimable.iter().take_while(|((held, _, _), _)| *held < now).find(|(_, id)| *id != except);
        Ok(found.map(|(_, id)| id.clone()))
    }

    fn bytes_held(&mut self, session: Option<&str>) -> Result<Option<u64>, StoreError> {
        Ok(Some(match session {
            None => self.bytes,
            Some(id) => self.sessions.get(id).map_or(0, |e| e.bytes),
        }))
    }

    fn oldest_answered_buffer(
        &mut self,
        session: Option<&str>,
    ) -> Result<Option<(String, StreamNo)>, StoreError> {
        let Some(id) = session else {
            return Ok(self.answered.first());
        };
        // A session lists at most `max-streams-per-session` streams: a short walk, no copies.
        let Some(entry) = self.sessions.get(id) else { return Ok(None) };
        let oldest = entry
            .streams
            .values()
            .filter(|st| is_answered(&st.meta))
            .map(|st| (st.meta.last_active, st.meta.no))
            .min();
        Ok(oldest.map(|(_, no)| (id.to_owned(), no)))
    }

    fn allocate_stream_no(&mut self, session: &str) -> Result<StreamNo, StoreError> {
        self.update(session, |entry, _, _, _| {
            entry.last_stream_no = entry.last_stream_no.saturating_add(1);
            entry.last_stream_no
        })
    }

    fn claim_request(&mut self, session: &str, id: &RequestId) -> Result<bool, StoreError> {
        self.update(session, |entry, total, _, _| {
            let claimed = entry.claims.insert(id.clone());
            if claimed {
                entry.charge(total, CLAIM_RECORD_BYTES + request_id_bytes(id), 0);
            }
            claimed
        })
    }

    fn stream(&mut self, session: &str, no: StreamNo) -> Result<Option<(StreamMeta, ())>, StoreError> {
        Ok(self.sessions.get(session).and_then(|s| s.streams.get(&no)).map(|e| (e.meta.clone(), ())))
    }

    fn stream_summaries(
        &mut self,
        session: &str,
        nos: &[StreamNo],
    ) -> Result<Vec<StreamSummary>, StoreError> {
        let Some(entry) = self.sessions.get(session) else { return Ok(Vec::new()) };
        let summary = |e: &StreamEntry| StreamSummary::of(&e.meta);
        // A session lists its streams in the order they were opened: one merge walk over the
        // entries, not a search per number.
        if let (Some(first), Some(last)) = (nos.first(), nos.last())
            && nos.is_sorted_by(|a, b| a < b)
        {
            let mut wanted = nos.iter().peekable();
            let mut summaries = Vec::with_capacity(nos.len());
            for (no, e) in entry.streams.range(first..=last) {
                while wanted.next_if(|w| *w < no).is_some() {}
                if wanted.next_if_eq(&no).is_some() {
                    summaries.push(summary(e));
                }
            }
            return Ok(summaries);
        }
        Ok(nos.iter().filter_map(|no| entry.streams.get(no)).map(summary).collect())
    }

    fn create_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError> {
        self.update(session, |entry, total, answered, hold| {
            entry.touched = entry.touched.max(meta.last_active);
            entry.charge(total, stream_record_bytes(meta), 0);
            answered.moved(session, None, AnsweredIndex::key(entry.serial, meta));
            let stream = StreamEntry { meta: meta.clone(), data: EventData::default() };
            let old = entry.streams.insert(meta.no, stream).map(|old| Holding::of(&old.meta, hold));
            entry.track(meta.no, old, Some(Holding::of(meta, hold)));
        })
    }

    fn save_stream(&mut self, session: &str, meta: &StreamMeta, (): ()) -> Result<bool, StoreError> {
        self.update(session, |entry, total, answered, hold| {
            let Some(stream) = entry.streams.get_mut(&meta.no) else {
                return Err(StoreError(format!("no stream {}", meta.no)));
            };
            let old = std::mem::replace(&mut stream.meta, meta.clone());
            answered.moved(
                session,
                AnsweredIndex::key(entry.serial, &old),
                AnsweredIndex::key(entry.serial, meta),
            );
            entry.track(meta.no, Some(Holding::of(&old, hold)), Some(Holding::of(meta, hold)));
            entry.touched = entry.touched.max(meta.last_active);
            entry.charge(total, stream_record_bytes(meta), stream_record_bytes(&old));
            Ok(true)
        })?
    }

    fn append_event<R>(
        &mut self,
        session: &str,
        no: StreamNo,
        data: String,
        _now: Millis,
        edit: &mut AppendEdit<'_, R>,
    ) -> Result<Option<R>, StoreError> {
        Ok(self.edit_in_place(session, no, |stream| {
            let events = &stream.data;
            let key = DataKey { writer: MEMORY_WRITER, n: stream.meta.last_seq.wrapping_add(1) };
            let edited =
                edit(&mut stream.meta, key, &mut |e| events.get(e.seq).map_or(0, |d| d.len() as u64));
            if let Edit::Append(_) = &edited {
                stream.data.insert(stream.meta.last_seq, data);
            }
            edited
        }))
    }

    fn remove_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError> {
        if !self.sessions.contains_key(session) {
            return Ok(());
        }
        self.update(session, |entry, total, answered, hold| {
            if let Some(stream) = entry.streams.remove(&meta.no) {
                answered.moved(session, AnsweredIndex::key(entry.serial, &stream.meta), None);
                entry.track(meta.no, Some(Holding::of(&stream.meta, hold)), None);
                let data: u64 = stream.data.values().map(|d| EVENT_RECORD_BYTES + d.len() as u64).sum();
                entry.charge(total, 0, stream_record_bytes(&stream.meta) + data);
            }
            for id in meta.requests() {
                if entry.claims.remove(id) {
                    entry.charge(total, 0, CLAIM_RECORD_BYTES + request_id_bytes(id));
                }
            }
        })
    }

    fn event_data(
        &mut self,
        session: &str,
        no: StreamNo,
        events: &[EventRef],
    ) -> Result<Option<Vec<String>>, StoreError> {
        let stream = self
            .sessions
            .get(session)
            .and_then(|s| s.streams.get(&no))
            .ok_or_else(|| StoreError(format!("no stream {no}")))?;
        Ok(events.iter().map(|e| stream.data.get(e.seq).cloned()).collect())
    }

    fn delete_events(&mut self, session: &str, no: StreamNo, events: &[EventRef]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let Some(entry) = self.sessions.get_mut(session) else { return Ok(()) };
        let Some(stream) = entry.streams.get_mut(&no) else { return Ok(()) };
        let mut freed = 0;
        for e in events {
            if let Some(d) = stream.data.remove(e.seq) {
                freed += EVENT_RECORD_BYTES + d.len() as u64;
            }
        }
        entry.charge(&mut self.bytes, 0, freed);
        Ok(())
    }
}
