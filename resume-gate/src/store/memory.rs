//! The state in the instance's own memory: one owner, so every save succeeds, and the gate's
//! edit of a stream runs on the record in place.

use std::collections::{BTreeMap, VecDeque};

// Seeded per process like std's maps, and several times faster on short keys.
use foldhash::{HashMap, HashSet, HashSetExt};

use crate::config::{Hold, Millis};
use crate::error::StoreError;
use crate::event_id::SessionTag;
use crate::session::SessionMeta;
use crate::stream::{
    DataKey, EventRef, RequestId, Seq, StreamMeta, StreamNo, StreamState, StreamSummary, Writer,
};

use super::{
    AppendEdit, CLAIM_RECORD_BYTES, EVENT_RECORD_BYTES, Edit, INDEX_SLOT_BYTES, Store, request_id_bytes,
    session_cost, stream_record_bytes,
};

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

    fn sessions_seen(&self) -> u64 {
        self.sessions.len() as u64
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
