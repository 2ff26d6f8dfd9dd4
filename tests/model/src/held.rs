//! What a store holds, seen from outside: the property tests check every bound through it and
//! look for leaked keys, for the memory store and the key-value store alike.

use std::collections::{BTreeMap, BTreeSet};

use resume_gate::kv::{KeyKind, MemoryKv, is_record, parse_key, session_key};
use resume_gate::{MemoryStats, MemoryStore};

pub trait Held {
    fn has_session(&self, id: &str) -> bool;
    fn stats(&self) -> MemoryStats;
}

impl Held for MemoryStore {
    fn has_session(&self, id: &str) -> bool {
        MemoryStore::has_session(self, id)
    }
    fn stats(&self) -> MemoryStats {
        MemoryStore::stats(self)
    }
}

/// A key-value store, read through the key layout documented in `resume_gate::kv`.
pub struct KvView<'a>(pub &'a MemoryKv);

impl Held for KvView<'_> {
    fn has_session(&self, id: &str) -> bool {
        let key = session_key(id);
        self.0.snapshot().iter().any(|(k, v)| *k == key && is_record(v))
    }

    fn stats(&self) -> MemoryStats {
        let mut sessions = BTreeSet::new();
        let mut streams: BTreeMap<String, usize> = BTreeMap::new();
        let mut events: BTreeMap<(String, u64), (usize, u64)> = BTreeMap::new();
        for (key, value) in self.0.snapshot() {
            match parse_key(&key) {
                Some((s, KeyKind::Session)) if is_record(&value) => {
                    sessions.insert(s);
                }
                Some((s, KeyKind::Stream(_))) if is_record(&value) => *streams.entry(s).or_default() += 1,
                Some((s, KeyKind::Event(no))) => {
                    let e = events.entry((s, no)).or_default();
                    e.0 += 1;
                    e.1 += value.len() as u64;
                }
                _ => {}
            }
        }
        let held = self.0.snapshot().iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        MemoryStats {
            sessions: sessions.len(),
            held,
            streams: streams.values().sum(),
            events: events.values().map(|e| e.0).sum(),
            bytes: events.values().map(|e| e.1).sum(),
            most_streams_in_a_session: streams.values().copied().max().unwrap_or(0),
            most_events_in_a_stream: events.values().map(|e| e.0).max().unwrap_or(0),
            most_bytes_in_a_stream: events.values().map(|e| e.1).max().unwrap_or(0),
            // Not bounded: the key-value store counts no bytes (`max-bytes-per-session`).
            most_held_by_a_session: 0,
        }
    }
}
