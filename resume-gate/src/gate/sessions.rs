//! Sessions: opening one (admission at `max-sessions`, re-issue), and making room in the
//! byte budgets as `room` plans it.

use super::*;

/// What making room achieved: the bytes still missing, and a session it reclaimed.
pub(super) struct Room {
    pub(super) shortfall: u64,
    pub(super) reclaimed: Option<String>,
}

impl<S: Store> Gate<S> {
    pub(super) fn open_session_inner(
        &mut self,
        session: &str,
        now: Millis,
        entropy: [u8; 8],
    ) -> Result<SessionInfo, GateError> {
        validate_session_id(session)?;
        self.retry(|g| {
            let Some((old, version)) = g.store.session(session)? else {
                let mut reclaimed = None;
                if g.store.session_count()? >= u64::from(g.config.max_sessions) {
                    let id = g.reclaim_idlest_session(now, session)?;
                    reclaimed = Some(id.ok_or(GateError::TooManySessions)?);
                }
                let meta = SessionMeta::new(session, next_epoch(entropy, None), now);
                let room = g.make_room(Budget::Total, session_cost(session), now, session)?;
                if room.shortfall > 0 {
                    return Err(GateError::OverBudget);
                }
                reclaimed = reclaimed.or(room.reclaimed);
                g.store.create_session(&meta)?;
                return Ok(Some(SessionInfo { epoch: meta.epoch, reclaimed }));
            };
            let meta = SessionMeta {
                epoch: next_epoch(entropy, Some(old.epoch)),
                standalone: None,
                streams: Vec::new(),
                last_active: now,
                ..old.clone()
            };
            if g.store.save_session(&meta, version)? {
                for no in &old.streams {
                    if let Some((stream, _)) = g.store.stream(session, *no)? {
                        g.store.remove_stream(session, &stream)?;
                    }
                }
                return Ok(Some(SessionInfo { epoch: meta.epoch, reclaimed: None }));
            }
            Ok(None)
        })
    }

    /// Removes the session idle longest that holds no work, as the store nominates it (its
    /// index, or its queue, decides; see `Store::idlest_session`). `None` when every session
    /// holds work.
    pub(super) fn reclaim_idlest_session(
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
    pub(super) fn room_for(&mut self, need: u64, now: Millis, session: &str) -> Result<Room, GateError> {
        if !self.over_a_budget(need, session)? {
            return Ok(Room { shortfall: 0, reclaimed: None });
        }
        let own = self.make_room(Budget::Session, need, now, session)?;
        let all = self.make_room(Budget::Total, need, now, session)?;
        Ok(Room { shortfall: own.shortfall.max(all.shortfall), reclaimed: all.reclaimed })
    }

    /// Whether `need` more bytes would take the session or the total past its budget (a
    /// store that counts no bytes: never). The total is asked first: while it leaves room
    /// within one session's budget, no session can lack it.
    pub(super) fn over_a_budget(&mut self, need: u64, session: &str) -> Result<bool, GateError> {
        let Some(total) = self.store.bytes_held(None)? else { return Ok(false) };
        let (own_limit, total_limit) = (self.config.max_bytes_per_session, self.config.max_total_bytes);
        if room::shortfall(total, need, total_limit) > 0 {
            return Ok(true);
        }
        if room::shortfall(total, need, own_limit) == 0 {
            return Ok(false);
        }
        let own = self.store.bytes_held(Some(session))?.unwrap_or(0);
        Ok(room::shortfall(own, need, own_limit) > 0)
    }

    /// Frees what `room::next_to_free` names until `need` more fit in `budget` (never in
    /// `session` itself for the total), or nothing more can go.
    pub(super) fn make_room(
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
            shortfall = room::shortfall(held, need, limit);
            if shortfall == 0 {
                break;
            }
            match room::next_to_free(budget, self.store.oldest_answered_buffer(scope)?) {
                Free::AnsweredBuffer(owner, no) => {
                    let Some((s, _)) = self.store.session(&owner)? else { continue };
                    let evicted = self.stream(&s, no)?.map_or(0, |(st, _)| st.buffered());
                    if self.end_stream(&s, no, StreamState::Aborted)? {
                        self.counters.evicted_events += evicted;
                    }
                }
                Free::IdlestSession => match self.reclaim_idlest_session(now, session)? {
                    Some(id) => reclaimed = Some(id),
                    None => break,
                },
                Free::Nothing => break,
            }
        }
        Ok(Room { shortfall, reclaimed })
    }
}
