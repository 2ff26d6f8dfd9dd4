//! Applying the decision table's verdict to a reconnect: the resume (take-over, the stranded
//! request of a lost writer) or the fresh stream (and what becomes of the cursor's stream).

use super::*;

impl<S: Store> Gate<S> {
    pub(super) fn reconnect_inner(
        &mut self,
        session: &str,
        cursor: &[u8],
        origin: Origin,
        now: Millis,
    ) -> Result<Decision, GateError> {
        let (s, _) = self.session(session)?;
        self.retry(|g| {
            let reconnect = Reconnect {
                cursor,
                origin: &origin,
                session: &s,
                key: g.key.as_ref(),
                now,
                retention: g.config.retention_ms,
                max_detached: g.config.max_detached(),
            };
            let store = &mut g.store;
            match decide(&reconnect, |no| store.stream(session, no))? {
                Verdict::Resume { mut stream, version, after, stranded } => {
                    let Some(events) = g.replay(&s, &stream, after)? else { return Ok(None) };
                    stream.attachment = stream.attachment.wrapping_add(1);
                    if stream.state == StreamState::Resumable {
                        stream.state = StreamState::Open;
                        stream.detached_at = None;
                    }
                    // The replay ends with the terminal: this connection gets the result.
                    stream.delivered |= stream.terminal_seq.is_some();
                    stream.last_active = now;
                    // The writer is gone: what it stored is replayed, and the stream ends here.
                    let freed =
                        if stranded.is_empty() { Vec::new() } else { stream.finish(StreamState::Aborted) };
                    if !g.store.save_stream(session, &stream, version)? {
                        return Ok(None);
                    }
                    g.store.delete_events(session, stream.no, &freed)?;
                    g.counters.resumes += 1;
                    g.counters.events_replayed += events.len() as u64;
                    Ok(Some(Decision::Resume(Resumption {
                        stream: stream.no,
                        attachment: stream.attachment,
                        cursor_seq: after,
                        includes_terminal: stream.terminal_seq.is_some(),
                        events,
                        stranded,
                    })))
                }
                Verdict::Fresh { reason, source } => {
                    // Refused before the source changes: a failed reconnect changes nothing.
                    // (`too-many-streams` cannot follow: a source that ends frees its slot.)
                    if g.room_for(stream_cost(&origin), now, session)?.shortfall > 0 {
                        return Err(GateError::OverBudget);
                    }
                    let mut stranded = Vec::new();
                    if let Some(mut source) = source {
                        if let Some(state) = source.becomes {
                            let freed = source.stream.finish(state);
                            if !g.store.save_stream(session, &source.stream, source.version)? {
                                return Ok(None);
                            }
                            g.store.delete_events(session, source.stream.no, &freed)?;
                        }
                        stranded = source.stranded;
                    }
                    let opened = g.open_stream_in(&s, origin.clone(), now)?;
                    g.counters.count_fresh(reason);
                    Ok(Some(Decision::Fresh(FreshStart { reason, opened, stranded })))
                }
            }
        })
    }
}
