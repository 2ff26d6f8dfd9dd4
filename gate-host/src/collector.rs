//! Garbage collection off the request path: a thread that runs whole `collect-garbage` passes
//! over the shared store on a timer, in a gate-kv instance of its own. A host whose instances
//! live per request (Spin, edge-host) or whose processes share one Redis runs one; an instance
//! killed between two store calls then leaves nothing behind for longer than two periods.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use resume_gate::Config;
use wasmtime::Engine;

use crate::keyvalue::SharedKv;
use crate::kv_world::{self, GateKvPre, KvState, KvWorld, convert};

/// Runs one whole pass over `kv` with `config`'s lease as the grace period; the keys removed.
pub fn collect_pass(pre: &GateKvPre<KvState>, kv: &SharedKv, config: &Config) -> anyhow::Result<u32> {
    let mut instance = KvWorld::new(pre, kv.clone())?;
    let (gate, store) = instance.exports();
    gate.call_configure(&mut *store, &convert::to_wit_config(config))?
        .map_err(|e| anyhow::anyhow!("configure: {:?}", convert::from_wit_error(e)))?;
    let (mut cursor, mut removed) = (None, 0);
    loop {
        let swept = gate
            .call_collect_garbage(&mut *store, cursor.as_deref())?
            .map_err(|e| anyhow::anyhow!("collect-garbage: {:?}", convert::from_wit_error(e)))?;
        removed += swept.removed;
        cursor = swept.next;
        if cursor.is_none() {
            return Ok(removed);
        }
    }
}

/// The collecting thread; dropping it stops it.
pub struct Collector {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Collector {
    /// Starts a thread that runs a pass over `kv` every `every`.
    pub fn spawn(kv: SharedKv, every: Duration, config: Config) -> anyhow::Result<Self> {
        let pre = kv_world::prepare(&Engine::default())?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new().name("collect-garbage".into()).spawn(move || {
            let tick = Duration::from_millis(50).min(every);
            let mut waited = Duration::ZERO;
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                waited += tick;
                if waited < every {
                    continue;
                }
                waited = Duration::ZERO;
                match collect_pass(&pre, &kv, &config) {
                    Ok(0) => {}
                    Ok(n) => eprintln!("collect-garbage: removed {n} keys that stopped instances left"),
                    Err(e) => eprintln!("collect-garbage: {e:#}"),
                }
            }
        })?;
        Ok(Self { stop, thread: Some(thread) })
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
