//! Making room: what the gate frees when a bound is reached, in a documented order.
//!
//! Two byte budgets — one session's share (`max-bytes-per-session`) and the total
//! (`max-total-bytes`) — and the session table (`max-sessions`). At a budget the gate frees the
//! buffers of answered streams first (least recently active first: their client most likely
//! has the result), then, for the total, the session idle longest that holds no work; it never
//! touches a stream that is still running. What cannot be freed is the caller's to handle:
//! `over-budget` for a new session or stream, an event sent but not buffered.

use crate::config::Millis;
use crate::error::GateError;
use crate::gate::Gate;
use crate::store::{MAX_ATTEMPTS, Store};
use crate::stream::StreamState;

/// What `make_room` achieved: the bytes still missing, and a session it reclaimed.
pub(crate) struct Room {
    pub shortfall: u64,
    pub reclaimed: Option<String>,
}

/// The two byte bounds `make_room` keeps.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Budget {
    /// `max-bytes-per-session`, for the session an operation works in.
    Session,
    /// `max-total-bytes`.
    Total,
}

impl<S: Store> Gate<S> {
    /// Removes the session idle longest that holds no work, as the store nominates it (its
    /// index, or its queue, decides; see `Store::idlest_session`). `None` when every session
    /// holds work.
    pub(crate) fn reclaim_idlest_session(
        &mut self,
        now: Millis,
        except: &str,
    ) -> Result<Option<String>, GateError> {
        let Some(id) = self.store.idlest_session(now, except)? else { return Ok(None) };
        let Some((victim, _)) = self.store.session(&id)? else { return Ok(None) };
        self.store.remove_session(&victim)?;
        self.counters.reclaimed_sessions += 1;
        Ok(Some(id))
    }

    /// Frees bytes until `need` more fit in both the session's `max-bytes-per-session` and
    /// `max-total-bytes`; see [`Gate::make_room`].
    pub(crate) fn room_for(&mut self, need: u64, now: Millis, session: &str) -> Result<Room, GateError> {
        let own = self.make_room(Budget::Session, need, now, session)?;
        let all = self.make_room(Budget::Total, need, now, session)?;
        Ok(Room { shortfall: own.shortfall.max(all.shortfall), reclaimed: all.reclaimed })
    }

    /// Frees bytes until `need` more fit in `budget`: answered streams' buffers first (within
    /// the session for its own budget), then, for the total, the session idle longest that
    /// holds no work (never `session`).
    pub(crate) fn make_room(
        &mut self,
        budget: Budget,
        need: u64,
        now: Millis,
        session: &str,
    ) -> Result<Room, GateError> {
        let (scope, limit) = match budget {
            Budget::Session => (Some(session), self.config.max_bytes_per_session),
            Budget::Total => (None, self.config.max_total_bytes),
        };
        let mut reclaimed = None;
        let mut shortfall = 0;
        for _ in 0..MAX_ATTEMPTS {
            let Some(held) = self.store.bytes_held(scope)? else {
                return Ok(Room { shortfall: 0, reclaimed });
            };
            shortfall = held.saturating_add(need).saturating_sub(limit);
            if shortfall == 0 {
                return Ok(Room { shortfall, reclaimed });
            }
            if let Some((owner, no)) = self.store.oldest_answered_buffer(scope)? {
                let Some((s, _)) = self.store.session(&owner)? else { continue };
                let evicted = self.stream(&s, no)?.map_or(0, |(st, _)| st.buffered());
                if self.end_stream(&s, no, StreamState::Aborted)? {
                    self.counters.evicted_events += evicted;
                }
                continue;
            }
            if budget == Budget::Session {
                break;
            }
            match self.reclaim_idlest_session(now, session)? {
                Some(id) => reclaimed = Some(id),
                None => break,
            }
        }
        Ok(Room { shortfall, reclaimed })
    }
}
