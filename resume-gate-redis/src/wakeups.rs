//! Wake-ups instead of polling: a process that follows streams another process writes keeps
//! one connection subscribed to every stream head's channel under its prefix, and wakes the
//! followers of the stream whose head changed. Every swap of a head publishes (from inside its
//! script), so an idle follower costs the store nothing between events.
//!
//! Messages can be missed while the subscription is down; whenever it is (re)established,
//! every follower is woken once and polls, so nothing waits longer than a reconnect.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use crate::{RedisKv, escape_glob};

/// The channel a swap of the stream head `key` publishes on.
pub(crate) fn channel(prefix: &str, key: &str) -> String {
    format!("{prefix}wake:{key}")
}

/// How often the subscriber looks up from its connection to see whether it is still wanted.
const LOOK_UP: Duration = Duration::from_secs(1);
/// How long it waits before it subscribes again after the connection failed.
const RECONNECT_AFTER: Duration = Duration::from_millis(250);

/// A process's subscription; followers [`Wakeups::watch`] their stream. Dropping the last
/// handle ends the subscription within a second.
#[derive(Clone)]
pub struct Wakeups {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Followers by stream head key (without the prefix).
    waiters: Mutex<HashMap<String, Vec<Arc<Notify>>>>,
    /// Times the subscription was (re)established.
    subscribed: AtomicU64,
}

/// One follower's registration: woken when its stream's head changes. Deregisters on drop.
pub struct Wakeup {
    key: String,
    notify: Arc<Notify>,
    inner: Arc<Inner>,
}

impl Wakeups {
    /// Subscribes, on a thread and connection of its own, to the stream heads under `kv`'s
    /// prefix. The subscription comes up in the background (and again after a failure).
    pub fn start(kv: &RedisKv) -> Self {
        let inner = Arc::new(Inner::default());
        let watcher = Arc::downgrade(&inner);
        let kv = kv.clone();
        let spawned = std::thread::Builder::new().name("resume-gate wake-ups".into()).spawn(move || {
            while let Some(inner) = watcher.upgrade() {
                drop(inner);
                let _ = subscribe(&kv, &watcher);
                std::thread::sleep(RECONNECT_AFTER);
            }
        });
        if let Err(e) = spawned {
            warn_no_thread(&e);
        }
        Self { inner }
    }

    /// Registers a follower of `session`'s stream `stream`.
    pub fn watch(&self, session: &str, stream: u64) -> Wakeup {
        let key = resume_gate::kv::stream_key(session, stream);
        let notify = Arc::new(Notify::new());
        self.inner.waiters().entry(key.clone()).or_default().push(Arc::clone(&notify));
        Wakeup { key, notify, inner: Arc::clone(&self.inner) }
    }

    /// How many times the subscription was established (for tests: 0 until it is up).
    pub fn subscriptions(&self) -> u64 {
        self.inner.subscribed.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for Wakeups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wakeups").field("subscriptions", &self.subscriptions()).finish_non_exhaustive()
    }
}

impl Wakeup {
    /// Returns once the stream's head changed since the last wake-up (at once if it did
    /// already), or the subscription was re-established.
    pub async fn woken(&self) {
        self.notify.notified().await;
    }
}

impl Drop for Wakeup {
    fn drop(&mut self) {
        let mut waiters = self.inner.waiters();
        if let Some(list) = waiters.get_mut(&self.key) {
            list.retain(|n| !Arc::ptr_eq(n, &self.notify));
            if list.is_empty() {
                waiters.remove(&self.key);
            }
        }
    }
}

impl Inner {
    fn waiters(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Arc<Notify>>>> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wake(&self, key: &str) {
        if let Some(list) = self.waiters().get(key) {
            list.iter().for_each(|n| n.notify_one());
        }
    }

    fn wake_all(&self) {
        self.waiters().values().flatten().for_each(|n| n.notify_one());
    }
}

/// Holds one subscription until it fails or nobody holds the `Wakeups` any more.
fn subscribe(kv: &RedisKv, watcher: &std::sync::Weak<Inner>) -> redis::RedisResult<()> {
    let mut conn = kv.shared.backend.subscriber(kv.shared.timeout)?;
    conn.set_read_timeout(Some(LOOK_UP))?;
    let mut pubsub = conn.as_pubsub();
    let pattern = format!("{}*", escape_glob(&channel(&kv.prefix, "")));
    pubsub.psubscribe(&pattern)?;
    let skip = channel(&kv.prefix, "").len();
    if let Some(inner) = watcher.upgrade() {
        inner.subscribed.fetch_add(1, Ordering::Relaxed);
        inner.wake_all();
    }
    loop {
        let message = pubsub.get_message();
        let Some(inner) = watcher.upgrade() else { return Ok(()) };
        match message {
            Ok(message) => {
                if let Some(key) = message.get_channel_name().get(skip..) {
                    inner.wake(key);
                }
            }
            Err(e) if e.is_timeout() => {}
            Err(e) => return Err(e),
        }
    }
}

fn warn_no_thread(e: &std::io::Error) {
    eprintln!("resume-gate: no thread for store wake-ups ({e}); followers poll at their heartbeat");
}
