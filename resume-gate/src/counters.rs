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
}
