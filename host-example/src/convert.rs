//! Conversions between the component's WIT types (as wasmtime's `bindgen!` generates them)
//! and the core's types, which the transport and the tests speak.

use resume_gate::{
    Config, Decision, Event, FreshStart, GateError, Opened, Origin, RequestId, Resumption, StaleReason,
};

use crate::types as wit;

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

pub fn to_wit_origin(o: &Origin) -> wit::Origin {
    match o {
        Origin::Standalone => wit::Origin::Standalone,
        Origin::Request(RequestId::Number(n)) => wit::Origin::Request(wit::RequestId::Number(*n)),
        Origin::Request(RequestId::Text(s)) => wit::Origin::Request(wit::RequestId::Text(s.clone())),
    }
}

pub fn from_wit_request_id(id: wit::RequestId) -> RequestId {
    match id {
        wit::RequestId::Number(n) => RequestId::Number(n),
        wit::RequestId::Text(s) => RequestId::Text(s),
    }
}

pub fn from_wit_event(e: wit::Event) -> Event {
    Event { id: e.id, stream: e.stream, seq: e.seq, data: e.data, retry_ms: e.retry_ms, terminal: e.terminal }
}

pub fn from_wit_opened(o: wit::Opened) -> Opened {
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

pub fn from_wit_decision(d: wit::Decision) -> Decision {
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
