//! The `Driver` trait, the one interface the operation runner speaks, and `Native`, the core
//! called directly. The component sides implement `Driver` in `resume-gate-tests`.

use anyhow::Result;
use resume_gate::kv::{KvStore, MemoryKv};
use resume_gate::{
    Config, Decision, Event, Gate, GateError, MemoryStore, Opened, Origin, SessionInfo, Store,
};

/// The gate's operations, in the core's types; `Err` of the outer result is a trap.
pub trait Driver {
    fn set_now(&mut self, ms: u64);
    fn configure(&mut self, config: &Config) -> Result<Result<(), GateError>>;
    fn open_session(&mut self, session: &str) -> Result<Result<SessionInfo, GateError>>;
    fn end_session(&mut self, session: &str) -> Result<Result<(), GateError>>;
    fn open_stream(&mut self, session: &str, origin: &Origin) -> Result<Result<Opened, GateError>>;
    fn emit(&mut self, session: &str, stream: u64, data: &str) -> Result<Result<Event, GateError>>;
    fn terminal(&mut self, session: &str, stream: u64, data: &str) -> Result<Result<Event, GateError>>;
    fn detach(&mut self, session: &str, stream: u64, attachment: u32) -> Result<Result<(), GateError>>;
    fn abort(&mut self, session: &str, stream: u64) -> Result<Result<(), GateError>>;
    fn reconnect(
        &mut self,
        session: &str,
        cursor: &[u8],
        origin: &Origin,
    ) -> Result<Result<Decision, GateError>>;
}

/// The core, called directly, over any store. Entropy comes from a counter: deterministic.
pub struct Native<S: Store = MemoryStore> {
    pub gate: Gate<S>,
    now: u64,
    entropy: u64,
}

impl Native {
    pub fn new(config: Config) -> Self {
        Self::with_store(config, MemoryStore::new())
    }
}

impl Native<KvStore<MemoryKv>> {
    /// The core over a key-value store; `kv` is shared with whoever else holds a clone.
    pub fn over_kv(config: Config, kv: MemoryKv, seed: u64) -> Self {
        Self::with_store(config, KvStore::new(kv, seed))
    }
}

impl<S: Store> Native<S> {
    pub fn with_store(config: Config, store: S) -> Self {
        Self { gate: Gate::new(config, store).expect("valid config"), now: 0, entropy: 0x5eed }
    }
}

impl<S: Store> Driver for Native<S> {
    fn set_now(&mut self, ms: u64) {
        self.now = ms;
    }
    fn configure(&mut self, config: &Config) -> Result<Result<(), GateError>> {
        Ok(self.gate.configure(config.clone()))
    }
    fn open_session(&mut self, session: &str) -> Result<Result<SessionInfo, GateError>> {
        self.entropy = self.entropy.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        Ok(self.gate.open_session(session, self.now, self.entropy.to_le_bytes()))
    }
    fn end_session(&mut self, session: &str) -> Result<Result<(), GateError>> {
        Ok(self.gate.end_session(session))
    }
    fn open_stream(&mut self, session: &str, origin: &Origin) -> Result<Result<Opened, GateError>> {
        Ok(self.gate.open_stream(session, origin.clone(), self.now))
    }
    fn emit(&mut self, session: &str, stream: u64, data: &str) -> Result<Result<Event, GateError>> {
        Ok(self.gate.emit(session, stream, data.to_owned(), self.now))
    }
    fn terminal(&mut self, session: &str, stream: u64, data: &str) -> Result<Result<Event, GateError>> {
        Ok(self.gate.terminal(session, stream, data.to_owned(), self.now))
    }
    fn detach(&mut self, session: &str, stream: u64, attachment: u32) -> Result<Result<(), GateError>> {
        Ok(self.gate.detach(session, stream, attachment, self.now))
    }
    fn abort(&mut self, session: &str, stream: u64) -> Result<Result<(), GateError>> {
        Ok(self.gate.abort(session, stream))
    }
    fn reconnect(
        &mut self,
        session: &str,
        cursor: &[u8],
        origin: &Origin,
    ) -> Result<Result<Decision, GateError>> {
        Ok(self.gate.reconnect(session, cursor, origin.clone(), self.now))
    }
}
