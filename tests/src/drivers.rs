//! One trait, two sides: the native core and the real component in wasmtime.
//!
//! The component side reads time from a wall clock the test controls, through WASI, exactly as
//! it would read the host's clock; randomness is the host's real one (epochs are compared
//! after normalization, see `ops`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Result;
use host_example::GateHost;
use host_example::types as wit;
use resume_gate::{
    Config, Decision, Event, FreshStart, Gate, GateError, Opened, Origin, RequestId, Resumption, SessionInfo,
    StaleReason,
};
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime_wasi::{HostWallClock, WasiCtxBuilder};

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

/// The core, called directly. Entropy comes from a counter: deterministic.
pub struct Native {
    pub gate: Gate,
    now: u64,
    entropy: u64,
}

impl Native {
    pub fn new(config: Config) -> Self {
        Self { gate: Gate::in_memory(config).expect("valid config"), now: 0, entropy: 0x5eed }
    }
}

impl Driver for Native {
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

/// A wall clock the test sets, in milliseconds since the Unix epoch.
#[derive(Clone, Default)]
pub struct TestClock(Arc<AtomicU64>);

impl TestClock {
    pub fn set(&self, ms: u64) {
        self.0.store(ms, Ordering::SeqCst);
    }
}

impl HostWallClock for TestClock {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }
    fn now(&self) -> Duration {
        Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
}

/// The component built by host-example's build script, compiled once per test process.
pub fn compiled_gate() -> (Engine, Component) {
    static COMPILED: std::sync::OnceLock<(Engine, Component)> = std::sync::OnceLock::new();
    COMPILED
        .get_or_init(|| {
            let engine = Engine::default();
            let component =
                GateHost::compile(&engine, host_example::GATE_WASM).expect("compile the gate component");
            (engine, component)
        })
        .clone()
}

/// The real component in wasmtime, one instance, its clock under the test's control.
pub struct Wasm {
    pub host: GateHost,
    clock: TestClock,
}

impl Wasm {
    pub fn new() -> Result<Self> {
        let (engine, component) = compiled_gate();
        let clock = TestClock::default();
        let wasi = WasiCtxBuilder::new().wall_clock(clock.clone()).build();
        Ok(Self { host: GateHost::with_wasi(&engine, &component, wasi)?, clock })
    }
}

impl Driver for Wasm {
    fn set_now(&mut self, ms: u64) {
        self.clock.set(ms);
    }
    fn configure(&mut self, config: &Config) -> Result<Result<(), GateError>> {
        let (gate, store) = self.host.gate();
        Ok(gate.call_configure(store, &to_wit_config(config))?.map_err(from_wit_error))
    }
    fn open_session(&mut self, session: &str) -> Result<Result<SessionInfo, GateError>> {
        let (gate, store) = self.host.gate();
        Ok(gate
            .call_open_session(store, session)?
            .map(|i| SessionInfo { epoch: i.epoch })
            .map_err(from_wit_error))
    }
    fn end_session(&mut self, session: &str) -> Result<Result<(), GateError>> {
        let (gate, store) = self.host.gate();
        Ok(gate.call_end_session(store, session)?.map_err(from_wit_error))
    }
    fn open_stream(&mut self, session: &str, origin: &Origin) -> Result<Result<Opened, GateError>> {
        let (gate, store) = self.host.gate();
        Ok(gate
            .call_open_stream(store, session, &to_wit_origin(origin))?
            .map(from_wit_opened)
            .map_err(from_wit_error))
    }
    fn emit(&mut self, session: &str, stream: u64, data: &str) -> Result<Result<Event, GateError>> {
        let (gate, store) = self.host.gate();
        Ok(gate.call_on_emit(store, session, stream, data)?.map(from_wit_event).map_err(from_wit_error))
    }
    fn terminal(&mut self, session: &str, stream: u64, data: &str) -> Result<Result<Event, GateError>> {
        let (gate, store) = self.host.gate();
        Ok(gate.call_on_terminal(store, session, stream, data)?.map(from_wit_event).map_err(from_wit_error))
    }
    fn detach(&mut self, session: &str, stream: u64, attachment: u32) -> Result<Result<(), GateError>> {
        let (gate, store) = self.host.gate();
        Ok(gate.call_on_detach(store, session, stream, attachment)?.map_err(from_wit_error))
    }
    fn abort(&mut self, session: &str, stream: u64) -> Result<Result<(), GateError>> {
        let (gate, store) = self.host.gate();
        Ok(gate.call_abort_stream(store, session, stream)?.map_err(from_wit_error))
    }
    fn reconnect(
        &mut self,
        session: &str,
        cursor: &[u8],
        origin: &Origin,
    ) -> Result<Result<Decision, GateError>> {
        let (gate, store) = self.host.gate();
        let d = gate.call_on_reconnect(store, session, cursor, &to_wit_origin(origin))?;
        Ok(d.map(from_wit_decision).map_err(from_wit_error))
    }
}

pub fn to_wit_config(c: &Config) -> wit::Config {
    wit::Config {
        max_events_per_stream: c.max_events_per_stream,
        max_bytes_per_stream: c.max_bytes_per_stream,
        max_streams_per_session: c.max_streams_per_session,
        max_sessions: c.max_sessions,
        retention_ms: c.retention_ms,
        session_idle_ms: c.session_idle_ms,
        retry_ms: c.retry_ms,
        signing_key: c.signing_key.clone(),
    }
}

pub fn from_wit_config(c: wit::Config) -> Config {
    Config {
        max_events_per_stream: c.max_events_per_stream,
        max_bytes_per_stream: c.max_bytes_per_stream,
        max_streams_per_session: c.max_streams_per_session,
        max_sessions: c.max_sessions,
        retention_ms: c.retention_ms,
        session_idle_ms: c.session_idle_ms,
        retry_ms: c.retry_ms,
        signing_key: c.signing_key,
    }
}

fn to_wit_origin(o: &Origin) -> wit::Origin {
    match o {
        Origin::Standalone => wit::Origin::Standalone,
        Origin::Request(RequestId::Number(n)) => wit::Origin::Request(wit::RequestId::Number(*n)),
        Origin::Request(RequestId::Text(s)) => wit::Origin::Request(wit::RequestId::Text(s.clone())),
    }
}

fn from_wit_request_id(id: wit::RequestId) -> RequestId {
    match id {
        wit::RequestId::Number(n) => RequestId::Number(n),
        wit::RequestId::Text(s) => RequestId::Text(s),
    }
}

fn from_wit_event(e: wit::Event) -> Event {
    Event { id: e.id, stream: e.stream, seq: e.seq, data: e.data, retry_ms: e.retry_ms, terminal: e.terminal }
}

fn from_wit_opened(o: wit::Opened) -> Opened {
    Opened { stream: o.stream, attachment: o.attachment, priming: from_wit_event(o.priming) }
}

pub fn from_wit_reason(r: wit::StaleReason) -> StaleReason {
    match r {
        wit::StaleReason::Malformed => StaleReason::Malformed,
        wit::StaleReason::Forged => StaleReason::Forged,
        wit::StaleReason::OtherSession => StaleReason::OtherSession,
        wit::StaleReason::EpochChanged => StaleReason::EpochChanged,
        wit::StaleReason::Unknown => StaleReason::Unknown,
        wit::StaleReason::PostNeverResumes => StaleReason::PostNeverResumes,
        wit::StaleReason::Completed => StaleReason::Completed,
        wit::StaleReason::Aborted => StaleReason::Aborted,
        wit::StaleReason::Superseded => StaleReason::Superseded,
        wit::StaleReason::Evicted => StaleReason::Evicted,
    }
}

fn from_wit_decision(d: wit::Decision) -> Decision {
    match d {
        wit::Decision::Resume(r) => Decision::Resume(Resumption {
            stream: r.stream,
            attachment: r.attachment,
            events: r.events.into_iter().map(from_wit_event).collect(),
            includes_terminal: r.includes_terminal,
        }),
        wit::Decision::Fresh(f) => Decision::Fresh(FreshStart {
            reason: from_wit_reason(f.reason),
            opened: from_wit_opened(f.opened),
            stranded: f.stranded.map(from_wit_request_id),
        }),
    }
}

pub fn from_wit_error(e: wit::GateError) -> GateError {
    match e {
        wit::GateError::InvalidConfig(why) => GateError::InvalidConfig(why),
        wit::GateError::InvalidSessionId => GateError::InvalidSessionId,
        wit::GateError::UnknownSession => GateError::UnknownSession,
        wit::GateError::UnknownStream => GateError::UnknownStream,
        wit::GateError::StreamFinished => GateError::StreamFinished,
        wit::GateError::NotARequestStream => GateError::NotARequestStream,
        wit::GateError::DuplicateRequestId => GateError::DuplicateRequestId,
        wit::GateError::TooManySessions => GateError::TooManySessions,
        wit::GateError::TooManyStreams => GateError::TooManyStreams,
        wit::GateError::StoreFailure(why) => GateError::Store(why),
    }
}
