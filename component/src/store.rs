//! Where the gate keeps its state.
//!
//! The gate's logic never touches a map directly: it loads and saves small records through
//! `Store`. The in-memory store serves long-lived instances (wasmtime, Node, Python). The trait
//! is shaped for a key-value store too (one key per session record, per stream record and per
//! event; stream numbers and sequence numbers come from the records, so a key-value store can
//! guard them with atomic increment or compare-and-swap), for hosts that instantiate the
//! component per request.
//!
//! A store only holds what it is given; every bound is enforced by the gate.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::error::StoreError;
use crate::session::SessionMeta;
use crate::stream::{Seq, StoredEvent, StreamMeta, StreamNo};

pub trait Store {
    fn session(&mut self, id: &str) -> Result<Option<SessionMeta>, StoreError>;
    fn put_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError>;
    /// Removes the session with all its streams and events.
    fn remove_session(&mut self, id: &str) -> Result<(), StoreError>;
    fn session_count(&mut self) -> Result<u64, StoreError>;
    /// Every session record; called only when `max-sessions` is reached, to reclaim idle ones.
    fn sessions(&mut self) -> Result<Vec<SessionMeta>, StoreError>;

    /// A stream number never handed out before for this session id, not even before a
    /// re-issue (a key-value store: an atomic increment of a per-session counter).
    fn allocate_stream_no(&mut self, session: &str) -> Result<StreamNo, StoreError>;
    fn stream(&mut self, session: &str, no: StreamNo) -> Result<Option<StreamMeta>, StoreError>;
    fn put_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError>;
    /// Removes the stream record and its events.
    fn remove_stream(&mut self, session: &str, no: StreamNo) -> Result<(), StoreError>;
    /// The session's stream records, in stream-number order.
    fn streams(&mut self, session: &str) -> Result<Vec<StreamMeta>, StoreError>;

    /// Appends an event; its `seq` is one past the stream's last.
    fn push_event(&mut self, session: &str, no: StreamNo, event: StoredEvent) -> Result<(), StoreError>;
    /// Removes and returns the stream's oldest buffered event.
    fn evict_oldest(&mut self, session: &str, no: StreamNo) -> Result<Option<StoredEvent>, StoreError>;
    /// Removes every buffered event of the stream.
    fn drop_events(&mut self, session: &str, no: StreamNo) -> Result<(), StoreError>;
    /// The buffered events with `seq > after`, in order.
    fn events_after(
        &mut self,
        session: &str,
        no: StreamNo,
        after: Seq,
    ) -> Result<Vec<StoredEvent>, StoreError>;
}

/// State in the instance's own memory: hash maps and a ring buffer per stream.
#[derive(Default, Debug)]
pub struct MemoryStore {
    sessions: HashMap<String, SessionEntry>,
}

#[derive(Debug)]
struct SessionEntry {
    meta: SessionMeta,
    last_stream_no: StreamNo,
    streams: BTreeMap<StreamNo, StreamEntry>,
}

#[derive(Debug)]
struct StreamEntry {
    meta: StreamMeta,
    events: VecDeque<StoredEvent>,
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
                let bytes: u64 = stream.events.iter().map(StoredEvent::cost).sum();
                st.events += stream.events.len();
                st.bytes += bytes;
                st.most_events_in_a_stream = st.most_events_in_a_stream.max(stream.events.len());
                st.most_bytes_in_a_stream = st.most_bytes_in_a_stream.max(bytes);
            }
        }
        st
    }

    fn entry(&mut self, session: &str, no: StreamNo) -> Result<&mut StreamEntry, StoreError> {
        self.sessions
            .get_mut(session)
            .and_then(|s| s.streams.get_mut(&no))
            .ok_or_else(|| StoreError(format!("no stream {no} in session")))
    }
}

impl Store for MemoryStore {
    fn session(&mut self, id: &str) -> Result<Option<SessionMeta>, StoreError> {
        Ok(self.sessions.get(id).map(|s| s.meta.clone()))
    }

    fn put_session(&mut self, meta: &SessionMeta) -> Result<(), StoreError> {
        match self.sessions.get_mut(&meta.id) {
            Some(entry) => entry.meta = meta.clone(),
            None => {
                let entry = SessionEntry { meta: meta.clone(), last_stream_no: 0, streams: BTreeMap::new() };
                self.sessions.insert(meta.id.clone(), entry);
            }
        }
        Ok(())
    }

    fn remove_session(&mut self, id: &str) -> Result<(), StoreError> {
        self.sessions.remove(id);
        Ok(())
    }

    fn session_count(&mut self) -> Result<u64, StoreError> {
        Ok(self.sessions.len() as u64)
    }

    fn sessions(&mut self) -> Result<Vec<SessionMeta>, StoreError> {
        Ok(self.sessions.values().map(|s| s.meta.clone()).collect())
    }

    fn allocate_stream_no(&mut self, session: &str) -> Result<StreamNo, StoreError> {
        let entry = self
            .sessions
            .get_mut(session)
            .ok_or_else(|| StoreError("allocate_stream_no on a missing session".into()))?;
        entry.last_stream_no = entry.last_stream_no.saturating_add(1);
        Ok(entry.last_stream_no)
    }

    fn stream(&mut self, session: &str, no: StreamNo) -> Result<Option<StreamMeta>, StoreError> {
        Ok(self.sessions.get(session).and_then(|s| s.streams.get(&no)).map(|e| e.meta.clone()))
    }

    fn put_stream(&mut self, session: &str, meta: &StreamMeta) -> Result<(), StoreError> {
        let entry = self
            .sessions
            .get_mut(session)
            .ok_or_else(|| StoreError("put_stream on a missing session".into()))?;
        match entry.streams.get_mut(&meta.no) {
            Some(stream) => stream.meta = meta.clone(),
            None => {
                let stream = StreamEntry { meta: meta.clone(), events: VecDeque::new() };
                entry.streams.insert(meta.no, stream);
            }
        }
        Ok(())
    }

    fn remove_stream(&mut self, session: &str, no: StreamNo) -> Result<(), StoreError> {
        if let Some(entry) = self.sessions.get_mut(session) {
            entry.streams.remove(&no);
        }
        Ok(())
    }

    fn streams(&mut self, session: &str) -> Result<Vec<StreamMeta>, StoreError> {
        Ok(self
            .sessions
            .get(session)
            .map(|s| s.streams.values().map(|e| e.meta.clone()).collect())
            .unwrap_or_default())
    }

    fn push_event(&mut self, session: &str, no: StreamNo, event: StoredEvent) -> Result<(), StoreError> {
        self.entry(session, no)?.events.push_back(event);
        Ok(())
    }

    fn evict_oldest(&mut self, session: &str, no: StreamNo) -> Result<Option<StoredEvent>, StoreError> {
        Ok(self.entry(session, no)?.events.pop_front())
    }

    fn drop_events(&mut self, session: &str, no: StreamNo) -> Result<(), StoreError> {
        let events = &mut self.entry(session, no)?.events;
        events.clear();
        events.shrink_to_fit();
        Ok(())
    }

    fn events_after(
        &mut self,
        session: &str,
        no: StreamNo,
        after: Seq,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let events = &self.entry(session, no)?.events;
        // Sequence numbers in the buffer are consecutive, so the cursor's position is
        // arithmetic, not a search.
        let skip = match events.front() {
            Some(first) => {
                usize::try_from(after.saturating_add(1).saturating_sub(first.seq)).unwrap_or(usize::MAX)
            }
            None => 0,
        };
        Ok(events.range(skip.min(events.len())..).cloned().collect())
    }
}
