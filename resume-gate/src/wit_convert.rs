//! Conversions between the WIT types of `mcp:resume-gate/types`, as any bindings generator
//! spells them (wasmtime's `bindgen!` in a host, wit-bindgen in the component that exports the
//! gate and in a front that imports it), and the core's types, in both directions. One
//! definition for every embedding: invoke [`wit_conversions!`](crate::wit_conversions) in a
//! module where `wit` names the generated `types` module.

/// Defines `to_wit_*` (core → WIT) and `from_wit_*` (WIT → core) for every type that crosses
/// the boundary, in the calling module, over its `wit` path. What a caller still holds is
/// converted from a reference (`Config`, `RequestId`, `Origin`); results are moved.
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
                max_detached_ms: c.max_detached_ms,
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
                max_detached_ms: c.max_detached_ms,
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

        pub fn from_wit_recorded(r: wit::Recorded) -> $crate::Recorded {
            $crate::Recorded { id: r.id, seq: r.seq }
        }

        pub fn from_wit_session_info(i: wit::SessionInfo) -> $crate::SessionInfo {
            $crate::SessionInfo { epoch: i.epoch, reclaimed: i.reclaimed }
        }

        pub fn to_wit_session_info(i: $crate::SessionInfo) -> wit::SessionInfo {
            wit::SessionInfo { epoch: i.epoch, reclaimed: i.reclaimed }
        }

        pub fn from_wit_swept(s: wit::Swept) -> $crate::Swept {
            $crate::Swept { next: s.next, removed: s.removed }
        }

        pub fn to_wit_swept(s: $crate::Swept) -> wit::Swept {
            wit::Swept { next: s.next, removed: s.removed }
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
                    stranded: r.stranded.into_iter().map(from_wit_request_id).collect(),
                }),
                wit::Decision::Fresh(f) => $crate::Decision::Fresh($crate::FreshStart {
                    reason: from_wit_reason(f.reason),
                    opened: from_wit_opened(f.opened),
                    stranded: f.stranded.into_iter().map(from_wit_request_id).collect(),
                }),
            }
        }

        pub fn from_wit_polled(p: wit::Polled) -> $crate::Polled {
            $crate::Polled {
                events: p.events.into_iter().map(from_wit_event).collect(),
                done: p.done,
                stranded: p.stranded.into_iter().map(from_wit_request_id).collect(),
            }
        }

        pub fn from_wit_stream_status(s: wit::StreamStatus) -> $crate::StreamStatus {
            $crate::StreamStatus {
                attached: s.attached,
                running: s.running,
                cancelled: s.cancelled.into_iter().map(from_wit_request_id).collect(),
            }
        }

        pub fn to_wit_stream_status(s: $crate::StreamStatus) -> wit::StreamStatus {
            wit::StreamStatus {
                attached: s.attached,
                running: s.running,
                cancelled: s.cancelled.iter().map(to_wit_request_id).collect(),
            }
        }

        pub fn to_wit_request_ids(ids: &[$crate::RequestId]) -> Vec<wit::RequestId> {
            ids.iter().map(to_wit_request_id).collect()
        }

        pub fn from_wit_request_ids(ids: Vec<wit::RequestId>) -> Vec<$crate::RequestId> {
            ids.into_iter().map(from_wit_request_id).collect()
        }

        pub fn from_wit_counters(c: wit::Counters) -> $crate::Counters {
            let mut counters = $crate::Counters {
                sessions: c.sessions,
                events_emitted: c.events_emitted,
                resumes: c.resumes,
                events_replayed: c.events_replayed,
                evicted_events: c.evicted_events,
                expired_streams: c.expired_streams,
                reclaimed_sessions: c.reclaimed_sessions,
                errors: c.errors,
                ..$crate::Counters::default()
            };
            for f in c.fresh {
                counters.add_fresh(from_wit_reason(f.reason), f.count);
            }
            counters
        }

        pub fn from_wit_origin(o: wit::Origin) -> $crate::Origin {
            match o {
                wit::Origin::Standalone => $crate::Origin::Standalone,
                wit::Origin::Request(id) => $crate::Origin::Request(from_wit_request_id(id)),
            }
        }

        pub fn to_wit_event(e: $crate::Event) -> wit::Event {
            wit::Event {
                id: e.id,
                stream: e.stream,
                seq: e.seq,
                data: e.data,
                retry_ms: e.retry_ms,
                terminal: e.terminal,
            }
        }

        pub fn to_wit_recorded(r: $crate::Recorded) -> wit::Recorded {
            wit::Recorded { id: r.id, seq: r.seq }
        }

        pub fn to_wit_opened(o: $crate::Opened) -> wit::Opened {
            wit::Opened { stream: o.stream, attachment: o.attachment, priming: to_wit_event(o.priming) }
        }

        pub fn to_wit_polled(p: $crate::Polled) -> wit::Polled {
            wit::Polled {
                events: p.events.into_iter().map(to_wit_event).collect(),
                done: p.done,
                stranded: p.stranded.iter().map(to_wit_request_id).collect(),
            }
        }

        pub fn to_wit_reason(r: $crate::StaleReason) -> wit::StaleReason {
            match r {
                $crate::StaleReason::Malformed => wit::StaleReason::Malformed,
                $crate::StaleReason::Forged => wit::StaleReason::Forged,
                $crate::StaleReason::OtherSession => wit::StaleReason::OtherSession,
                $crate::StaleReason::EpochChanged => wit::StaleReason::EpochChanged,
                $crate::StaleReason::Unknown => wit::StaleReason::Unknown,
                $crate::StaleReason::PostNeverResumes => wit::StaleReason::PostNeverResumes,
                $crate::StaleReason::Completed => wit::StaleReason::Completed,
                $crate::StaleReason::Aborted => wit::StaleReason::Aborted,
                $crate::StaleReason::Superseded => wit::StaleReason::Superseded,
                $crate::StaleReason::Evicted => wit::StaleReason::Evicted,
            }
        }

        pub fn to_wit_decision(d: $crate::Decision) -> wit::Decision {
            match d {
                $crate::Decision::Resume(r) => wit::Decision::Resume(wit::Resumption {
                    stream: r.stream,
                    attachment: r.attachment,
                    cursor_seq: r.cursor_seq,
                    events: r.events.into_iter().map(to_wit_event).collect(),
                    includes_terminal: r.includes_terminal,
                    stranded: r.stranded.iter().map(to_wit_request_id).collect(),
                }),
                $crate::Decision::Fresh(f) => wit::Decision::Fresh(wit::FreshStart {
                    reason: to_wit_reason(f.reason),
                    opened: to_wit_opened(f.opened),
                    stranded: f.stranded.iter().map(to_wit_request_id).collect(),
                }),
            }
        }

        pub fn to_wit_counters(c: &$crate::Counters) -> wit::Counters {
            wit::Counters {
                sessions: c.sessions,
                events_emitted: c.events_emitted,
                resumes: c.resumes,
                events_replayed: c.events_replayed,
                fresh: $crate::StaleReason::ALL
                    .iter()
                    .map(|r| wit::ReasonCount { reason: to_wit_reason(*r), count: c.fresh_for(*r) })
                    .collect(),
                evicted_events: c.evicted_events,
                expired_streams: c.expired_streams,
                reclaimed_sessions: c.reclaimed_sessions,
                errors: c.errors,
            }
        }

        pub fn to_wit_error(e: $crate::GateError) -> wit::GateError {
            match e {
                $crate::GateError::InvalidConfig(why) => wit::GateError::InvalidConfig(why),
                $crate::GateError::InvalidSessionId => wit::GateError::InvalidSessionId,
                $crate::GateError::UnknownSession => wit::GateError::UnknownSession,
                $crate::GateError::UnknownStream => wit::GateError::UnknownStream,
                $crate::GateError::StreamFinished => wit::GateError::StreamFinished,
                $crate::GateError::NotARequestStream => wit::GateError::NotARequestStream,
                $crate::GateError::DuplicateRequestId => wit::GateError::DuplicateRequestId,
                $crate::GateError::InvalidRequestId => wit::GateError::InvalidRequestId,
                $crate::GateError::BatchTooLarge => wit::GateError::BatchTooLarge,
                $crate::GateError::TooManySessions => wit::GateError::TooManySessions,
                $crate::GateError::OverBudget => wit::GateError::OverBudget,
                $crate::GateError::TooManyStreams => wit::GateError::TooManyStreams,
                $crate::GateError::Store(why) => wit::GateError::StoreFailure(why),
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
                wit::GateError::BatchTooLarge => $crate::GateError::BatchTooLarge,
                wit::GateError::TooManySessions => $crate::GateError::TooManySessions,
                wit::GateError::OverBudget => $crate::GateError::OverBudget,
                wit::GateError::TooManyStreams => $crate::GateError::TooManyStreams,
                wit::GateError::StoreFailure(why) => $crate::GateError::Store(why),
            }
        }
    };
}
