//! The gate component embedded in wasmtime: the whole embedding in one screen.
//!
//! `bindgen!` reads `wit/gate.wit`; a [`GateHost`] owns one `Store` with one long-lived
//! instance of the component (memory store: the instance *is* the state). WASI p2 is linked
//! because Rust std makes every component import `wasi:cli`, `wasi:io`, clocks and random;
//! the gate reads its wall clock and randomness from there.
//!
//! # Layout
//!
//! - this file: loading and calling the component, and the transport's `GateApi` over it;
//! - [`convert`]: WIT types ↔ core types;
//! - [`bypass`]: the server without the gate, for measuring the gate's share;
//! - [`serve`]: the MCP Streamable HTTP server (axum) around the shared `mcp-transport`;
//! - [`store`]: `--store`: the gate's key-value world over a store many processes share;
//! - `main.rs`: the command line (`serve`, `demo`).

use std::path::Path;

pub mod bypass;
pub mod convert;
pub mod metrics;
pub mod serve;
pub mod store;

use anyhow::Context as _;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

wasmtime::component::bindgen!({
    world: "gate-memory",
    path: "../wit",
    additional_derives: [PartialEq, Eq],
});

pub use exports::mcp::resume_gate::gate::Guest as GateExports;
pub use exports::mcp::resume_gate::types;

/// The component built from `component/` by this crate's build script.
pub const GATE_WASM: &str = env!("RESUME_GATE_WASM");

/// What the store holds: the WASI context the component's std imports need.
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    memory: MemoryWatch,
}

/// Sees every growth of the instance's linear memory (which never shrinks) and allows it up to
/// `limit`: the gate's own bounds keep it well below, and a host can report the size.
struct MemoryWatch {
    bytes: usize,
    limit: usize,
}

impl wasmtime::ResourceLimiter for MemoryWatch {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.limit;
        if allowed {
            self.bytes = self.bytes.max(desired);
        }
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// One instance of the gate component and the store it lives in.
pub struct GateHost {
    store: Store<HostState>,
    gate: GateMemory,
    pre: GateMemoryPre<HostState>,
    memory_limit: usize,
    config: Option<resume_gate::Config>,
}

/// Linear memory an instance may grow to by default: the component's 32-bit address space.
pub const DEFAULT_MEMORY_LIMIT: usize = 4 << 30;

impl GateHost {
    /// Compiles the component at `path` (normally [`GATE_WASM`]).
    pub fn compile(engine: &Engine, path: impl AsRef<Path>) -> anyhow::Result<Component> {
        let path = path.as_ref();
        Component::from_file(engine, path)
            .map_err(anyhow::Error::from)
            .with_context(|| format!("loading the gate component {}", path.display()))
    }

    /// Instantiates the gate with the host's real clock and randomness.
    pub fn new(engine: &Engine, component: &Component) -> anyhow::Result<Self> {
        Self::with_wasi(engine, component, WasiCtxBuilder::new().build())
    }

    /// Instantiates the gate with a WASI context of the caller's (e.g. a test clock).
    pub fn with_wasi(engine: &Engine, component: &Component, wasi: WasiCtx) -> anyhow::Result<Self> {
        Self::from_pre(&Self::pre(engine, component)?, wasi)
    }

    /// Links the component once, for hosts that instantiate it often (one instance per
    /// request): [`GateHost::from_pre`] then only creates a store and an instance.
    pub fn pre(engine: &Engine, component: &Component) -> anyhow::Result<GateMemoryPre<HostState>> {
        let mut linker = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        Ok(GateMemoryPre::new(linker.instantiate_pre(component)?)?)
    }

    /// A new instance from a linked component, on the engine it was linked with.
    pub fn from_pre(pre: &GateMemoryPre<HostState>, wasi: WasiCtx) -> anyhow::Result<Self> {
        let (store, gate) = Self::instantiate(pre, wasi, DEFAULT_MEMORY_LIMIT)?;
        Ok(Self { store, gate, pre: pre.clone(), memory_limit: DEFAULT_MEMORY_LIMIT, config: None })
    }

    /// Caps the instance's linear memory at `bytes` (and every instance that replaces it): a
    /// growth beyond is refused, the component traps, and [`GateApi`] calls recreate it.
    ///
    /// [`GateApi`]: mcp_transport::gate::GateApi
    pub fn with_memory_limit(mut self, bytes: usize) -> Self {
        self.memory_limit = bytes;
        self.store.data_mut().memory.limit = bytes;
        self
    }

    fn instantiate(
        pre: &GateMemoryPre<HostState>,
        wasi: WasiCtx,
        limit: usize,
    ) -> anyhow::Result<(Store<HostState>, GateMemory)> {
        let memory = MemoryWatch { bytes: 0, limit };
        let state = HostState { wasi, table: ResourceTable::new(), memory };
        let mut store = Store::new(pre.engine(), state);
        store.limiter(|s| &mut s.memory);
        let gate = pre.instantiate(&mut store)?;
        Ok((store, gate))
    }

    /// After a trap the instance is unusable: a new one (with a default WASI context) takes
    /// its place. The memory world's state was in the old instance, so every session is gone
    /// with it; the caller answers this request `503`, and later requests of those sessions
    /// get `404`.
    fn recover(&mut self, trap: &wasmtime::Error) -> resume_gate::GateError {
        tracing::error!(error = %trap, "the gate component trapped; recreating the instance");
        match Self::instantiate(&self.pre, WasiCtxBuilder::new().build(), self.memory_limit) {
            Ok((store, gate)) => {
                self.store = store;
                self.gate = gate;
                if let Some(config) = self.config.clone() {
                    let wit = convert::to_wit_config(&config);
                    let (g, store) = self.gate();
                    if !matches!(g.call_configure(store, &wit), Ok(Ok(()))) {
                        tracing::error!("the recreated gate instance refused its configuration");
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "recreating the gate instance failed"),
        }
        resume_gate::GateError::Store("the gate component trapped; its instance was recreated".into())
    }

    /// Calls an export; a trap recreates the instance and becomes a store error (`503`).
    fn call<T>(
        &mut self,
        f: impl FnOnce(&GateExports, &mut Store<HostState>) -> wasmtime::Result<Result<T, types::GateError>>,
    ) -> Result<T, resume_gate::GateError> {
        let (g, store) = self.gate();
        match f(g, store) {
            Ok(r) => r.map_err(convert::from_wit_error),
            Err(trap) => Err(self.recover(&trap)),
        }
    }

    /// Sets the gate's bounds (and those of every instance that replaces this one after a
    /// trap); an invalid configuration is refused and the old one kept.
    pub fn configure(&mut self, config: &resume_gate::Config) -> Result<(), resume_gate::GateError> {
        self.call(|g, s| g.call_configure(s, &convert::to_wit_config(config)))?;
        self.config = Some(config.clone());
        Ok(())
    }

    /// The bounds in force (the defaults until `configure`).
    pub fn config(&self) -> resume_gate::Config {
        self.config.clone().unwrap_or_default()
    }

    /// Loads the gate this crate was built with, on a default engine.
    pub fn load_default() -> anyhow::Result<Self> {
        let engine = Engine::default();
        let component = Self::compile(&engine, GATE_WASM)?;
        Self::new(&engine, &component)
    }

    /// The size of the instance's linear memory in bytes: where the memory store keeps every
    /// session, stream and buffered event.
    pub fn linear_memory_bytes(&self) -> usize {
        self.store.data().memory.bytes
    }

    fn memory_bytes_used(&self) -> Option<usize> {
        Some(self.linear_memory_bytes())
    }

    /// The exported functions and the store to call them with, e.g.
    /// `let (gate, store) = host.gate(); gate.call_open_session(store, "s")?`.
    pub fn gate(&mut self) -> (&GateExports, &mut Store<HostState>) {
        (self.gate.mcp_resume_gate_gate(), &mut self.store)
    }
}

/// The transport's `GateApi` over a component host `$host` — one with a `call` method that runs
/// an export and turns a trap into a store error, and a `memory_bytes_used` — whose bindings'
/// WIT types `$convert` converts: the memory world ([`GateHost`]) and the key-value world
/// ([`store::KvGateHost`]) forward the same way.
macro_rules! forward_gate_api {
    ($host:ty, $convert:ident) => {
        impl mcp_transport::gate::GateApi for $host {
    fn open_session(&mut self, session: &str) -> Result<u64, resume_gate::GateError> {
        let info = self.call(|g, s| g.call_open_session(s, session))?;
        if let Some(victim) = &info.reclaimed {
            tracing::info!(session = %victim, "reclaimed the session idle longest to admit a new one");
        }
        Ok(info.epoch)
    }

    fn has_session(&mut self, session: &str) -> Result<bool, resume_gate::GateError> {
        self.call(|g, s| g.call_has_session(s, session))
    }

    fn end_session(&mut self, session: &str) -> Result<(), resume_gate::GateError> {
        self.call(|g, s| g.call_end_session(s, session))
    }

    fn open_stream(
        &mut self,
        session: &str,
        origin: &resume_gate::Origin,
    ) -> Result<resume_gate::Opened, resume_gate::GateError> {
        let origin = $convert::to_wit_origin(origin);
        self.call(|g, s| g.call_open_stream(s, session, &origin)).map($convert::from_wit_opened)
    }

    fn emit(
        &mut self,
        session: &str,
        stream: u64,
        data: &str,
    ) -> Result<resume_gate::Event, resume_gate::GateError> {
        self.call(|g, s| g.call_on_emit(s, session, stream, data)).map($convert::from_wit_event)
    }

    fn terminal(
        &mut self,
        session: &str,
        stream: u64,
        data: &str,
    ) -> Result<resume_gate::Event, resume_gate::GateError> {
        self.call(|g, s| g.call_on_terminal(s, session, stream, data)).map($convert::from_wit_event)
    }

    fn detach(&mut self, session: &str, stream: u64, attachment: u32) -> Result<(), resume_gate::GateError> {
        self.call(|g, s| g.call_on_detach(s, session, stream, attachment))
    }

    fn abort(&mut self, session: &str, stream: u64) -> Result<(), resume_gate::GateError> {
        self.call(|g, s| g.call_abort_stream(s, session, stream))
    }

    fn abort_request(
        &mut self,
        session: &str,
        id: &resume_gate::RequestId,
    ) -> Result<bool, resume_gate::GateError> {
        let id = $convert::to_wit_request_id(id);
        self.call(|g, s| g.call_abort_request(s, session, &id))
    }

    fn poll(
        &mut self,
        session: &str,
        stream: u64,
        attachment: u32,
        after: u64,
    ) -> Result<resume_gate::Polled, resume_gate::GateError> {
        self.call(|g, s| g.call_poll_stream(s, session, stream, attachment, after))
            .map($convert::from_wit_polled)
    }

    fn renew_lease(&mut self, session: &str, stream: u64) -> Result<(), resume_gate::GateError> {
        self.call(|g, s| g.call_renew_lease(s, session, stream))
    }

    fn reconnect(
        &mut self,
        session: &str,
        cursor: &[u8],
        origin: &resume_gate::Origin,
    ) -> Result<resume_gate::Decision, resume_gate::GateError> {
        let origin = $convert::to_wit_origin(origin);
        self.call(|g, s| g.call_on_reconnect(s, session, cursor, &origin)).map($convert::from_wit_decision)
    }

            fn counters(&mut self) -> Result<resume_gate::Counters, resume_gate::GateError> {
                self.call(|g, s| g.call_read_counters(s).map(Ok)).map($convert::from_wit_counters)
            }

            fn memory_bytes(&self) -> Option<usize> {
                self.memory_bytes_used()
            }
        }
    };
}
pub(crate) use forward_gate_api;

forward_gate_api!(GateHost, convert);
