//! Where the gate keeps its state.
//!
//! The gate never touches a map directly: it loads and saves small records through `Store`.
//! Every record change is a *load, then a save that only succeeds if nobody wrote the record
//! in between* (`Version`), so the same gate logic is correct whether one instance owns the
//! state (the memory store: a save always succeeds) or many instances share it (the key-value
//! store: the save is a compare-and-swap, and the gate retries a lost race from a fresh load).
//!
//! Event data is written under its own key *before* the stream record that lists it is saved,
//! so a record never names data that is not there; data is deleted only after the save that
//! stopped listing it.
//!
//! A store only holds what it is given; every bound is enforced by the gate.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::error::StoreError;
use crate::session::SessionMeta;
use crate::stream::{EventKey, RequestId, StreamMeta, StreamNo};

pub trait Store {
    /// What a load remembers so that the matching save can tell whether another writer got
    /// there first.
    type Version;

    fn session(&mut self, id: &str) -> Result<Option<(SessionMeta, Self::Version)>, StoreError>;
    /// Writes the record of a session that does not exist yet (a fresh, unguessable id).
    fn create_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError>;
    /// Saves the record if it is still at `version`; `false` when another writer won.
    fn save_session(&mut self, meta: &SessionMeta, version: Self::Version) -> Result<bool, StoreError>;
    /// Removes the session, its counters and every stream it lists, with their events.
    fn remove_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError>;
    fn session_count(&mut self) -> Result<u64, StoreError>;
    /// Every session record; called only when `max-sessions` is reached, to reclaim idle ones.
    fn sessions(&mut self) -> Result<Vec<SessionMeta>, StoreError>;

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
    /// Writes the record of a stream whose number was just allocated.
    fn create_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError>;
    /// Saves the record if it is still at `version`; `false` when another writer won.
    fn save_stream(
        &mut self,
        session: &str,
        meta: &StreamMeta,
        version: Self::Version,
    ) -> Result<bool, StoreError>;
    /// Removes the stream record, the data of the events it lists and its request claim.
    fn remove_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError>;

    /// Stores an event's data under a key no other event of the stream has or will have.
    fn put_event(&mut self, session: &str, no: StreamNo, data: &str) -> Result<EventKey, StoreError>;
    /// The data under each key, in order; `None` if any of them is missing.
    fn event_data(
        &mut self,
        session: &str,
        no: StreamNo,
        keys: &[EventKey],
    ) -> Result<Option<Vec<String>>, StoreError>;
    fn delete_events(&mut self, session: &str, no: StreamNo, keys: &[EventKey]) -> Result<(), StoreError>;
}

/// State in the instance's own memory: one owner, so every save succeeds.
#[derive(Default, Debug)]
pub struct MemoryStore {
    sessions: HashMap<String, SessionEntry>,
}

#[derive(Debug)]
struct SessionEntry {
    meta: SessionMeta,
    last_stream_no: StreamNo,
    claims: HashSet<RequestId>,
    streams: BTreeMap<StreamNo, StreamEntry>,
}

#[derive(Debug)]
struct StreamEntry {
    meta: StreamMeta,
    next_key: EventKey,
    data: HashMap<EventKey, String>,
}

/// What a memory store holds right now: for metrics, and for tests that check the bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    pub sessions: usize,
    pub streams: usize,
    pub events: usize,
    pub bytes: u64,
    pub most_streams_in_a_session: usize,
    pub most_events_in_a_stream: usize,
    pub most_bytes_in_a_stream: u64,
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
        let mut st = MemoryStats { sessions: self.sessions.len(), ..MemoryStats::default() };
        for session in self.sessions.values() {
            st.streams += session.streams.len();
            st.most_streams_in_a_session = st.most_streams_in_a_session.max(session.streams.len());
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

    fn session_mut(&mut self, id: &str) -> Result<&mut SessionEntry, StoreError> {
        self.sessions.get_mut(id).ok_or_else(|| StoreError("no such session".into()))
    }

    fn stream_mut(&mut self, session: &str, no: StreamNo) -> Result<&mut StreamEntry, StoreError> {
        self.session_mut(session)?.streams.get_mut(&no).ok_or_else(|| StoreError(format!("no stream {no}")))
    }
}

impl Store for MemoryStore {
    type Version = ();

    fn session(&mut self, id: &str) -> Result<Option<(SessionMeta, ())>, StoreError> {
        Ok(self.sessions.get(id).map(|s| (s.meta.clone(), ())))
    }

    fn create_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError> {
        let entry = SessionEntry {
            meta: meta.clone(),
            last_stream_no: 0,
            claims: HashSet::new(),
            streams: BTreeMap::new(),
        };
        self.sessions.insert(meta.id.clone(), entry);
        Ok(())
    }

    fn save_session(&mut self, meta: &SessionMeta, (): ()) -> Result<bool, StoreError> {
        self.session_mut(&meta.id)?.meta = meta.clone();
        Ok(true)
    }

    fn remove_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError> {
        self.sessions.remove(&meta.id);
        Ok(())
    }

    fn session_count(&mut self) -> Result<u64, StoreError> {
        Ok(self.sessions.len() as u64)
    }

    fn sessions(&mut self) -> Result<Vec<SessionMeta>, StoreError> {
        Ok(self.sessions.values().map(|s| s.meta.clone()).collect())
    }

    fn allocate_stream_no(&mut self, session: &str) -> Result<StreamNo, StoreError> {
        let entry = self.session_mut(session)?;
        entry.last_stream_no = entry.last_stream_no.saturating_add(1);
        Ok(entry.last_stream_no)
    }

    fn claim_request(&mut self, session: &str, id: &RequestId) -> Result<bool, StoreError> {
        Ok(self.session_mut(session)?.claims.insert(id.clone()))
    }

    fn stream(&mut self, session: &str, no: StreamNo) -> Result<Option<(StreamMeta, ())>, StoreError> {
        Ok(self.sessions.get(session).and_then(|s| s.streams.get(&no)).map(|e| (e.meta.clone(), ())))
    }

    fn create_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError> {
        let entry = StreamEntry { meta: meta.clone(), next_key: 0, data: HashMap::new() };
        self.session_mut(session)?.streams.insert(meta.no, entry);
        Ok(())
    }

    fn save_stream(&mut self, session: &str, meta: &StreamMeta, (): ()) -> Result<bool, StoreError> {
        self.stream_mut(session, meta.no)?.meta = meta.clone();
        Ok(true)
    }

    fn remove_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError> {
        if let Some(entry) = self.sessions.get_mut(session) {
            entry.streams.remove(&meta.no);
            if let Some(id) = meta.origin.request_id() {
                entry.claims.remove(id);
            }
        }
        Ok(())
    }

    fn put_event(&mut self, session: &str, no: StreamNo, data: &str) -> Result<EventKey, StoreError> {
        let stream = self.stream_mut(session, no)?;
        let key = stream.next_key;
        stream.next_key = stream.next_key.wrapping_add(1);
        stream.data.insert(key, data.to_owned());
        Ok(key)
    }

    fn event_data(
        &mut self,
        session: &str,
        no: StreamNo,
        keys: &[EventKey],
    ) -> Result<Option<Vec<String>>, StoreError> {
        let stream = self.stream_mut(session, no)?;
        Ok(keys.iter().map(|k| stream.data.get(k).cloned()).collect())
    }

    fn delete_events(&mut self, session: &str, no: StreamNo, keys: &[EventKey]) -> Result<(), StoreError> {
        if let Ok(stream) = self.stream_mut(session, no) {
            for k in keys {
                stream.data.remove(k);
            }
            if stream.data.is_empty() {
                stream.data.shrink_to_fit();
            }
        }
        Ok(())
    }
}
