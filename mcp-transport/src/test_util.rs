//! Test doubles (feature `test-util`): the core gate in this process behind `GateApi`, for the
//! transport's tests, the fuzzer and the model tests, which drive the gate without a component.

use resume_gate::{
    Config, Counters, Decision, Gate, GateError, MemoryStore, Opened, Origin, Polled, Recorded, RequestId,
    SessionInfo, Store, StreamStatus, Swept,
};

use crate::gate::GateApi;

/// The core gate in this process, over any store: for the transport's tests, the fuzzer and
/// the model tests, which drive the gate without a component. Its clock is set by the caller
/// and, if built by [`InProcess::new`], ticks 1 ms per call; its randomness is a counter
/// (deterministic). `broken` makes every call fail as a broken store would.
pub struct InProcess<S: Store = MemoryStore> {
    pub gate: Gate<S>,
    now: u64,
    tick_ms: u64,
    entropy: u64,
    pub broken: bool,
}

impl Default for InProcess {
    fn default() -> Self {
        Self::new()
    }
}

impl InProcess {
    /// Default bounds over the memory store; the clock ticks per call.
    pub fn new() -> Self {
        let mut gate = Self::with_store(Config::default(), MemoryStore::new()).expect("the default bounds");
        gate.now = 1_000;
        gate.tick_ms = 1;
        gate
    }
}

impl InProcess {
    /// `config` over the memory store; the clock stands at 0 until [`InProcess::set_now`].
    pub fn with_config(config: Config) -> Result<Self, GateError> {
        Self::with_store(config, MemoryStore::new())
    }
}

impl<S: Store> InProcess<S> {
    /// The core over `store` with `config`; the clock stands at 0 until [`InProcess::set_now`].
    pub fn with_store(config: Config, store: S) -> Result<Self, GateError> {
        Ok(Self { gate: Gate::new(config, store)?, now: 0, tick_ms: 0, entropy: 0x5eed, broken: false })
    }

    /// Sets the clock, in milliseconds since the Unix epoch.
    pub fn set_now(&mut self, ms: u64) {
        self.now = ms;
    }

    /// Moves the clock on, as time passing between calls would.
    pub fn advance(&mut self, ms: u64) {
        self.now += ms;
    }

    fn tick(&mut self) -> Result<u64, GateError> {
        if self.broken {
            return Err(GateError::Store("the store is down".into()));
        }
        self.now += self.tick_ms;
        Ok(self.now)
    }

    fn entropy(&mut self) -> [u8; 8] {
        self.entropy = self.entropy.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.entropy.to_le_bytes()
    }
}

impl<S: Store> GateApi for InProcess<S> {
    fn configure(&mut self, config: &Config) -> Result<(), GateError> {
        self.tick()?;
        self.gate.configure(config.clone())
    }
    fn open_session(&mut self, session: &str) -> Result<SessionInfo, GateError> {
        let now = self.tick()?;
        let entropy = self.entropy();
        self.gate.open_session(session, now, entropy)
    }
    fn has_session(&mut self, session: &str) -> Result<bool, GateError> {
        self.tick()?;
        self.gate.has_session(session)
    }
    fn end_session(&mut self, session: &str) -> Result<(), GateError> {
        self.tick()?;
        self.gate.end_session(session)
    }
    fn open_stream(&mut self, session: &str, origin: &Origin) -> Result<Opened, GateError> {
        let now = self.tick()?;
        self.gate.open_stream(session, origin.clone(), now)
    }
    fn join_stream(&mut self, session: &str, stream: u64, ids: &[RequestId]) -> Result<Vec<bool>, GateError> {
        let now = self.tick()?;
        self.gate.join_stream(session, stream, ids, now)
    }
    fn check_stream(
        &mut self,
        session: &str,
        stream: u64,
        attachment: u32,
    ) -> Result<StreamStatus, GateError> {
        self.tick()?;
        self.gate.check_stream(session, stream, attachment)
    }
    fn release_stream(&mut self, session: &str, stream: u64) -> Result<(), GateError> {
        self.tick()?;
        self.gate.release_stream(session, stream)
    }
    fn emit(&mut self, session: &str, stream: u64, data: &str) -> Result<Recorded, GateError> {
        let now = self.tick()?;
        self.gate.emit(session, stream, data.to_owned(), now)
    }
    fn terminal(&mut self, session: &str, stream: u64, data: &str) -> Result<Recorded, GateError> {
        let now = self.tick()?;
        self.gate.terminal(session, stream, data.to_owned(), now)
    }
    fn detach(&mut self, session: &str, stream: u64, attachment: u32) -> Result<(), GateError> {
        let now = self.tick()?;
        self.gate.detach(session, stream, attachment, now)
    }
    fn abort(&mut self, session: &str, stream: u64) -> Result<(), GateError> {
        self.tick()?;
        self.gate.abort(session, stream)
    }
    fn abort_request(&mut self, session: &str, id: &RequestId) -> Result<bool, GateError> {
        self.tick()?;
        self.gate.abort_request(session, id)
    }
    fn poll(&mut self, session: &str, stream: u64, attachment: u32, after: u64) -> Result<Polled, GateError> {
        let now = self.tick()?;
        self.gate.poll(session, stream, attachment, after, now)
    }
    fn renew_lease(&mut self, session: &str, stream: u64) -> Result<(), GateError> {
        let now = self.tick()?;
        self.gate.renew_lease(session, stream, now)
    }
    fn reconnect(&mut self, session: &str, cursor: &[u8], origin: &Origin) -> Result<Decision, GateError> {
        let now = self.tick()?;
        self.gate.reconnect(session, cursor, origin.clone(), now)
    }
    fn counters(&mut self) -> Result<Counters, GateError> {
        self.tick()?;
        self.gate.counters()
    }
    fn collect_garbage(&mut self, cursor: Option<&str>) -> Result<Swept, GateError> {
        let now = self.tick()?;
        self.gate.collect_garbage(cursor, now)
    }
}
