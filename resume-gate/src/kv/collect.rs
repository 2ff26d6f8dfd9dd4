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
//! | any key of a session (and its admission-queue slot) | the session record is gone (what its byte count still holds comes off the total) |
//! | stream head (and its claim) | of another epoch, or unlisted for longer than `grace` |
//! | event data | its head is gone or of another epoch, or no head names it and it was written longer than `grace` ago |
//! | claim | no listed stream holds it, at two looks `grace` apart (the first leaves a mark) |
//! | claim mark | its claim is gone or held |
//!
//! The session count (`rg/sessions`) is checked too: a pass counts the live session records, and
//! where the count drifted from them (an instance died between counting a session and writing
//! or removing its record) sets it right — only when no session was created or removed from a
//! `grace` before the pass began to its end (`rg/changes` stood still), so that nothing that
//! moves the count was in flight while the pass counted, and the pass before counted as many.
//!
//! `grace` covers the steps in flight: a stream being opened is listed right after its head is
//! written, and a writer publishes its data right after writing it. It is the lease
//! (`config.lease-ms`): a writer stalled longer has lost its stream anyway. Work per call: one
//! page of keys, the records they belong to (each loaded once per page), a delete per key
//! collected.

use serde::Deserialize;

use super::*;

/// A live session as garbage collection judges its keys.
struct Live {
    meta: SessionMeta,
    /// The claim keys its listed streams hold.
    claims: Vec<String>,
}

/// The records one page of keys belongs to, loaded once each (`None`: gone). A page is short:
/// a list to search beats a map's code.
#[derive(Default)]
struct Page {
    sessions: Vec<(String, Option<Live>)>,
    heads: Vec<(String, StreamNo, Option<StreamMeta>)>,
}

impl Page {
    fn session(&self, id: &str) -> Option<&Live> {
        self.sessions.iter().find(|(s, _)| s == id).and_then(|(_, live)| live.as_ref())
    }
}

/// Where a pass stands, carried in the cursor the host passes back: how many times sessions had
/// been created or removed when it began, when it began, the live sessions it found so far, and
/// the store's own cursor.
struct Pass {
    changes: i64,
    began: Millis,
    sessions: u64,
    store: Option<String>,
}

impl Pass {
    /// `None` for anything this gate did not hand out: the pass then begins anew.
    fn parse(cursor: &str) -> Option<Self> {
        let mut parts = cursor.splitn(4, '.');
        let (changes, began, sessions) = (parts.next()?, parts.next()?, parts.next()?);
        Some(Self {
            changes: changes.parse().ok()?,
            began: began.parse().ok()?,
            sessions: sessions.parse().ok()?,
            store: Some(parts.next()?.to_owned()),
        })
    }

    fn cursor(&self, store: &str) -> String {
        format!("{}.{}.{}.{store}", self.changes, self.began, self.sessions)
    }
}

impl Charged for CountCheck {
    /// A global record: no session's budget.
    fn charge(&self) -> u64 {
        0
    }
}

/// Evidence for checking the session count: sessions had been created or removed `changes`
/// times already at `since`, and the last pass found `sessions` of them.
#[derive(Serialize, Deserialize)]
struct CountCheck {
    changes: i64,
    since: Millis,
    sessions: u64,
}

impl<K: Kv> KvStore<K> {
    pub(super) fn collect(
        &mut self,
        cursor: Option<&str>,
        now: Millis,
        grace: Millis,
    ) -> Result<Swept, StoreError> {
        let mut pass = match cursor.and_then(Pass::parse) {
            Some(pass) => pass,
            None => Pass { changes: self.counter(SESSION_CHANGES)?, began: now, sessions: 0, store: None },
        };
        let (keys, next) = self.kv.list_keys(pass.store.as_deref())?;
        let mut page = Page::default();
        let mut removed = 0;
        for key in keys {
            if self.is_garbage(&key, now, grace, &mut page)? {
                self.kv.delete(&key)?;
                removed += 1;
            } else if let Some((session, KeyKind::Session)) = parse_key(&key)
                && page.session(&session).is_some()
            {
                pass.sessions += 1;
            }
        }
        match next {
            Some(store) => Ok(Swept { next: Some(pass.cursor(&store)), removed }),
            None => {
                self.check_count(&pass, now, grace)?;
                Ok(Swept { next: None, removed })
            }
        }
    }

    /// Sets the session count to the sessions the pass found, if it drifted (an instance died
    /// between counting a session and writing or removing its record) and the finding can be
    /// trusted: no session was created or removed from `grace` before the pass began to its
    /// end, so nothing that moves the count was in flight while it counted, and the pass before
    /// found as many (a store's listing may repeat a key: Redis `SCAN` does). Concurrent passes
    /// fix a drift once: the fix is a compare-and-swap on the evidence.
    fn check_count(&mut self, pass: &Pass, now: Millis, grace: Millis) -> Result<(), StoreError> {
        let changes = self.counter(SESSION_CHANGES)?;
        let evidence = self.load::<CountCheck>(COUNT_CHECK)?;
        let still = |c: &CountCheck| c.changes == pass.changes && changes == pass.changes;
        let since = evidence.as_ref().filter(|(c, _)| still(c)).map_or(now, |(c, _)| c.since);
        let found = CountCheck { changes, since, sessions: pass.sessions };
        let Some((check, loaded)) = evidence else { return self.create(COUNT_CHECK, &found) };
        if !still(&check) || check.sessions != pass.sessions || pass.began.saturating_sub(since) <= grace {
            self.swap(loaded, Some(&found))?;
            return Ok(());
        }
        let counted = self.counter(SESSION_COUNT)?;
        let drift = i64::try_from(pass.sessions).unwrap_or(i64::MAX).saturating_sub(counted);
        if drift != 0 && self.swap(loaded, Some(&found))? {
            self.kv.increment(SESSION_COUNT, drift)?;
        }
        Ok(())
    }

    fn is_garbage(
        &mut self,
        key: &str,
        now: Millis,
        grace: Millis,
        page: &mut Page,
    ) -> Result<bool, StoreError> {
        let Some((session, kind)) = parse_key(key) else { return Ok(false) };
        let Some(epoch) = self.live(&session, page)?.map(|l| l.meta.epoch) else {
            // Its place in the admission queue goes with it, as when a session is removed.
            if kind == KeyKind::QueueSlot {
                admission::leave(&mut self.kv, &session)?;
            }
            // What its count still holds comes off the total.
            if kind == KeyKind::Bytes {
                self.settle_bytes(&session)?;
            }
            return Ok(true);
        };
        let old = |t: Millis| now.saturating_sub(t) > grace;
        Ok(match kind {
            KeyKind::Session | KeyKind::StreamCounter | KeyKind::QueueSlot | KeyKind::Bytes => false,
            KeyKind::Stream(no) => {
                let Some(live) = page.session(&session) else { return Ok(true) };
                let listed = live.meta.streams.contains(&no);
                let Some((head, _)) = self.load::<StreamMeta>(key)? else { return Ok(true) };
                let garbage = head.epoch != live.meta.epoch || !listed && old(head.last_active);
                // Its claims go with it, as when a stream is removed, unless a listed stream
                // holds the same request id.
                if garbage {
                    self.count(key, 0, head.charge())?;
                    let claims: Vec<String> = head.requests().map(|id| claim_key(&session, id)).collect();
                    for claim in claims.iter().filter(|c| !live.claims.contains(c)) {
                        self.kv.delete(claim)?;
                    }
                }
                garbage
            }
            KeyKind::Event(no) => {
                match (self.current_head(&session, epoch, no, page)?, parse_data_key(key)) {
                    (None, _) => true,
                    (Some(_), None) => false,
                    (Some(head), Some(data)) => {
                        !head.names(data) && self.kv.get(key)?.is_some_and(|v| old(written_at(&v)))
                    }
                }
            }
            KeyKind::Claim => {
                let held = page.session(&session).is_some_and(|l| l.claims.iter().any(|c| c == key));
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
                let held = page.session(&session).is_some_and(|l| l.claims.contains(&claim));
                held || self.kv.get(&claim)?.is_none()
            }
        })
    }

    /// The session, with the claims its listed streams hold; `None` when it is gone.
    fn live<'p>(&mut self, session: &str, page: &'p mut Page) -> Result<Option<&'p Live>, StoreError> {
        if !page.sessions.iter().any(|(s, _)| s == session) {
            let live = match self.load::<SessionMeta>(&session_key(session))? {
                None => None,
                Some((meta, _)) => {
                    let mut claims = Vec::new();
                    for no in &meta.streams {
                        let head = self.current_head(session, meta.epoch, *no, page)?;
                        if let Some(head) = head {
                            claims.extend(head.requests().map(|id| claim_key(session, id)));
                        }
                    }
                    Some(Live { meta, claims })
                }
            };
            page.sessions.push((session.to_owned(), live));
        }
        Ok(page.session(session))
    }

    /// The stream's head if it is of the session's current `epoch`.
    fn current_head(
        &mut self,
        session: &str,
        epoch: u64,
        no: StreamNo,
        page: &mut Page,
    ) -> Result<Option<StreamMeta>, StoreError> {
        let at = |(s, n, _): &&(String, StreamNo, Option<StreamMeta>)| *n == no && s == session;
        if !page.heads.iter().any(|h| at(&h)) {
            let head = self.load::<StreamMeta>(&stream_key(session, no))?.map(|(h, _)| h);
            page.heads.push((session.to_owned(), no, head));
        }
        let head = page.heads.iter().find(at).and_then(|(.., h)| h.clone());
        Ok(head.filter(|h| h.epoch == epoch))
    }
}
