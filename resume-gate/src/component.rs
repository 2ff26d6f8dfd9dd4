//! The wit-bindgen glue: exports `mcp:resume-gate/gate` from a WASI 0.2 component.
//!
//! It is the core's driver: it reads the wall clock and randomness from the two WASI
//! interfaces its worlds import (nothing else of WASI: see `wasm-build`), maps WIT types
//! to core types and back, and holds this instance's gate. It never panics: every failure
//! crosses the boundary as a `gate-error`. Feature `component` builds world `gate-memory`
//! (state in this instance); `component-kv` builds world `gate-kv` (state in the host's
//! `wasi:keyvalue` bucket `default`, see [`wasi_kv`]).

use std::cell::RefCell;

use crate::{Config, GateError, Millis};

#[cfg(not(feature = "component-kv"))]
wit_bindgen::generate!({
    world: "gate-memory",
    path: "../wit",
    generate_all,
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
type Core = crate::Gate;
#[cfg(feature = "component-kv")]
type Core = crate::Gate<crate::kv::KvStore<wasi_kv::WasiKv>>;

#[cfg(not(feature = "component-kv"))]
fn new_gate(config: Config) -> Result<Core, GateError> {
    crate::Gate::in_memory(config)
}

#[cfg(feature = "component-kv")]
fn new_gate(config: Config) -> Result<Core, GateError> {
    let seed = u64::from_le_bytes(entropy());
    crate::Gate::new(config, crate::kv::KvStore::new(wasi_kv::WasiKv::open()?, seed))
}

use exports::mcp::resume_gate::gate::Guest;
use exports::mcp::resume_gate::types as wit;

struct Component;

export!(Component);

thread_local! {
    static GATE: RefCell<Option<Core>> = const { RefCell::new(None) };
}

/// Runs `f` on this instance's gate, creating it with the defaults on first use.
fn with_gate<T>(f: impl FnOnce(&mut Core) -> Result<T, GateError>) -> Result<T, wit::GateError> {
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
    .map_err(convert::to_wit_error)
}

fn now() -> Millis {
    let t = wasi::clocks::wall_clock::now();
    t.seconds.saturating_mul(1000).saturating_add(u64::from(t.nanoseconds / 1_000_000))
}

fn entropy() -> [u8; 8] {
    wasi::random::random::get_random_u64().to_le_bytes()
}

impl Guest for Component {
    fn default_config() -> wit::Config {
        convert::to_wit_config(&Config::default())
    }

    fn configure(config: wit::Config) -> Result<(), wit::GateError> {
        let config = convert::from_wit_config(config);
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
        .map_err(convert::to_wit_error)
    }

    fn open_session(session: String) -> Result<wit::SessionInfo, wit::GateError> {
        with_gate(|g| g.open_session(&session, now(), entropy()).map(convert::to_wit_session_info))
    }

    fn has_session(session: String) -> Result<bool, wit::GateError> {
        with_gate(|g| g.has_session(&session))
    }

    fn end_session(session: String) -> Result<(), wit::GateError> {
        with_gate(|g| g.end_session(&session))
    }

    fn open_stream(session: String, origin: wit::Origin) -> Result<wit::Opened, wit::GateError> {
        with_gate(|g| {
            g.open_stream(&session, convert::from_wit_origin(origin), now()).map(convert::to_wit_opened)
        })
    }

    fn join_stream(
        session: String,
        stream: u64,
        ids: Vec<wit::RequestId>,
    ) -> Result<Vec<bool>, wit::GateError> {
        with_gate(|g| g.join_stream(&session, stream, &convert::from_wit_request_ids(ids), now()))
    }

    fn check_stream(
        session: String,
        stream: u64,
        attachment: u32,
    ) -> Result<wit::StreamStatus, wit::GateError> {
        with_gate(|g| g.check_stream(&session, stream, attachment).map(convert::to_wit_stream_status))
    }

    fn release_stream(session: String, stream: u64) -> Result<(), wit::GateError> {
        with_gate(|g| g.release_stream(&session, stream))
    }

    fn on_emit(session: String, stream: u64, data: String) -> Result<wit::Recorded, wit::GateError> {
        with_gate(|g| g.emit(&session, stream, data, now()).map(convert::to_wit_recorded))
    }

    fn on_terminal(session: String, stream: u64, data: String) -> Result<wit::Recorded, wit::GateError> {
        with_gate(|g| g.terminal(&session, stream, data, now()).map(convert::to_wit_recorded))
    }

    fn on_detach(session: String, stream: u64, attachment: u32) -> Result<(), wit::GateError> {
        with_gate(|g| g.detach(&session, stream, attachment, now()))
    }

    fn abort_stream(session: String, stream: u64) -> Result<(), wit::GateError> {
        with_gate(|g| g.abort(&session, stream))
    }

    fn abort_request(session: String, id: wit::RequestId) -> Result<bool, wit::GateError> {
        with_gate(|g| g.abort_request(&session, &convert::from_wit_request_id(id)))
    }

    fn poll_stream(
        session: String,
        stream: u64,
        attachment: u32,
        after: u64,
    ) -> Result<wit::Polled, wit::GateError> {
        with_gate(|g| g.poll(&session, stream, attachment, after, now()).map(convert::to_wit_polled))
    }

    fn renew_lease(session: String, stream: u64) -> Result<(), wit::GateError> {
        with_gate(|g| g.renew_lease(&session, stream, now()))
    }

    fn on_reconnect(
        session: String,
        last_event_id: Vec<u8>,
        origin: wit::Origin,
    ) -> Result<wit::Decision, wit::GateError> {
        with_gate(|g| {
            g.reconnect(&session, &last_event_id, convert::from_wit_origin(origin), now())
                .map(convert::to_wit_decision)
        })
    }

    fn collect_garbage(cursor: Option<String>) -> Result<wit::Swept, wit::GateError> {
        with_gate(|g| g.collect_garbage(cursor.as_deref(), now())).map(convert::to_wit_swept)
    }

    fn read_counters() -> wit::Counters {
        convert::to_wit_counters(&with_gate(|g| g.counters()).unwrap_or_default())
    }
}

/// WIT ↔ core, both directions: the same definitions every host and front uses.
#[allow(dead_code)]
mod convert {
    use super::wit;

    crate::wit_conversions!();
}
