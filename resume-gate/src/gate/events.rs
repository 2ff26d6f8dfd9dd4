//! Events: recording one on its stream (the buffer's bounds, the memory budgets), and reading
//! the buffered ones back for a replay or a poll.

use super::*;

/// How to append an event's data.
#[derive(Clone, Copy)]
pub(super) struct NewEvent {
    terminal: bool,
    now: Millis,
    /// Bytes the memory budgets lack for it: the stream's own oldest events make them up.
    shortfall: u64,
}

/// What appending an event to its stream record came to.
pub(super) enum Appended {
    Event {
        seq: Seq,
        id: String,
        evicted: Vec<EventRef>,
    },
    /// The stream was kept past retention: aborted now, its buffer to free.
    Expired(Vec<EventRef>),
    Refused(GateError),
}

impl<S: Store> Gate<S> {
    pub(super) fn record(
        &mut self,
        session: &str,
        no: StreamNo,
        data: String,
        terminal: bool,
        now: Millis,
    ) -> Result<Recorded, GateError> {
        validate_session_id(session)?;
        // Bytes the budgets lack for this event once nothing else can be freed: the stream's
        // own oldest events go, or if they are too few, the event is not buffered. (Within
        // both budgets it needs no look at the session: the stream names its epoch.)
        let need = event_cost(&data);
        let shortfall = if self.over_a_budget(need, session)? {
            self.store.session_stamp(session)?.ok_or(GateError::UnknownSession)?;
            self.room_for(need, now, session)?.shortfall
        } else {
            0
        };
        let event = NewEvent { terminal, now, shortfall };
        let Some(appended) = self.append(session, no, data, &event)? else {
            return Err(match self.store.session_stamp(session)? {
                None => GateError::UnknownSession,
                Some(_) => GateError::UnknownStream,
            });
        };
        match appended {
            Appended::Event { seq, id, evicted } => {
                self.store.delete_events(session, no, &evicted)?;
                self.counters.evicted_events += evicted.len() as u64;
                self.counters.events_emitted += 1;
                Ok(Recorded { id, seq })
            }
            Appended::Expired(freed) => {
                self.store.delete_events(session, no, &freed)?;
                self.counters.expired_streams += 1;
                Err(GateError::StreamFinished)
            }
            Appended::Refused(e) => Err(e),
        }
    }

    /// Appends an event to its stream: one edit, in place on the memory store; the store
    /// writes the event's data before it publishes the record. `None`: no such stream.
    pub(super) fn append(
        &mut self,
        session: &str,
        no: StreamNo,
        data: String,
        event: &NewEvent,
    ) -> Result<Option<Appended>, GateError> {
        let NewEvent { terminal, now, shortfall } = *event;
        let len = data.len();
        let (config, signing) = (&self.config, self.key.as_ref());
        Ok(self.store.append_event(session, no, data, now, &mut |stream, key, data_len| {
            if terminal && stream.origin == Origin::Standalone {
                return Edit::Keep(Appended::Refused(GateError::NotARequestStream));
            }
            if stream.expired(now, config.retention_ms) || stream.abandoned(now, config.max_detached()) {
                return Edit::Save(Appended::Expired(stream.finish(StreamState::Aborted)));
            }
            if !stream.state.takes_events() {
                return Edit::Keep(Appended::Refused(GateError::StreamFinished));
            }
            let seq = stream.push(key);
            let id = EventId::mint(stream.epoch, stream.tag, no, seq, signing).format();
            let cost = u32::try_from(id.len() + len).unwrap_or(u32::MAX);
            stream.buffered_bytes = stream.buffered_bytes.saturating_add(u64::from(cost));
            stream.last_active = now;
            stream.lease_until = now.saturating_add(config.lease_ms);
            if terminal {
                stream.delivered = stream.state == StreamState::Open;
                stream.state = StreamState::TerminalSent;
                stream.terminal_seq = Some(seq);
            }
            let just = JustAppended { seq, id_len: id.len(), cost };
            let evicted = room::evict_oldest(stream, config, &just, shortfall, data_len);
            Edit::Append(Appended::Event { seq, id, evicted })
        })?)
    }

    /// The data of the buffered events after `after`, as events to write.
    pub(super) fn replay(
        &mut self,
        session: &SessionMeta,
        stream: &StreamMeta,
        after: Seq,
    ) -> Result<Option<Vec<Event>>, GateError> {
        let events: Vec<EventRef> = stream.buffered_after(after).collect();
        let Some(data) = self.store.event_data(&session.id, stream.no, &events)? else {
            return Ok(None);
        };
        let events = events
            .iter()
            .map(|e| e.seq)
            .zip(data)
            .map(|(seq, data)| Event {
                id: EventId::mint(session.epoch, session.tag, stream.no, seq, self.key.as_ref()).format(),
                stream: stream.no,
                seq,
                data,
                retry_ms: None,
                terminal: Some(seq) == stream.terminal_seq,
            })
            .collect();
        Ok(Some(events))
    }

    pub(super) fn poll_inner(
        &mut self,
        session: &str,
        no: StreamNo,
        attachment: u32,
        after: Seq,
        now: Millis,
    ) -> Result<Polled, GateError> {
        let (s, _) = self.session(session)?;
        self.retry(|g| {
            let Some((stream, _)) = g.stream(&s, no)? else {
                return Err(GateError::UnknownStream);
            };
            if stream.attachment != attachment
                || !stream.state.is_live()
                || after.saturating_add(1) < stream.first_buffered
            {
                return Ok(Some(Polled { events: Vec::new(), done: true, stranded: Vec::new() }));
            }
            // Data missing under a listed key means the record moved on since the load.
            if let Some(events) = g.replay(&s, &stream, after)? {
                let stranded = if stream.writer_lost(now) { stream.stranded_requests() } else { Vec::new() };
                let done = !stranded.is_empty()
                    || stream.terminal_seq.is_some() && events.last().is_none_or(|e| e.terminal);
                return Ok(Some(Polled { events, done, stranded }));
            }
            Ok(None)
        })
    }
}
