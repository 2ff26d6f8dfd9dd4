//! The gate instances a server calls, and who waits for whom.
//!
//! A wasmtime instance takes one call at a time. With world `gate-memory` the state is the
//! instance, so there is one and calls take turns (none of them waits on I/O). With world
//! `gate-kv` the state is in the store and any instance serves any call, so [`Instances`] keeps a
//! pool and makes another instance when none is idle: a call never waits for another call's
//! store round trip, and a stalled store costs each call its own timeout, not the sum of
//! everyone's.
//!
//! What must stay one step — a reconnect's decision and attaching its connection, an event
//! recorded and handed to the connection — concerns one session, so calls of one session still
//! take turns: each marks its session busy (waiting while another call of it is) before it
//! takes an instance; calls of other sessions never wait for it. Order: session, instance,
//! then a served stream's own locks.

use std::collections::HashSet;
use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use mcp_transport::gate::GateApi;
use resume_gate::Counters;

/// A gate instance, whichever world and embedding.
pub type Instance = Box<dyn GateApi + Send>;
/// Makes another instance of world `gate-kv`, configured.
pub type MakeInstance = Box<dyn Fn() -> anyhow::Result<Instance> + Send + Sync>;

/// Instances a pool makes at most; a call beyond waits for one to come back.
pub const MAX_INSTANCES: usize = 64;

pub struct Instances {
    idle: Mutex<Pool>,
    returned: Condvar,
    /// `None`: one instance (world `gate-memory`).
    more: Option<MakeInstance>,
    /// Sessions with a call holding an instance now: another call of one of them waits.
    busy: Mutex<HashSet<String>>,
    freed: Condvar,
}

struct Pool {
    idle: Vec<Slot>,
    made: usize,
    /// Each instance's counters as last read, by slot number: `/metrics` sums them without
    /// waiting for a busy instance.
    counted: Vec<Counters>,
}

struct Slot {
    number: usize,
    instance: Instance,
}

/// One instance, held for one call (or a few that belong together).
pub struct Held<'a> {
    owner: &'a Instances,
    slot: Option<Slot>,
    session: Option<String>,
}

impl Instances {
    /// One instance: calls take turns.
    pub fn single(instance: Instance) -> Self {
        Self::new(instance, None)
    }

    /// `first`, and more made by `more` when every instance is busy, up to [`MAX_INSTANCES`].
    pub fn pool(first: Instance, more: MakeInstance) -> Self {
        Self::new(first, Some(more))
    }

    fn new(first: Instance, more: Option<MakeInstance>) -> Self {
        let pool = Pool {
            idle: vec![Slot { number: 0, instance: first }],
            made: 1,
            counted: vec![Counters::default()],
        };
        Self {
            idle: Mutex::new(pool),
            returned: Condvar::new(),
            more,
            busy: Mutex::new(HashSet::new()),
            freed: Condvar::new(),
        }
    }

    /// An instance for a call of `session` (after the session's earlier calls), or of no
    /// session yet (`initialize`).
    /// Waiting, if it comes to that, happens off the async runtime's workers, so that a wait
    /// never stalls another request (`/metrics` while the store stalls, say).
    pub fn hold(&self, session: Option<&str>) -> Held<'_> {
        let session = session.map(|s| {
            if !lock(&self.busy).insert(s.to_owned()) {
                off_the_runtime(|| {
                    let mut busy = lock(&self.busy);
                    while !busy.insert(s.to_owned()) {
                        busy = self.freed.wait(busy).unwrap_or_else(PoisonError::into_inner);
                    }
                });
            }
            s.to_owned()
        });
        let slot = match self.take(false) {
            Some(slot) => slot,
            None => off_the_runtime(|| self.take(true).expect("waits until an instance comes back")),
        };
        Held { owner: self, slot: Some(slot), session }
    }

    /// An idle instance, or a new one while the pool may grow; `None` if it would have to wait
    /// and `wait` is false.
    fn take(&self, wait: bool) -> Option<Slot> {
        let mut pool = lock(&self.idle);
        loop {
            if let Some(slot) = pool.idle.pop() {
                return Some(slot);
            }
            if let Some(more) = self.more.as_ref().filter(|_| pool.made < MAX_INSTANCES) {
                let number = pool.made;
                pool.made += 1;
                pool.counted.push(Counters::default());
                drop(pool);
                match more() {
                    Ok(instance) => return Some(Slot { number, instance }),
                    Err(e) => {
                        tracing::error!(error = %e, "could not make another gate instance; waiting for one");
                        pool = lock(&self.idle);
                        pool.made -= 1;
                        pool.counted.pop();
                        continue;
                    }
                }
            }
            if !wait {
                return None;
            }
            pool = self.returned.wait(pool).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Every instance's counters, summed: an idle instance is read now, a busy one as it was
    /// last read (reading never touches the store; nothing here waits on a call).
    pub fn counters(&self) -> Counters {
        let mut pool = lock(&self.idle);
        let Pool { idle, counted, .. } = &mut *pool;
        for slot in idle.iter_mut() {
            if let Ok(c) = slot.instance.counters() {
                counted[slot.number] = c;
            }
        }
        let mut sum = Counters::default();
        for c in counted.iter() {
            sum.merge(c);
        }
        sum
    }

    /// The memory of the one instance of world `gate-memory` (a pool's state is in the store).
    pub fn memory_bytes(&self) -> Option<usize> {
        if self.more.is_some() {
            return None;
        }
        self.hold(None).memory_bytes()
    }
}

impl Deref for Held<'_> {
    type Target = Instance;
    fn deref(&self) -> &Instance {
        &self.slot.as_ref().expect("held until dropped").instance
    }
}

impl DerefMut for Held<'_> {
    fn deref_mut(&mut self) -> &mut Instance {
        &mut self.slot.as_mut().expect("held until dropped").instance
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            lock(&self.owner.idle).idle.push(slot);
            self.owner.returned.notify_one();
        }
        if let Some(session) = self.session.take() {
            lock(&self.owner.busy).remove(&session);
            self.owner.freed.notify_all();
        }
    }
}

/// Runs `wait` where blocking is allowed: on a worker of a multi-threaded tokio runtime, the
/// worker's other tasks move to another thread first.
fn off_the_runtime<T>(wait: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
