//! How records and event data are written in the store: a format byte, the record's version
//! and its latest writers' tokens (so that a swap Spin's Redis backend reports as failed can be
//! recognised as one's own), then postcard; event data is its write time, then the data.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::config::Millis;
use crate::error::StoreError;

/// A record's first byte: a record, or a tombstone (a removed record, with its writers).
pub(crate) const RECORD: u8 = 3;
/// Records written before stream heads named batches, detachment and delivery: read as gone
/// (a session of that format is unknown, its client starts over).
pub(crate) const RECORD_BEFORE_BATCHES: u8 = 2;
pub(crate) const TOMBSTONE: u8 = 0;
/// Tokens of a record's latest writers kept in it (see the module docs).
pub(crate) const WRITERS_KEPT: usize = 8;
/// Format byte, version, token count.
pub(crate) const HEADER: usize = 1 + 8 + 1;
/// Unique to one write: the instance's seed and its count of writes.
pub(crate) type Token = [u8; 16];
/// A record as loaded, for the swap that saves it: its key, version and latest writers, and
/// the watch.
pub struct Loaded<H> {
    pub(crate) key: String,
    pub(crate) stamp: Stamp,
    pub(crate) handle: H,
    /// What the record was charged against the byte budgets (`Charged`).
    pub(crate) charge: u64,
}

/// A decoded record and the version it was loaded at.
pub(crate) type Found<T, H> = (T, Loaded<H>);

/// A stored value's version and the tokens of its latest writers, newest first.
#[derive(Default)]
pub(crate) struct Stamp {
    pub(crate) version: u64,
    pub(crate) writers: Vec<Token>,
}

pub(crate) fn encode<T: Serialize>(value: Option<&T>, stamp: &Stamp) -> Result<Vec<u8>, StoreError> {
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
pub(crate) fn stamp_of(value: &[u8]) -> Stamp {
    let (Some(version), Some(n)) = (value.get(1..9), value.get(9)) else { return Stamp::default() };
    let version = version.try_into().map(u64::from_le_bytes).unwrap_or_default();
    let tokens = value.get(HEADER..HEADER + 16 * usize::from(*n)).unwrap_or_default();
    Stamp { version, writers: tokens.chunks_exact(16).filter_map(|t| t.try_into().ok()).collect() }
}

/// The record (`None` for an absent key or a tombstone) and its stamp.
pub(crate) fn decode<T: DeserializeOwned>(
    key: &str,
    value: Option<&[u8]>,
) -> Result<(Option<T>, Stamp), StoreError> {
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

/// Bytes before an event's data in its value: when it was written (garbage collection tells
/// data a writer is about to publish from data nobody will).
pub(crate) const WRITTEN_AT: usize = 8;

pub(crate) fn event_value(now: Millis, data: &str) -> Vec<u8> {
    let mut value = Vec::with_capacity(WRITTEN_AT + data.len());
    value.extend(now.to_le_bytes());
    value.extend(data.as_bytes());
    value
}

pub(crate) fn written_at(value: &[u8]) -> Millis {
    value.get(..WRITTEN_AT).and_then(|t| t.try_into().ok()).map_or(0, Millis::from_le_bytes)
}
