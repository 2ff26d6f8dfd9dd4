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
//! - `main.rs`: the command line (`serve`, `demo`).

use std::path::Path;

pub mod bypass;
pub mod convert;
pub mod serve;

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

/// Sees every growth of the instance's linear memory (which never shrinks) and allows it: the
/// gate's own bounds are what keep it in check, and a host can report the size.
#[derive(Default)]
struct MemoryWatch {
    bytes: usize,
}

impl wasmtime::ResourceLimiter for MemoryWatch {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.bytes = self.bytes.max(desired);
        Ok(true)
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
}

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
        let state = HostState { wasi, table: ResourceTable::new(), memory: MemoryWatch::default() };
        let mut store = Store::new(pre.engine(), state);
        store.limiter(|s| &mut s.memory);
        let gate = pre.instantiate(&mut store)?;
        Ok(Self { store, gate })
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

    /// The exported functions and the store to call them with, e.g.
    /// `let (gate, store) = host.gate(); gate.call_open_session(store, "s")?`.
    pub fn gate(&mut self) -> (&GateExports, &mut Store<HostState>) {
        (self.gate.mcp_resume_gate_gate(), &mut self.store)
    }
}

/// A trap poisons the instance: every later call fails the same way, and the host says so.
fn trapped(e: wasmtime::Error) -> resume_gate::GateError {
    resume_gate::GateError::Store(format!("the gate component trapped: {e}"))
}

impl mcp_transport::gate::GateApi for GateHost {
    fn open_session(&mut self, session: &str) -> Result<u64, resume_gate::GateError> {
        let (g, store) = self.gate();
        let r = g.call_open_session(store, session).map_err(trapped)?;
        r.map(|i| i.epoch).map_err(convert::from_wit_error)
    }

    fn has_session(&mut self, session: &str) -> bool {
        let (g, store) = self.gate();
        g.call_has_session(store, session).unwrap_or(false)
    }

    fn end_session(&mut self, session: &str) -> Result<(), resume_gate::GateError> {
        let (g, store) = self.gate();
        g.call_end_session(store, session).map_err(trapped)?.map_err(convert::from_wit_error)
    }

    fn open_stream(
        &mut self,
        session: &str,
        origin: &resume_gate::Origin,
    ) -> Result<resume_gate::Opened, resume_gate::GateError> {
        let (g, store) = self.gate();
        let r = g.call_open_stream(store, session, &convert::to_wit_origin(origin)).map_err(trapped)?;
        r.map(convert::from_wit_opened).map_err(convert::from_wit_error)
    }

    fn emit(
        &mut self,
        session: &str,
        stream: u64,
        data: &str,
    ) -> Result<resume_gate::Event, resume_gate::GateError> {
        let (g, store) = self.gate();
        let r = g.call_on_emit(store, session, stream, data).map_err(trapped)?;
        r.map(convert::from_wit_event).map_err(convert::from_wit_error)
    }

    fn terminal(
        &mut self,
        session: &str,
        stream: u64,
        data: &str,
    ) -> Result<resume_gate::Event, resume_gate::GateError> {
        let (g, store) = self.gate();
        let r = g.call_on_terminal(store, session, stream, data).map_err(trapped)?;
        r.map(convert::from_wit_event).map_err(convert::from_wit_error)
    }

    fn detach(&mut self, session: &str, stream: u64, attachment: u32) -> Result<(), resume_gate::GateError> {
        let (g, store) = self.gate();
        g.call_on_detach(store, session, stream, attachment)
            .map_err(trapped)?
            .map_err(convert::from_wit_error)
    }

    fn abort(&mut self, session: &str, stream: u64) -> Result<(), resume_gate::GateError> {
        let (g, store) = self.gate();
        g.call_abort_stream(store, session, stream).map_err(trapped)?.map_err(convert::from_wit_error)
    }

    fn abort_request(
        &mut self,
        session: &str,
        id: &resume_gate::RequestId,
    ) -> Result<bool, resume_gate::GateError> {
        let (g, store) = self.gate();
        g.call_abort_request(store, session, &convert::to_wit_request_id(id))
            .map_err(trapped)?
            .map_err(convert::from_wit_error)
    }

    fn poll(
        &mut self,
        session: &str,
        stream: u64,
        attachment: u32,
        after: u64,
    ) -> Result<resume_gate::Polled, resume_gate::GateError> {
        let (g, store) = self.gate();
        let r = g.call_poll_stream(store, session, stream, attachment, after).map_err(trapped)?;
        r.map(convert::from_wit_polled).map_err(convert::from_wit_error)
    }

    fn reconnect(
        &mut self,
        session: &str,
        cursor: &[u8],
        origin: &resume_gate::Origin,
    ) -> Result<resume_gate::Decision, resume_gate::GateError> {
        let (g, store) = self.gate();
        let r =
            g.call_on_reconnect(store, session, cursor, &convert::to_wit_origin(origin)).map_err(trapped)?;
        r.map(convert::from_wit_decision).map_err(convert::from_wit_error)
    }
}
