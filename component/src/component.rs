//! The wit-bindgen glue: exports `mcp:resume-gate/gate` from a `wasm32-wasip2` component.
//!
//! It is the core's driver: it reads the wall clock and randomness from WASI, maps WIT types
//! to core types and back, and holds this instance's gate. It never panics: every failure
//! crosses the boundary as a `gate-error`. Feature `component` builds world `gate-memory`
//! (state in this instance); `component-kv` builds world `gate-kv` (state in the host's
//! `wasi:keyvalue` bucket `default`, see [`wasi_kv`]).

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::{Config, Decision, Event, GateError, Millis, Opened, Origin, Polled, RequestId, StaleReason};

#[cfg(not(feature = "component-kv"))]
wit_bindgen::generate!({
    world: "gate-memory",
    path: "../wit",
});

#[cfg(feature = "component-kv")]
wit_bindgen::generate!({
    world: "gate-kv",
    path: "../wit",
    generate_all,
});

#[cfg(feature = "component-kv")]
mod wasi_kv;

#[cfg(not(feature = "component-kv"))]
type InstanceGate = crate::Gate;
#[cfg(feature = "component-kv")]
type InstanceGate = crate::Gate<crate::kv::KvStore<wasi_kv::WasiKv>>;

#[cfg(not(feature = "component-kv"))]
fn new_gate(config: Config) -> Result<InstanceGate, GateError> {
    crate::Gate::in_memory(config)
}

#[cfg(feature = "component-kv")]
fn new_gate(config: Config) -> Result<InstanceGate, GateError> {
    let seed = u64::from_le_bytes(entropy()?);
    crate::Gate::new(config, crate::kv::KvStore::new(wasi_kv::WasiKv::open()?, seed))
}

use exports::mcp::resume_gate::gate::Guest;
use exports::mcp::resume_gate::types as wit;

struct Component;

export!(Component);

thread_local! {
    static GATE: RefCell<Option<InstanceGate>> = const { RefCell::new(None) };
}

/// Runs `f` on this instance's gate, creating it with the defaults on first use.
fn with_gate<T>(f: impl FnOnce(&mut InstanceGate) -> Result<T, GateError>) -> Result<T, wit::GateError> {
    GATE.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(|_| GateError::Store("re-entrant call".into()))?;
        if slot.is_none() {
            *slot = Some(new_gate(Config::default())?);
        }
        match slot.as_mut() {
            Some(gate) => f(gate),
            None => Err(GateError::Store("gate unavailable".into())),
        }
    })
    .map_err(Into::into)
}

fn now() -> Millis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn entropy() -> Result<[u8; 8], GateError> {
    let mut bytes = [0; 8];
    getrandom::fill(&mut bytes).map_err(|e| GateError::Store(format!("no randomness: {e}")))?;
    Ok(bytes)
}

impl Guest for Component {
    fn default_config() -> wit::Config {
        Config::default().into()
    }

    fn configure(config: wit::Config) -> Result<(), wit::GateError> {
        let config = Config::from(config);
        GATE.with(|cell| {
            let mut slot = cell.try_borrow_mut().map_err(|_| GateError::Store("re-entrant call".into()))?;
            match slot.as_mut() {
                Some(gate) => gate.configure(config),
                None => {
                    *slot = Some(new_gate(config)?);
                    Ok(())
                }
            }
        })
        .map_err(Into::into)
    }

    fn open_session(session: String) -> Result<wit::SessionInfo, wit::GateError> {
        with_gate(|g| {
            let info = g.open_session(&session, now(), entropy()?)?;
            Ok(wit::SessionInfo { epoch: info.epoch, reclaimed: info.reclaimed })
        })
    }

    fn has_session(session: String) -> Result<bool, wit::GateError> {
        with_gate(|g| g.has_session(&session))
    }

    fn end_session(session: String) -> Result<(), wit::GateError> {
        with_gate(|g| g.end_session(&session))
    }

    fn open_stream(session: String, origin: wit::Origin) -> Result<wit::Opened, wit::GateError> {
        with_gate(|g| g.open_stream(&session, origin.into(), now()).map(Into::into))
    }

    fn on_emit(session: String, stream: u64, data: String) -> Result<wit::Event, wit::GateError> {
        with_gate(|g| g.emit(&session, stream, data, now()).map(Into::into))
    }

    fn on_terminal(session: String, stream: u64, data: String) -> Result<wit::Event, wit::GateError> {
        with_gate(|g| g.terminal(&session, stream, data, now()).map(Into::into))
    }

    fn on_detach(session: String, stream: u64, attachment: u32) -> Result<(), wit::GateError> {
        with_gate(|g| g.detach(&session, stream, attachment, now()))
    }

    fn abort_stream(session: String, stream: u64) -> Result<(), wit::GateError> {
        with_gate(|g| g.abort(&session, stream))
    }

    fn abort_request(session: String, id: wit::RequestId) -> Result<bool, wit::GateError> {
        with_gate(|g| g.abort_request(&session, &id.into()))
    }

    fn poll_stream(
        session: String,
        stream: u64,
        attachment: u32,
        after: u64,
    ) -> Result<wit::Polled, wit::GateError> {
        with_gate(|g| g.poll(&session, stream, attachment, after, now()).map(Into::into))
    }

    fn renew_lease(session: String, stream: u64) -> Result<(), wit::GateError> {
        with_gate(|g| g.renew_lease(&session, stream, now()))
    }

    fn on_reconnect(
        session: String,
        last_event_id: Vec<u8>,
        origin: wit::Origin,
    ) -> Result<wit::Decision, wit::GateError> {
        with_gate(|g| g.reconnect(&session, &last_event_id, origin.into(), now()).map(Into::into))
    }

    fn read_counters() -> wit::Counters {
        let c = with_gate(|g| g.counters()).unwrap_or_default();
        wit::Counters {
            sessions: c.sessions,
            events_emitted: c.events_emitted,
            resumes: c.resumes,
            events_replayed: c.events_replayed,
            fresh: StaleReason::ALL
                .iter()
                .map(|r| wit::ReasonCount { reason: (*r).into(), count: c.fresh_for(*r) })
                .collect(),
            evicted_events: c.evicted_events,
            expired_streams: c.expired_streams,
            reclaimed_sessions: c.reclaimed_sessions,
            errors: c.errors,
        }
    }
}

impl From<Config> for wit::Config {
    fn from(c: Config) -> Self {
        Self {
            max_events_per_stream: c.max_events_per_stream,
            max_bytes_per_stream: c.max_bytes_per_stream,
            max_streams_per_session: c.max_streams_per_session,
            max_bytes_per_session: c.max_bytes_per_session,
            max_sessions: c.max_sessions,
            retention_ms: c.retention_ms,
            lease_ms: c.lease_ms,
            max_total_bytes: c.max_total_bytes,
            retry_ms: c.retry_ms,
            signing_key: c.signing_key,
        }
    }
}

impl From<wit::Config> for Config {
    fn from(c: wit::Config) -> Self {
        Self {
            max_events_per_stream: c.max_events_per_stream,
            max_bytes_per_stream: c.max_bytes_per_stream,
            max_streams_per_session: c.max_streams_per_session,
            max_bytes_per_session: c.max_bytes_per_session,
            max_sessions: c.max_sessions,
            retention_ms: c.retention_ms,
            lease_ms: c.lease_ms,
            max_total_bytes: c.max_total_bytes,
            retry_ms: c.retry_ms,
            signing_key: c.signing_key,
        }
    }
}

impl From<wit::RequestId> for RequestId {
    fn from(id: wit::RequestId) -> Self {
        match id {
            wit::RequestId::Number(n) => Self::Number(n),
            wit::RequestId::Text(s) => Self::Text(s),
        }
    }
}

impl From<RequestId> for wit::RequestId {
    fn from(id: RequestId) -> Self {
        match id {
            RequestId::Number(n) => Self::Number(n),
            RequestId::Text(s) => Self::Text(s),
        }
    }
}

impl From<wit::Origin> for Origin {
    fn from(o: wit::Origin) -> Self {
        match o {
            wit::Origin::Standalone => Self::Standalone,
            wit::Origin::Request(id) => Self::Request(id.into()),
        }
    }
}

impl From<Event> for wit::Event {
    fn from(e: Event) -> Self {
        Self {
            id: e.id,
            stream: e.stream,
            seq: e.seq,
            data: e.data,
            retry_ms: e.retry_ms,
            terminal: e.terminal,
        }
    }
}

impl From<Polled> for wit::Polled {
    fn from(p: Polled) -> Self {
        Self {
            events: p.events.into_iter().map(Into::into).collect(),
            done: p.done,
            stranded: p.stranded.map(Into::into),
        }
    }
}

impl From<Opened> for wit::Opened {
    fn from(o: Opened) -> Self {
        Self { stream: o.stream, attachment: o.attachment, priming: o.priming.into() }
    }
}

impl From<StaleReason> for wit::StaleReason {
    fn from(r: StaleReason) -> Self {
        match r {
            StaleReason::Malformed => Self::Malformed,
            StaleReason::Forged => Self::Forged,
            StaleReason::OtherSession => Self::OtherSession,
            StaleReason::EpochChanged => Self::EpochChanged,
            StaleReason::Unknown => Self::Unknown,
            StaleReason::PostNeverResumes => Self::PostNeverResumes,
            StaleReason::Completed => Self::Completed,
            StaleReason::Aborted => Self::Aborted,
            StaleReason::Superseded => Self::Superseded,
            StaleReason::Evicted => Self::Evicted,
        }
    }
}

impl From<Decision> for wit::Decision {
    fn from(d: Decision) -> Self {
        match d {
            Decision::Resume(r) => Self::Resume(wit::Resumption {
                stream: r.stream,
                attachment: r.attachment,
                cursor_seq: r.cursor_seq,
                events: r.events.into_iter().map(Into::into).collect(),
                includes_terminal: r.includes_terminal,
                stranded: r.stranded.map(Into::into),
            }),
            Decision::Fresh(f) => Self::Fresh(wit::FreshStart {
                reason: f.reason.into(),
                opened: f.opened.into(),
                stranded: f.stranded.map(Into::into),
            }),
        }
    }
}

impl From<GateError> for wit::GateError {
    fn from(e: GateError) -> Self {
        match e {
            GateError::InvalidConfig(why) => Self::InvalidConfig(why),
            GateError::InvalidSessionId => Self::InvalidSessionId,
            GateError::UnknownSession => Self::UnknownSession,
            GateError::UnknownStream => Self::UnknownStream,
            GateError::StreamFinished => Self::StreamFinished,
            GateError::NotARequestStream => Self::NotARequestStream,
            GateError::DuplicateRequestId => Self::DuplicateRequestId,
            GateError::InvalidRequestId => Self::InvalidRequestId,
            GateError::TooManySessions => Self::TooManySessions,
            GateError::OverBudget => Self::OverBudget,
            GateError::TooManyStreams => Self::TooManyStreams,
            GateError::Store(why) => Self::StoreFailure(why),
        }
    }
}
