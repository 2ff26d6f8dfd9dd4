//! The front's imports: the gate (as the transport's `GateApi`) and the key-value journal.

use mcp_transport::gate::GateApi;
use resume_gate::{
    Decision, GateError, Opened, Origin, Polled, Recorded, RequestId, SessionInfo, StreamStatus,
};

wit_bindgen::generate!({
    world: "resume-gate:spin-front/front",
    path: ["../wit", "wit"],
    generate_all,
});

use self::wasi::keyvalue::{atomics, store};
use mcp::resume_gate::gate;

/// Only some directions are needed here; the macro defines all of them.
#[allow(dead_code)]
mod convert {
    use super::mcp::resume_gate::types as wit;

    resume_gate::wit_conversions!();
}

/// The app's variables that set the gate's bounds (others stay at their defaults).
#[derive(Default)]
pub struct Bounds {
    pub max_sessions: Option<u32>,
    pub lease_ms: Option<u64>,
    pub max_detached_ms: Option<u64>,
}

/// Configures this instance of the gate with `bounds` where given, the other bounds at their
/// defaults. Returns the lease in force.
pub fn configure(bounds: &Bounds) -> Result<u64, GateError> {
    let defaults = gate::default_config();
    let config = gate::Config {
        max_sessions: bounds.max_sessions.unwrap_or(defaults.max_sessions),
        lease_ms: bounds.lease_ms.unwrap_or(defaults.lease_ms),
        max_detached_ms: bounds.max_detached_ms.or(defaults.max_detached_ms),
        ..defaults
    };
    gate::configure(&config).map_err(convert::from_wit_error)?;
    Ok(config.lease_ms)
}

/// The gate component this front is composed with; its state is in the key-value store.
pub struct Imported;

impl GateApi for Imported {
    fn counters(&mut self) -> Result<resume_gate::Counters, GateError> {
        Ok(convert::from_wit_counters(gate::read_counters()))
    }

    fn collect_garbage(&mut self, cursor: Option<&str>) -> Result<resume_gate::Swept, GateError> {
        gate::collect_garbage(cursor).map(convert::from_wit_swept).map_err(convert::from_wit_error)
    }

    fn configure(&mut self, config: &resume_gate::Config) -> Result<(), GateError> {
        gate::configure(&convert::to_wit_config(config)).map_err(convert::from_wit_error)
    }

    fn open_session(&mut self, session: &str) -> Result<SessionInfo, GateError> {
        gate::open_session(session).map(convert::from_wit_session_info).map_err(convert::from_wit_error)
    }

    fn has_session(&mut self, session: &str) -> Result<bool, GateError> {
        gate::has_session(session).map_err(convert::from_wit_error)
    }

    fn end_session(&mut self, session: &str) -> Result<(), GateError> {
        gate::end_session(session).map_err(convert::from_wit_error)
    }

    fn open_stream(&mut self, session: &str, origin: &Origin) -> Result<Opened, GateError> {
        gate::open_stream(session, &convert::to_wit_origin(origin))
            .map(convert::from_wit_opened)
            .map_err(convert::from_wit_error)
    }

    fn join_stream(&mut self, session: &str, stream: u64, ids: &[RequestId]) -> Result<Vec<bool>, GateError> {
        gate::join_stream(session, stream, &convert::to_wit_request_ids(ids)).map_err(convert::from_wit_error)
    }

    fn check_stream(
        &mut self,
        session: &str,
        stream: u64,
        attachment: u32,
    ) -> Result<StreamStatus, GateError> {
        gate::check_stream(session, stream, attachment)
            .map(convert::from_wit_stream_status)
            .map_err(convert::from_wit_error)
    }

    fn release_stream(&mut self, session: &str, stream: u64) -> Result<(), GateError> {
        gate::release_stream(session, stream).map_err(convert::from_wit_error)
    }

    fn emit(&mut self, session: &str, stream: u64, data: &str) -> Result<Recorded, GateError> {
        gate::on_emit(session, stream, data).map(convert::from_wit_recorded).map_err(convert::from_wit_error)
    }

    fn terminal(&mut self, session: &str, stream: u64, data: &str) -> Result<Recorded, GateError> {
        gate::on_terminal(session, stream, data)
            .map(convert::from_wit_recorded)
            .map_err(convert::from_wit_error)
    }

    fn detach(&mut self, session: &str, stream: u64, attachment: u32) -> Result<(), GateError> {
        gate::on_detach(session, stream, attachment).map_err(convert::from_wit_error)
    }

    fn abort(&mut self, session: &str, stream: u64) -> Result<(), GateError> {
        gate::abort_stream(session, stream).map_err(convert::from_wit_error)
    }

    fn abort_request(&mut self, session: &str, id: &RequestId) -> Result<bool, GateError> {
        gate::abort_request(session, &convert::to_wit_request_id(id)).map_err(convert::from_wit_error)
    }

    fn poll(&mut self, session: &str, stream: u64, attachment: u32, after: u64) -> Result<Polled, GateError> {
        gate::poll_stream(session, stream, attachment, after)
            .map(convert::from_wit_polled)
            .map_err(convert::from_wit_error)
    }

    fn renew_lease(&mut self, session: &str, stream: u64) -> Result<(), GateError> {
        gate::renew_lease(session, stream).map_err(convert::from_wit_error)
    }

    fn reconnect(&mut self, session: &str, cursor: &[u8], origin: &Origin) -> Result<Decision, GateError> {
        gate::on_reconnect(session, cursor, &convert::to_wit_origin(origin))
            .map(convert::from_wit_decision)
            .map_err(convert::from_wit_error)
    }
}

/// The `append` tool's journal in the key-value store (`mcp_transport::tools::JournalKv`).
pub struct Journal {
    bucket: store::Bucket,
}

impl Journal {
    pub fn open() -> Result<Self, String> {
        store::open("default").map(|bucket| Self { bucket }).map_err(|e| format!("{e:?}"))
    }

    pub fn append(
        &self,
        session: &str,
        request: &RequestId,
        line: &str,
    ) -> Result<u64, mcp_transport::journal::AppendError> {
        mcp_transport::journal::append_to_kv_journal(self, session, request, line)
    }

    pub fn page(&self, from: u64, limit: u64) -> Result<mcp_transport::journal::JournalPage, String> {
        mcp_transport::journal::kv_journal_page(self, from, limit)
    }
}

impl mcp_transport::journal::JournalKv for Journal {
    fn increment(&self, key: &str, delta: i64) -> Result<i64, String> {
        atomics::increment(&self.bucket, key, delta).map_err(|e| format!("{e:?}"))
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        self.bucket.get(key).map_err(|e| format!("{e:?}"))
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<(), String> {
        self.bucket.set(key, value).map_err(|e| format!("{e:?}"))
    }
}
