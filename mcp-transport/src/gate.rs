//! The gate's operations in the core's types — the one interface every embedding speaks: the
//! transport calls it, the hosts implement it over their binding of the component, and the
//! tests drive the core and the components through it.
//!
//! A component binding is forwarded once, by [`forward_gate_api!`](crate::forward_gate_api);
//! the core itself by [`InProcess`].

use resume_gate::{
    Config, Counters, Decision, Gate, GateError, MemoryStore, Opened, Origin, Polled, Recorded, RequestId,
    SessionInfo, Store, StreamStatus, Swept,
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
