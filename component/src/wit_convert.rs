//! Conversions between the WIT types of `mcp:resume-gate/types`, as any bindings generator
//! spells them (wasmtime's `bindgen!` in a host, wit-bindgen in a front that imports the
//! gate), and the core's types. One definition for every embedding: invoke
//! [`wit_conversions!`](crate::wit_conversions) in a module where `wit` names the generated
//! `types` module.

/// Defines `to_wit_config`, `from_wit_config`, `to_wit_request_id`, `to_wit_origin`, `from_wit_request_id`,
/// `from_wit_event`, `from_wit_opened`, `from_wit_reason`, `from_wit_decision`,
/// `from_wit_polled` and `from_wit_error` in the calling module, over its `wit` path.
#[macro_export]
macro_rules! wit_conversions {
    () => {
        pub fn to_wit_config(c: &$crate::Config) -> wit::Config {
            wit::Config {
                max_events_per_stream: c.max_events_per_stream,
                max_bytes_per_stream: c.max_bytes_per_stream,
                max_streams_per_session: c.max_streams_per_session,
                max_bytes_per_session: c.max_bytes_per_session,
                max_sessions: c.max_sessions,
                retention_ms: c.retention_ms,
                lease_ms: c.lease_ms,
                max_total_bytes: c.max_total_bytes,
                retry_ms: c.retry_ms,
                signing_key: c.signing_key.clone(),
            }
        }

        pub fn from_wit_config(c: wit::Config) -> $crate::Config {
            $crate::Config {
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

        pub fn to_wit_request_id(id: &$crate::RequestId) -> wit::RequestId {
            match id {
                $crate::RequestId::Number(n) => wit::RequestId::Number(*n),
                $crate::RequestId::Text(s) => wit::RequestId::Text(s.clone()),
            }
        }

        pub fn to_wit_origin(o: &$crate::Origin) -> wit::Origin {
            match o {
                $crate::Origin::Standalone => wit::Origin::Standalone,
                $crate::Origin::Request(id) => wit::Origin::Request(to_wit_request_id(id)),
            }
        }

        pub fn from_wit_request_id(id: wit::RequestId) -> $crate::RequestId {
            match id {
                wit::RequestId::Number(n) => $crate::RequestId::Number(n),
                wit::RequestId::Text(s) => $crate::RequestId::Text(s),
            }
        }

        pub fn from_wit_event(e: wit::Event) -> $crate::Event {
            $crate::Event {
                id: e.id,
                stream: e.stream,
                seq: e.seq,
                data: e.data,
                retry_ms: e.retry_ms,
                terminal: e.terminal,
            }
        }

        pub fn from_wit_opened(o: wit::Opened) -> $crate::Opened {
            $crate::Opened { stream: o.stream, attachment: o.attachment, priming: from_wit_event(o.priming) }
        }

        pub fn from_wit_reason(r: wit::StaleReason) -> $crate::StaleReason {
            match r {
                wit::StaleReason::Malformed => $crate::StaleReason::Malformed,
                wit::StaleReason::Forged => $crate::StaleReason::Forged,
                wit::StaleReason::OtherSession => $crate::StaleReason::OtherSession,
                wit::StaleReason::EpochChanged => $crate::StaleReason::EpochChanged,
                wit::StaleReason::Unknown => $crate::StaleReason::Unknown,
                wit::StaleReason::PostNeverResumes => $crate::StaleReason::PostNeverResumes,
                wit::StaleReason::Completed => $crate::StaleReason::Completed,
                wit::StaleReason::Aborted => $crate::StaleReason::Aborted,
                wit::StaleReason::Superseded => $crate::StaleReason::Superseded,
                wit::StaleReason::Evicted => $crate::StaleReason::Evicted,
            }
        }

        pub fn from_wit_decision(d: wit::Decision) -> $crate::Decision {
            match d {
                wit::Decision::Resume(r) => $crate::Decision::Resume($crate::Resumption {
                    stream: r.stream,
                    attachment: r.attachment,
                    cursor_seq: r.cursor_seq,
                    events: r.events.into_iter().map(from_wit_event).collect(),
                    includes_terminal: r.includes_terminal,
                    stranded: r.stranded.map(from_wit_request_id),
                }),
                wit::Decision::Fresh(f) => $crate::Decision::Fresh($crate::FreshStart {
                    reason: from_wit_reason(f.reason),
                    opened: from_wit_opened(f.opened),
                    stranded: f.stranded.map(from_wit_request_id),
                }),
            }
        }

        pub fn from_wit_polled(p: wit::Polled) -> $crate::Polled {
            $crate::Polled {
                events: p.events.into_iter().map(from_wit_event).collect(),
                done: p.done,
                stranded: p.stranded.map(from_wit_request_id),
            }
        }

        pub fn from_wit_error(e: wit::GateError) -> $crate::GateError {
            match e {
                wit::GateError::InvalidConfig(why) => $crate::GateError::InvalidConfig(why),
                wit::GateError::InvalidSessionId => $crate::GateError::InvalidSessionId,
                wit::GateError::UnknownSession => $crate::GateError::UnknownSession,
                wit::GateError::UnknownStream => $crate::GateError::UnknownStream,
                wit::GateError::StreamFinished => $crate::GateError::StreamFinished,
                wit::GateError::NotARequestStream => $crate::GateError::NotARequestStream,
                wit::GateError::DuplicateRequestId => $crate::GateError::DuplicateRequestId,
                wit::GateError::InvalidRequestId => $crate::GateError::InvalidRequestId,
                wit::GateError::TooManySessions => $crate::GateError::TooManySessions,
                wit::GateError::OverBudget => $crate::GateError::OverBudget,
                wit::GateError::TooManyStreams => $crate::GateError::TooManyStreams,
                wit::GateError::StoreFailure(why) => $crate::GateError::Store(why),
            }
        }
    };
}
