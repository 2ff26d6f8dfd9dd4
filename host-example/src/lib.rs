//! The gate component embedded in wasmtime: the whole embedding in one screen.
//!
//! `bindgen!` reads `wit/gate.wit`; a [`GateHost`] owns one `Store` with one long-lived
//! instance of the component (memory store: the instance *is* the state). The component
//! imports only `wasi:clocks/wall-clock` and `wasi:random/random`, which `wasmtime-wasi`
//! provides (a test gives it a clock of its own); the transport's `GateApi` is forwarded by
//! `mcp_transport::forward_gate_api!`.
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

    /// Bounds `configure` accepted: every instance that replaces this one after a trap gets
    /// them too.
    fn configured(&mut self, config: &resume_gate::Config) {
        self.config = Some(config.clone());
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

mcp_transport::forward_gate_api!(GateHost, convert);
