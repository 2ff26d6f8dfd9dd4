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
//! A store only holds what it is given; every bound is enforced by the gate. What a record
//! costs against the memory budgets is counted here, the same for the gate (asking room) and
//! the memory store (charging it).
//!
//! # Layout
//!
//! - this file: the `Store` trait, what a session's streams hold, what records cost;
//! - `memory`: `MemoryStore`, the state in the instance's own memory;
//! - the key-value store is the crate's `kv` module.

mod memory;

pub use memory::{MemoryStats, MemoryStore};

use crate::config::{Hold, Millis};
use crate::error::StoreError;
use crate::event_id::SessionTag;
use crate::session::SessionMeta;
use crate::stream::{DataKey, EventRef, RequestId, StreamMeta, StreamNo, StreamSummary};

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
    /// Open sessions as this store last counted them, without asking anyone (for counters a
    /// host reads while its store stalls): the memory store's own count; a shared store's as
    /// this instance last read or changed it (0 before).
    fn sessions_seen(&self) -> u64;
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
pub(crate) const SESSION_RECORD_BYTES: u64 = 384;
pub(crate) const STREAM_RECORD_BYTES: u64 = 320;
pub(crate) const EVENT_RECORD_BYTES: u64 = 64;
pub(crate) const CLAIM_RECORD_BYTES: u64 = 64;
/// Per listed stream in a session record, per buffered event in a stream record.
pub(crate) const INDEX_SLOT_BYTES: u64 = 16;

pub(crate) fn stream_record_bytes(meta: &StreamMeta) -> u64 {
    let origin = meta.origin.request_id().map_or(0, request_id_bytes);
    let batch: u64 =
        meta.batch.iter().chain(&meta.cancelled).map(|id| request_id_bytes(id) + INDEX_SLOT_BYTES).sum();
    STREAM_RECORD_BYTES + origin + batch + INDEX_SLOT_BYTES * meta.buffered()
}

pub(crate) fn request_id_bytes(id: &RequestId) -> u64 {
    match id {
        RequestId::Number(_) => 0,
        RequestId::Text(s) => s.len() as u64,
    }
}
