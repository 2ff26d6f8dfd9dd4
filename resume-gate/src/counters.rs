//! What a host exports as metrics: cumulative counts since the gate was created.

use crate::reason::StaleReason;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Sessions currently open (a gauge).
    pub sessions: u64,
    pub events_emitted: u64,
    pub resumes: u64,
    pub events_replayed: u64,
    /// Fresh decisions, by reason, at each reason's [`StaleReason::index`].
    pub fresh: [u64; StaleReason::COUNT],
    pub evicted_events: u64,
    pub expired_streams: u64,
    pub reclaimed_sessions: u64,
    /// Operations that returned an error.
    pub errors: u64,
}

impl Counters {
    pub(crate) fn count_fresh(&mut self, reason: StaleReason) {
        self.add_fresh(reason, 1);
    }

    /// Adds `n` fresh decisions of `reason` (a host summing what a component reported).
    pub fn add_fresh(&mut self, reason: StaleReason, n: u64) {
        let count = &mut self.fresh[reason.index()];
        *count = count.saturating_add(n);
    }

    pub fn fresh_for(&self, reason: StaleReason) -> u64 {
        self.fresh[reason.index()]
    }

    /// Adds another instance's counts (a host with several instances over one shared store);
    /// the session gauge is the larger of the two sightings of the one shared count.
    pub fn merge(&mut self, other: &Counters) {
        self.sessions = self.sessions.max(other.sessions);
        for (mine, theirs) in [
            (&mut self.events_emitted, other.events_emitted),
            (&mut self.resumes, other.resumes),
            (&mut self.events_replayed, other.events_replayed),
            (&mut self.evicted_events, other.evicted_events),
            (&mut self.expired_streams, other.expired_streams),
            (&mut self.reclaimed_sessions, other.reclaimed_sessions),
            (&mut self.errors, other.errors),
        ] {
            *mine = mine.saturating_add(theirs);
        }
        for reason in StaleReason::ALL {
            self.add_fresh(*reason, other.fresh_for(*reason));
        }
    }
}
