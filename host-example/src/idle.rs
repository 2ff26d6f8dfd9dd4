//! `--session-idle-ms` for state kept in this process: a session that saw no request and holds
//! no open response for that long is ended, as a Redis store lets such a session's keys expire.
//! (A shared store expires them itself; this is for the memory store only.)
//!
//! What is remembered is bounded: one entry per session this process answered, at most
//! `capacity`; past it the entry idle longest goes first (that session then ends only by
//! admission, as before).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use resume_gate::Millis;

pub struct IdleSessions {
    idle_ms: Millis,
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_id: HashMap<String, Entry>,
    /// The same entries, by when they were last active.
    by_time: BTreeSet<(Millis, String)>,
}

struct Entry {
    seen: Millis,
    /// SSE responses of the session open now: it is not idle while one is.
    open: u32,
}

impl IdleSessions {
    pub fn new(idle_ms: Millis, capacity: usize) -> Self {
        Self { idle_ms, capacity: capacity.max(1), inner: Mutex::default() }
    }

    /// How long a session may stay idle.
    pub fn idle_ms(&self) -> Millis {
        self.idle_ms
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A request of `session` was answered at `now`.
    pub fn touch(&self, session: &str, now: Millis) {
        self.change(session, now, 0);
    }

    /// An SSE response of `session` opened (`+1`) or ended (`-1`) at `now`.
    pub fn response(&self, session: &str, now: Millis, opened: bool) {
        self.change(session, now, if opened { 1 } else { -1 });
    }

    fn change(&self, session: &str, now: Millis, open: i32) {
        let mut inner = self.inner();
        let Inner { by_id, by_time } = &mut *inner;
        match by_id.get_mut(session) {
            Some(entry) => {
                by_time.remove(&(entry.seen, session.to_owned()));
                entry.seen = entry.seen.max(now);
                entry.open = entry.open.saturating_add_signed(open);
                by_time.insert((entry.seen, session.to_owned()));
            }
            None => {
                if by_id.len() >= self.capacity
                    && let Some((_, oldest)) = by_time.pop_first()
                {
                    by_id.remove(&oldest);
                }
                by_id.insert(session.to_owned(), Entry { seen: now, open: u32::from(open > 0) });
                by_time.insert((now, session.to_owned()));
            }
        }
    }

    /// The sessions idle past the limit at `now` with no open response, forgotten here.
    pub fn take_expired(&self, now: Millis) -> Vec<String> {
        let mut inner = self.inner();
        let Inner { by_id, by_time } = &mut *inner;
        let due: Vec<(Millis, String)> = by_time
            .iter()
            .take_while(|(seen, _)| now.saturating_sub(*seen) > self.idle_ms)
            .cloned()
            .collect();
        let mut expired = Vec::new();
        for (seen, id) in due {
            if by_id.get(&id).is_some_and(|e| e.open == 0) {
                by_time.remove(&(seen, id.clone()));
                by_id.remove(&id);
                expired.push(id);
            }
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_expires_once_idle_past_the_limit_and_never_while_a_response_is_open() {
        let idle = IdleSessions::new(100, 8);
        idle.touch("a", 0);
        idle.touch("b", 0);
        idle.response("b", 50, true);
        assert!(idle.take_expired(100).is_empty(), "not past the limit yet");
        assert_eq!(idle.take_expired(151), ["a"]);
        assert!(idle.take_expired(1_000).is_empty(), "b holds an open response");
        idle.response("b", 1_000, false);
        assert!(idle.take_expired(1_100).is_empty());
        assert_eq!(idle.take_expired(1_101), ["b"]);
    }

    #[test]
    fn what_is_remembered_is_bounded() {
        let idle = IdleSessions::new(100, 2);
        for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
            idle.touch(id, i as Millis);
        }
        assert_eq!(idle.take_expired(1_000), ["b", "c"], "the one idle longest was forgotten");
    }
}
