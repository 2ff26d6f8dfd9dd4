//! Garbage collection: what instances killed between two key-value calls leave behind.
//!
//! Each step of an operation leaves the *records* consistent (a head never names missing
//! data, a session never lists a stream of another session), but an instance may die after it
//! wrote what nothing names yet, or before it deleted what nothing names any more: event data
//! no head names, stream heads no session lists (or of an older epoch), keys of a session that
//! is gone, a request-id claim no stream holds. Nothing on the request path lists the bucket,
//! so these are found by a pass over its keys, one page per call, that the host runs off the
//! request path (`collect-garbage`). Each key is judged by the records it belongs to:
//!
//! | key | collected when |
//! | --- | --- |
//! | any key of a session (and its admission-queue slot) | the session record is gone |
//! | stream head (and its claim) | of another epoch, or unlisted for longer than `grace` |
//! | event data | its head is gone or of another epoch, or no head names it and it was written longer than `grace` ago |
//! | claim | no listed stream holds it, at two looks `grace` apart (the first leaves a mark) |
//! | claim mark | its claim is gone or held |
//!
//! `grace` covers the steps in flight: a stream being opened is listed right after its head is
//! written, and a writer publishes its data right after writing it. It is the lease
//! (`config.lease-ms`): a writer stalled longer has lost its stream anyway. Work per call: one
//! page of keys, the records they belong to (each loaded once per page), a delete per key
//! collected.

use std::collections::BTreeMap;

use super::*;

/// A live session as garbage collection judges its keys.
struct Live {
    meta: SessionMeta,
    /// The claim keys its listed streams hold.
    claims: Vec<String>,
}

/// The records one page of keys belongs to, loaded once each (`None`: gone).
#[derive(Default)]
struct Page {
    sessions: BTreeMap<String, Option<Live>>,
    heads: BTreeMap<(String, StreamNo), Option<StreamMeta>>,
}

impl<K: Kv> KvStore<K> {
    pub(super) fn collect(
        &mut self,
        cursor: Option<&str>,
        now: Millis,
        grace: Millis,
    ) -> Result<Swept, StoreError> {
        let (keys, next) = self.kv.list_keys(cursor)?;
        let mut page = Page::default();
        let mut removed = 0;
        for key in keys {
            if self.is_garbage(&key, now, grace, &mut page)? {
                self.kv.delete(&key)?;
                removed += 1;
            }
        }
        Ok(Swept { next, removed })
    }

    fn is_garbage(
        &mut self,
        key: &str,
        now: Millis,
        grace: Millis,
        page: &mut Page,
    ) -> Result<bool, StoreError> {
        let Some((session, kind)) = parse_key(key) else { return Ok(false) };
        if self.live(&session, page)?.is_none() {
            // Its place in the admission queue goes with it, as when a session is removed.
            if kind == KeyKind::QueueSlot {
                self.leave_queue(&session)?;
            }
            return Ok(true);
        }
        let old = |t: Millis| now.saturating_sub(t) > grace;
        Ok(match kind {
            KeyKind::Session | KeyKind::StreamCounter | KeyKind::QueueSlot => false,
            KeyKind::Stream(no) => {
                let Some(Some(live)) = page.sessions.get(&session) else { return Ok(true) };
                let listed = live.meta.streams.contains(&no);
                let Some((head, _)) = self.load::<StreamMeta>(key)? else { return Ok(true) };
                let garbage = head.epoch != live.meta.epoch || !listed && old(head.last_active);
                // Its claim goes with it, as when a stream is removed, unless a listed stream
                // holds the same request id.
                if let Some(claim) = head.origin.request_id().map(|id| claim_key(&session, id))
                    && garbage
                    && !live.claims.contains(&claim)
                {
                    self.kv.delete(&claim)?;
                }
                garbage
            }
            KeyKind::Event(no) => match (self.current_head(&session, no, page)?, parse_data_key(key)) {
                (None, _) => true,
                (Some(_), None) => false,
                (Some(head), Some(data)) => {
                    !head.names(data) && self.kv.get(key)?.is_some_and(|v| old(written_at(&v)))
                }
            },
            KeyKind::Claim => {
                let held =
                    page.sessions[&session].as_ref().is_some_and(|l| l.claims.iter().any(|c| c == key));
                let Some(mark) = claim_mark_key(key).filter(|_| !held) else { return Ok(false) };
                match self.kv.get(&mark)? {
                    None => {
                        self.kv.set(&mark, &now.to_le_bytes())?;
                        false
                    }
                    Some(t) if old(written_at(&t)) => {
                        self.kv.delete(&mark)?;
                        true
                    }
                    Some(_) => false,
                }
            }
            KeyKind::ClaimMark => {
                let claim = key.rsplit_once("/x/").map(|(s, id)| format!("{s}/r/{id}")).unwrap_or_default();
                let held = page.sessions[&session].as_ref().is_some_and(|l| l.claims.contains(&claim));
                held || self.kv.get(&claim)?.is_none()
            }
        })
    }

    /// The session, with the claims its listed streams hold; `None` when it is gone.
    fn live<'p>(&mut self, session: &str, page: &'p mut Page) -> Result<Option<&'p Live>, StoreError> {
        if !page.sessions.contains_key(session) {
            let live = match self.load::<SessionMeta>(&session_key(session))? {
                None => None,
                Some((meta, _)) => {
                    let mut claims = Vec::new();
                    for no in &meta.streams {
                        let head = self.current_head_of(&meta, *no, page)?;
                        claims.extend(
                            head.and_then(|h| h.origin.request_id().map(|id| claim_key(session, id))),
                        );
                    }
                    Some(Live { meta, claims })
                }
            };
            page.sessions.insert(session.to_owned(), live);
        }
        Ok(page.sessions[session].as_ref())
    }

    /// The stream's head if it is of the session's current epoch.
    fn current_head(
        &mut self,
        session: &str,
        no: StreamNo,
        page: &mut Page,
    ) -> Result<Option<StreamMeta>, StoreError> {
        let Some(Some(live)) = page.sessions.get(session) else { return Ok(None) };
        let meta = live.meta.clone();
        self.current_head_of(&meta, no, page)
    }

    fn current_head_of(
        &mut self,
        session: &SessionMeta,
        no: StreamNo,
        page: &mut Page,
    ) -> Result<Option<StreamMeta>, StoreError> {
        let at = (session.id.clone(), no);
        if !page.heads.contains_key(&at) {
            let head = self.load::<StreamMeta>(&stream_key(&session.id, no))?.map(|(h, _)| h);
            page.heads.insert(at.clone(), head);
        }
        Ok(page.heads[&at].clone().filter(|h| h.epoch == session.epoch))
    }
}
