//! The gate's operations in the core's types — the one interface every embedding speaks: the
//! transport calls it, the hosts implement it over their binding of the component, and the
//! tests drive the core and the components through it.
//!
//! A component binding is forwarded once, by [`forward_gate_api!`](crate::forward_gate_api);
//! the core itself, for tests, by `test_util::InProcess` (feature `test-util`).

use resume_gate::{
    Config, Counters, Decision, GateError, Opened, Origin, Polled, Recorded, RequestId, SessionInfo,
    StreamStatus, Swept,
};

pub trait GateApi {
    /// Replaces the bounds; an invalid configuration is refused and the old one kept.
    fn configure(&mut self, config: &Config) -> Result<(), GateError>;
    fn open_session(&mut self, session: &str) -> Result<SessionInfo, GateError>;
    /// `Err` when the store could not tell (the host answers `503`, never `404`).
    fn has_session(&mut self, session: &str) -> Result<bool, GateError>;
    fn end_session(&mut self, session: &str) -> Result<(), GateError>;
    fn open_stream(&mut self, session: &str, origin: &Origin) -> Result<Opened, GateError>;
    /// Claims a batch's further request ids for its stream, in order (`join-stream`).
    fn join_stream(&mut self, session: &str, stream: u64, ids: &[RequestId]) -> Result<Vec<bool>, GateError>;
    /// Whether `attachment` is still the stream's, whether it runs, what of it was cancelled.
    fn check_stream(
        &mut self,
        session: &str,
        stream: u64,
        attachment: u32,
    ) -> Result<StreamStatus, GateError>;
    /// Forgets a request stream whose request was refused before it ran (`release-stream`).
    fn release_stream(&mut self, session: &str, stream: u64) -> Result<(), GateError>;
    /// Records an event; the host writes its frame from the id and its own `data`.
    fn emit(&mut self, session: &str, stream: u64, data: &str) -> Result<Recorded, GateError>;
    /// Records the stream's final response, as `emit` does.
    fn terminal(&mut self, session: &str, stream: u64, data: &str) -> Result<Recorded, GateError>;
    fn detach(&mut self, session: &str, stream: u64, attachment: u32) -> Result<(), GateError>;
    fn abort(&mut self, session: &str, stream: u64) -> Result<(), GateError>;
    fn abort_request(&mut self, session: &str, id: &RequestId) -> Result<bool, GateError>;
    fn poll(&mut self, session: &str, stream: u64, attachment: u32, after: u64) -> Result<Polled, GateError>;
    /// The call writing `stream` is still running: renews its lease (`StreamFinished`: stop it).
    fn renew_lease(&mut self, session: &str, stream: u64) -> Result<(), GateError>;
    fn reconnect(&mut self, session: &str, cursor: &[u8], origin: &Origin) -> Result<Decision, GateError>;
    /// What the gate counted since it started (`read-counters`).
    fn counters(&mut self) -> Result<Counters, GateError>;
    /// One step of garbage collection over a shared store (`collect-garbage`).
    fn collect_garbage(&mut self, cursor: Option<&str>) -> Result<Swept, GateError>;
    /// Bytes of memory the gate's state occupies, when the host can tell (a component
    /// instance: its linear memory).
    fn memory_bytes(&self) -> Option<usize> {
        None
    }
}

/// Implements [`GateApi`] for a component binding `$host`, whose WIT types `$convert` (a module
/// holding [`resume_gate::wit_conversions!`]) converts. `$host` provides
///
/// - `fn call<T>(&mut self, f: impl FnOnce(&Exports, &mut Store) -> wasmtime::Result<Result<T,
///   wit::GateError>>) -> Result<T, GateError>`: runs one export; what a trap becomes is the
///   host's choice (a new instance and a store error in a server, a failed test in a test);
/// - `fn configured(&mut self, config: &Config)`: the bounds were accepted (a host that
///   replaces a trapped instance configures the new one with them);
/// - `fn memory_bytes_used(&self) -> Option<usize>`.
///
/// Every wasmtime embedding of either world forwards through this one definition.
#[macro_export]
macro_rules! forward_gate_api {
    ($host:ty, $convert:path) => {
        impl $crate::gate::GateApi for $host {
            fn configure(&mut self, config: &::resume_gate::Config) -> Result<(), ::resume_gate::GateError> {
                use $convert as convert;
                let wit = convert::to_wit_config(config);
                self.call(|g, s| g.call_configure(s, &wit))?;
                self.configured(config);
                Ok(())
            }
            fn open_session(
                &mut self,
                session: &str,
            ) -> Result<::resume_gate::SessionInfo, ::resume_gate::GateError> {
                use $convert as convert;
                self.call(|g, s| g.call_open_session(s, session)).map(convert::from_wit_session_info)
            }
            fn has_session(&mut self, session: &str) -> Result<bool, ::resume_gate::GateError> {
                self.call(|g, s| g.call_has_session(s, session))
            }
            fn end_session(&mut self, session: &str) -> Result<(), ::resume_gate::GateError> {
                self.call(|g, s| g.call_end_session(s, session))
            }
            fn open_stream(
                &mut self,
                session: &str,
                origin: &::resume_gate::Origin,
            ) -> Result<::resume_gate::Opened, ::resume_gate::GateError> {
                use $convert as convert;
                let origin = convert::to_wit_origin(origin);
                self.call(|g, s| g.call_open_stream(s, session, &origin)).map(convert::from_wit_opened)
            }
            fn join_stream(
                &mut self,
                session: &str,
                stream: u64,
                ids: &[::resume_gate::RequestId],
            ) -> Result<Vec<bool>, ::resume_gate::GateError> {
                use $convert as convert;
                let ids = convert::to_wit_request_ids(ids);
                self.call(|g, s| g.call_join_stream(s, session, stream, &ids))
            }
            fn check_stream(
                &mut self,
                session: &str,
                stream: u64,
                attachment: u32,
            ) -> Result<::resume_gate::StreamStatus, ::resume_gate::GateError> {
                use $convert as convert;
                self.call(|g, s| g.call_check_stream(s, session, stream, attachment))
                    .map(convert::from_wit_stream_status)
            }
            fn release_stream(&mut self, session: &str, stream: u64) -> Result<(), ::resume_gate::GateError> {
                self.call(|g, s| g.call_release_stream(s, session, stream))
            }
            fn emit(
                &mut self,
                session: &str,
                stream: u64,
                data: &str,
            ) -> Result<::resume_gate::Recorded, ::resume_gate::GateError> {
                use $convert as convert;
                self.call(|g, s| g.call_on_emit(s, session, stream, data)).map(convert::from_wit_recorded)
            }
            fn terminal(
                &mut self,
                session: &str,
                stream: u64,
                data: &str,
            ) -> Result<::resume_gate::Recorded, ::resume_gate::GateError> {
                use $convert as convert;
                self.call(|g, s| g.call_on_terminal(s, session, stream, data)).map(convert::from_wit_recorded)
            }
            fn detach(
                &mut self,
                session: &str,
                stream: u64,
                attachment: u32,
            ) -> Result<(), ::resume_gate::GateError> {
                self.call(|g, s| g.call_on_detach(s, session, stream, attachment))
            }
            fn abort(&mut self, session: &str, stream: u64) -> Result<(), ::resume_gate::GateError> {
                self.call(|g, s| g.call_abort_stream(s, session, stream))
            }
            fn abort_request(
                &mut self,
                session: &str,
                id: &::resume_gate::RequestId,
            ) -> Result<bool, ::resume_gate::GateError> {
                use $convert as convert;
                let id = convert::to_wit_request_id(id);
                self.call(|g, s| g.call_abort_request(s, session, &id))
            }
            fn poll(
                &mut self,
                session: &str,
                stream: u64,
                attachment: u32,
                after: u64,
            ) -> Result<::resume_gate::Polled, ::resume_gate::GateError> {
                use $convert as convert;
                self.call(|g, s| g.call_poll_stream(s, session, stream, attachment, after))
                    .map(convert::from_wit_polled)
            }
            fn renew_lease(&mut self, session: &str, stream: u64) -> Result<(), ::resume_gate::GateError> {
                self.call(|g, s| g.call_renew_lease(s, session, stream))
            }
            fn reconnect(
                &mut self,
                session: &str,
                cursor: &[u8],
                origin: &::resume_gate::Origin,
            ) -> Result<::resume_gate::Decision, ::resume_gate::GateError> {
                use $convert as convert;
                let origin = convert::to_wit_origin(origin);
                self.call(|g, s| g.call_on_reconnect(s, session, cursor, &origin))
                    .map(convert::from_wit_decision)
            }
            fn counters(&mut self) -> Result<::resume_gate::Counters, ::resume_gate::GateError> {
                use $convert as convert;
                self.call(|g, s| g.call_read_counters(s).map(Ok)).map(convert::from_wit_counters)
            }
            fn collect_garbage(
                &mut self,
                cursor: Option<&str>,
            ) -> Result<::resume_gate::Swept, ::resume_gate::GateError> {
                use $convert as convert;
                self.call(|g, s| g.call_collect_garbage(s, cursor)).map(convert::from_wit_swept)
            }
            fn memory_bytes(&self) -> Option<usize> {
                self.memory_bytes_used()
            }
        }
    };
}
