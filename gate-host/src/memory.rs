//! World `gate-memory` in wasmtime, the whole embedding in one screen: `bindgen!` reads the
//! WIT, a store holds what the component's imports need (a wall clock and randomness, from
//! WASI), a linker links them once, and each instance is one `Store` — the memory world's
//! state *is* the instance.

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

wasmtime::component::bindgen!({ world: "gate-memory", path: "../wit", additional_derives: [PartialEq, Eq] });

pub use exports::mcp::resume_gate::gate::Guest as Exports;
pub use exports::mcp::resume_gate::types;

/// This world's WIT types ↔ the core's types.
pub mod convert {
    use super::types as wit;

    resume_gate::wit_conversions!();
}

/// What an instance's store holds.
pub struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    /// The instance's linear memory: its size, and how far it may grow.
    memory: crate::supervised::MemoryWatch,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// Compiles the component at `path` and links it, once for any number of instances.
pub fn prepare(engine: &Engine, path: &str) -> anyhow::Result<GateMemoryPre<State>> {
    let component = Component::from_file(engine, path)?;
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    Ok(GateMemoryPre::new(linker.instantiate_pre(&component)?)?)
}

/// One instance of the gate, its state in its linear memory.
pub struct MemoryWorld {
    store: Store<State>,
    bindings: GateMemory,
}

impl MemoryWorld {
    /// An instance with `wasi` (the host's clock and randomness, or a test's), its linear
    /// memory capped at `memory_limit` bytes.
    pub fn new(pre: &GateMemoryPre<State>, wasi: WasiCtx, memory_limit: usize) -> anyhow::Result<Self> {
        let memory = crate::supervised::MemoryWatch::new(memory_limit);
        let mut store = Store::new(pre.engine(), State { wasi, table: ResourceTable::new(), memory });
        store.limiter(|s| &mut s.memory);
        let bindings = pre.instantiate(&mut store)?;
        Ok(Self { store, bindings })
    }

    /// The exported functions and the store to call them with, e.g.
    /// `let (gate, store) = world.exports(); gate.call_open_session(store, "s")?`.
    pub fn exports(&mut self) -> (&Exports, &mut Store<State>) {
        (self.bindings.mcp_resume_gate_gate(), &mut self.store)
    }

    /// The size of the instance's linear memory: where every session and event lives.
    pub fn linear_memory_bytes(&self) -> usize {
        self.store.data().memory.bytes()
    }
}
