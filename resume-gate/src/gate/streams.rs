//! Streams: opening one (its request's claim, listing it in its session), a batch joining it,
//! its connection detaching, the lease its writer renews, cancelling and ending it.

use super::*;

impl<S: Store> Gate<S> {
    /// The stream records a session lists.
    pub(super) fn streams_of(&mut self, session: &SessionMeta) -> Result<Vec<StreamMeta>, GateError> {
        let mut streams = Vec::with_capacity(session.streams.len());
        for no in &session.streams {
            if let Some((st, _)) = self.stream(session, *no)? {
                streams.push(st);
            }
        }
        Ok(streams)
    }

    /// What choosing a stream to drop needs of each stream the session lists (this epoch's).
    pub(super) fn stream_summaries(
        &mut self,
        session: &SessionMeta,
    ) -> Result<Vec<StreamSummary>, GateError> {
        let mut streams = self.store.stream_summaries(&session.id, &session.streams)?;
        streams.retain(|st| st.epoch == session.epoch);
        Ok(streams)
    }

    pub(super) fn open_stream_in(
        &mut self,
        session: &SessionMeta,
        origin: Origin,
        now: Millis,
    ) -> Result<Opened, GateError> {
        if self.room_for(stream_cost(&origin), now, &session.id)?.shortfall > 0 {
            return Err(GateError::OverBudget);
        }
        if let Origin::Request(id) = &origin
            && !self.store.claim_request(&session.id, id)?
        {
            return Err(GateError::DuplicateRequestId);
        }
        let no = self.store.allocate_stream_no(&session.id)?;
        let meta = StreamMeta::new(no, session.epoch, session.tag, origin, now, self.config.lease_ms);
        self.store.create_stream(&session.id, &meta)?;
        match self.list_stream(session, &meta, now) {
            Ok(superseded) => {
                if let Some(previous) = superseded {
                    self.end_stream(session, previous, StreamState::Superseded)?;
                }
            }
            Err(e) => {
                self.store.remove_stream(&session.id, &meta)?;
                return Err(e);
            }
        }
        let id = EventId::mint(session.epoch, session.tag, no, 0, self.key.as_ref());
        let priming = Event {
            id: id.format(),
            stream: no,
            seq: 0,
            data: String::new(),
            retry_ms: self.config.retry_ms,
            terminal: false,
        };
        Ok(Opened { stream: no, attachment: meta.attachment, priming })
    }

    pub(super) fn join_stream_in(
        &mut self,
        session: &SessionMeta,
        no: StreamNo,
        ids: &[RequestId],
        now: Millis,
    ) -> Result<Vec<bool>, GateError> {
        let (stream, _) = self.stream(session, no)?.ok_or(GateError::UnknownStream)?;
        if stream.origin.request_id().is_none() {
            return Err(GateError::NotARequestStream);
        }
        if !stream.state.takes_events() {
            return Err(GateError::StreamFinished);
        }
        if stream.batch.len().saturating_add(ids.len()) >= MAX_BATCH_REQUESTS {
            return Err(GateError::BatchTooLarge);
        }
        let cost: u64 = ids.iter().map(claim_cost).sum();
        if self.room_for(cost, now, &session.id)?.shortfall > 0 {
            return Err(GateError::OverBudget);
        }
        let mut claimed = Vec::with_capacity(ids.len());
        for id in ids {
            claimed.push(self.store.claim_request(&session.id, id)?);
        }
        let joined: Vec<RequestId> =
            ids.iter().zip(&claimed).filter(|(_, c)| **c).map(|(id, _)| id.clone()).collect();
        if joined.is_empty() {
            return Ok(claimed);
        }
        self.retry(|g| {
            let Some((mut stream, version)) = g.stream(session, no)? else {
                return Err(GateError::UnknownStream);
            };
            // Joined by an earlier attempt whose save committed but answered `cas-failed`.
            if stream.batch.ends_with(&joined) {
                return Ok(Some(()));
            }
            stream.batch.extend(joined.iter().cloned());
            if g.store.save_stream(&session.id, &stream, version)? {
                return Ok(Some(()));
            }
            Ok(None)
        })?;
        Ok(claimed)
    }

    pub(super) fn release_stream_inner(&mut self, session: &str, no: StreamNo) -> Result<(), GateError> {
        let (s, _) = self.session(session)?;
        let (stream, _) = self.stream(&s, no)?.ok_or(GateError::UnknownStream)?;
        if stream.origin.request_id().is_none() {
            return Err(GateError::NotARequestStream);
        }
        if stream.last_seq > 0 || !stream.state.takes_events() {
            return Err(GateError::StreamFinished);
        }
        self.retry(|g| {
            let (mut s, version) = g.session(session)?;
            if !s.streams.contains(&no) {
                return Ok(Some(()));
            }
            s.streams.retain(|n| *n != no);
            if g.store.save_session(&s, version)? {
                return Ok(Some(()));
            }
            Ok(None)
        })?;
        self.store.remove_stream(session, &stream)?;
        Ok(())
    }

    /// Adds a new stream to its session's list; a full list frees an eighth of itself (see
    /// `room::plan_stream_drop`), expiring streams kept past retention first.
    /// Returns the standalone stream it replaces.
    pub(super) fn list_stream(
        &mut self,
        session: &SessionMeta,
        stream: &StreamMeta,
        now: Millis,
    ) -> Result<Option<StreamNo>, GateError> {
        self.retry(|g| {
            let (mut s, version) = g.session(&session.id)?;
            if s.epoch != session.epoch {
                return Err(GateError::UnknownSession);
            }
            // Listed by an earlier attempt whose save committed but answered `cas-failed`
            // (Spin's Redis backend): done, though the stream it replaced is not known.
            if s.streams.contains(&stream.no) {
                return Ok(Some(None));
            }
            if s.streams.len() >= g.config.max_streams_per_session as usize {
                let listed = g.stream_summaries(&s)?;
                let room = room::streams_freed_at_once(g.config.max_streams_per_session);
                let plan = room::plan_stream_drop(&listed, now, g.config.retention_ms, room);
                for no in &plan.expire {
                    g.end_stream(&s, *no, StreamState::Aborted)?;
                    g.counters.expired_streams += 1;
                }
                if plan.drop.is_empty() {
                    return Err(GateError::TooManyStreams);
                }
                for gone in &plan.drop {
                    if let Some((dropped, _)) = g.stream(&s, *gone)? {
                        g.store.remove_stream(&s.id, &dropped)?;
                    }
                }
                // Numbers whose record is gone too (an instance died between two store calls).
                let mut present: Vec<StreamNo> =
                    listed.iter().map(|st| st.no).filter(|no| !plan.drop.contains(no)).collect();
                present.sort_unstable();
                s.streams.retain(|no| present.binary_search(no).is_ok());
            }
            s.streams.push(stream.no);
            let previous = match stream.origin {
                Origin::Standalone => s.standalone.replace(stream.no),
                Origin::Request(_) => None,
            };
            s.last_active = now;
            if g.store.save_session(&s, version)? {
                return Ok(Some(previous));
            }
            Ok(None)
        })
    }

    /// Moves a live stream to a finished state and frees its buffer; the record stays as a
    /// tombstone. Returns whether this call finished it.
    pub(crate) fn end_stream(
        &mut self,
        session: &SessionMeta,
        no: StreamNo,
        state: StreamState,
    ) -> Result<bool, GateError> {
        self.retry(|g| {
            let Some((mut stream, version)) = g.stream(session, no)? else {
                return Ok(Some(false));
            };
            if !stream.state.is_live() {
                return Ok(Some(false));
            }
            let freed = stream.finish(state);
            if g.store.save_stream(&session.id, &stream, version)? {
                g.store.delete_events(&session.id, no, &freed)?;
                return Ok(Some(true));
            }
            Ok(None)
        })
    }

    pub(super) fn detach_inner(
        &mut self,
        session: &str,
        no: StreamNo,
        attachment: u32,
        now: Millis,
    ) -> Result<(), GateError> {
        validate_session_id(session)?;
        self.retry(|g| {
            let Some((mut stream, version)) = g.store.stream(session, no)? else {
                return Ok(Some(()));
            };
            if stream.attachment != attachment || !stream.state.is_live() {
                return Ok(Some(()));
            }
            if stream.state == StreamState::Open {
                stream.state = StreamState::Resumable;
                stream.detached_at = Some(now);
            }
            stream.last_active = now;
            if g.store.save_stream(session, &stream, version)? {
                return Ok(Some(()));
            }
            Ok(None)
        })
    }

    pub(super) fn abort_inner(&mut self, session: &str, no: StreamNo) -> Result<(), GateError> {
        let (s, _) = self.session(session)?;
        if self.stream(&s, no)?.is_none() {
            return Err(GateError::UnknownStream);
        }
        self.end_stream(&s, no, StreamState::Cancelled)?;
        Ok(())
    }

    pub(super) fn abort_request_inner(&mut self, session: &str, id: &RequestId) -> Result<bool, GateError> {
        let (s, _) = self.session(session)?;
        let Some(no) =
            self.streams_of(&s)?.into_iter().find(|st| st.requests().any(|r| r == id)).map(|st| st.no)
        else {
            return Ok(false);
        };
        self.retry(|g| {
            let Some((mut stream, version)) = g.stream(&s, no)? else { return Ok(Some(false)) };
            if !stream.state.is_live() {
                return Ok(Some(false));
            }
            if !stream.cancelled.contains(id) {
                stream.cancelled.push(id.clone());
            }
            // One request, or every request of a batch, cancelled: the stream ends.
            if stream.requests().all(|r| stream.cancelled.contains(r)) {
                let freed = stream.finish(StreamState::Cancelled);
                if g.store.save_stream(&s.id, &stream, version)? {
                    g.store.delete_events(&s.id, no, &freed)?;
                    return Ok(Some(true));
                }
                return Ok(None);
            }
            Ok(g.store.save_stream(&s.id, &stream, version)?.then_some(true))
        })
    }

    pub(super) fn renew_lease_inner(
        &mut self,
        session: &str,
        no: StreamNo,
        now: Millis,
    ) -> Result<(), GateError> {
        let (s, _) = self.session(session)?;
        self.retry(|g| {
            let Some((mut stream, version)) = g.stream(&s, no)? else {
                return Err(GateError::UnknownStream);
            };
            if stream.abandoned(now, g.config.max_detached()) {
                // Nobody came back for the call in time: it is given up, and a later reconnect
                // gets the stranded error.
                let freed = stream.finish(StreamState::Aborted);
                if g.store.save_stream(session, &stream, version)? {
                    g.store.delete_events(session, no, &freed)?;
                    g.counters.expired_streams += 1;
                    return Err(GateError::StreamFinished);
                }
                return Ok(None);
            }
            if !stream.state.takes_events() {
                return Err(GateError::StreamFinished);
            }
            stream.lease_until = now.saturating_add(g.config.lease_ms);
            if g.store.save_stream(session, &stream, version)? {
                return Ok(Some(()));
            }
            Ok(None)
        })
    }
}
