//! What the transport needs from the gate: the operations of `mcp:resume-gate/gate`, in the
//! core's types. A host implements it over its binding of the component.

use resume_gate::{Counters, Decision, Event, Gate, GateError, Opened, Origin, Polled, RequestId};

pub trait GateApi {
    fn open_session(&mut self, session: &str) -> Result<u64, GateError>;
    /// `Err` when the store could not tell (the host answers `503`, never `404`).
    fn has_session(&mut self, session: &str) -> Result<bool, GateError>;
    fn end_session(&mut self, session: &str) -> Result<(), GateError>;
    fn open_stream(&mut self, session: &str, origin: &Origin) -> Result<Opened, GateError>;
    fn emit(&mut self, session: &str, stream: u64, data: &str) -> Result<Event, GateError>;
    fn terminal(&mut self, session: &str, stream: u64, data: &str) -> Result<Event, GateError>;
    fn detach(&mut self, session: &str, stream: u64, attachment: u32) -> Result<(), GateError>;
    fn abort(&mut self, session: &str, stream: u64) -> Result<(), GateError>;
    fn abort_request(&mut self, session: &str, id: &RequestId) -> Result<bool, GateError>;
    fn poll(&mut self, session: &str, stream: u64, attachment: u32, after: u64) -> Result<Polled, GateError>;
    /// The call writing `stream` is still running: renews its lease (`StreamFinished`: stop it).
    fn renew_lease(&mut self, session: &str, stream: u64) -> Result<(), GateError>;
    fn reconnect(&mut self, session: &str, cursor: &[u8], origin: &Origin) -> Result<Decision, GateError>;
    /// What the gate counted since it started (`read-counters`).
    fn counters(&mut self) -> Result<Counters, GateError>;
    /// Bytes of memory the gate's state occupies, when the host can tell (a component
    /// instance: its linear memory).
    fn memory_bytes(&self) -> Option<usize> {
        None
    }
}

/// The core gate in this process, with a clock that ticks per call (deterministic), and a
/// switch that makes every call fail as a broken store would: for tests and the fuzzer, which
/// drive the transport without a component.
pub struct InProcess {
    pub gate: Gate,
    now: u64,
    pub broken: bool,
}

impl Default for InProcess {
    fn default() -> Self {
        Self::new()
    }
}

impl InProcess {
    pub fn new() -> Self {
        Self { gate: Gate::in_memory(resume_gate::Config::default()).unwrap(), now: 1_000, broken: false }
    }

    fn tick(&mut self) -> Result<u64, GateError> {
        if self.broken {
            return Err(GateError::Store("the store is down".into()));
        }
        self.now += 1;
        Ok(self.now)
    }

    /// Moves the clock on, as time passing between calls would.
    pub fn advance(&mut self, ms: u64) {
        self.now += ms;
    }
}

impl GateApi for InProcess {
    fn counters(&mut self) -> Result<Counters, GateError> {
        self.tick()?;
        self.gate.counters()
    }
    fn open_session(&mut self, session: &str) -> Result<u64, GateError> {
        let now = self.tick()?;
        self.gate.open_session(session, now, now.to_le_bytes()).map(|i| i.epoch)
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
    fn emit(&mut self, session: &str, stream: u64, data: &str) -> Result<Event, GateError> {
        let now = self.tick()?;
        self.gate.emit(session, stream, data.to_owned(), now)
    }
    fn terminal(&mut self, session: &str, stream: u64, data: &str) -> Result<Event, GateError> {
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
}
