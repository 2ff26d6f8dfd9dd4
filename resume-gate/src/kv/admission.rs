//! The admission queue: how a full session table finds a session to reclaim without an
//! ordered index (`wasi:keyvalue` has none). Sessions queue in creation order; admission takes
//! them from the head and reclaims the first that holds no work, and one that still does goes
//! back to the tail (a second chance), at most [`PROBES`] per admission: constant work, never
//! a listing of the bucket.

use crate::error::StoreError;

use super::Kv;
use super::keys::{QUEUE_HEAD, QUEUE_TAIL, queue_key, slot_key};

/// Queued sessions one admission looks at before it gives up (`too-many-sessions`); the ones
/// it passed over wait at the tail, so the next admission looks at others.
pub(crate) const PROBES: usize = 8;

/// Queues a session at the tail.
pub(crate) fn enqueue(kv: &mut impl Kv, session: &str) -> Result<(), StoreError> {
    let slot = kv.increment(QUEUE_TAIL, 1)?;
    kv.set(&queue_key(slot), session.as_bytes())?;
    kv.set(&slot_key(session), &slot.to_le_bytes())
}

/// Takes the session at the head, if any: `Some(None)` for a slot whose session has ended
/// since. Counters are read by adding 0 (their bytes are the backend's own).
pub(crate) fn dequeue(kv: &mut impl Kv) -> Result<Option<Option<String>>, StoreError> {
    if kv.increment(QUEUE_HEAD, 0)? >= kv.increment(QUEUE_TAIL, 0)? {
        return Ok(None);
    }
    let slot = kv.increment(QUEUE_HEAD, 1)?;
    if slot > kv.increment(QUEUE_TAIL, 0)? {
        // Another instance took the last slot first: give this one back.
        kv.increment(QUEUE_HEAD, -1)?;
        return Ok(None);
    }
    let key = queue_key(slot);
    let Some(id) = kv.get(&key)? else { return Ok(Some(None)) };
    kv.delete(&key)?;
    Ok(Some(String::from_utf8(id).ok()))
}

/// Takes a session that is gone out of the queue: its slot and what names it.
pub(crate) fn leave(kv: &mut impl Kv, session: &str) -> Result<(), StoreError> {
    let slot = slot_key(session);
    if let Some(bytes) = kv.get(&slot)? {
        if let Ok(n) = bytes.as_slice().try_into().map(i64::from_le_bytes) {
            kv.delete(&queue_key(n))?;
        }
        kv.delete(&slot)?;
    }
    Ok(())
}
