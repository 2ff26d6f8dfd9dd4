//! The gate-kv component alone in wasmtime: each [`GateKvInstance`] is one instance with its own
//! `Store`, all of them sharing one key-value map — many "requests" at once.

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::keyvalue::{self, KvView, SharedKv};

wasmtime::component::bindgen!({
    world: "mcp:resume-gate/gate-kv",
    path: "../wit",
    with: { "wasi:keyvalue": crate::keyvalue::bindings::wasi::keyvalue },
    additional_derives: [PartialEq, Eq],
});

pub use exports::mcp::resume_gate::gate::Guest as GateExports;
pub use exports::mcp::resume_gate::types;

/// This world's WIT types ↔ the core's types.
pub mod convert {
    use super::types as wit;

    resume_gate::wit_conversions!();
}

pub struct GateKvState {
    wasi: WasiCtx,
    table: ResourceTable,
    kv: SharedKv,
}

impl WasiView for GateKvState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

fn kv_view(s: &mut GateKvState) -> KvView<'_> {
    KvView { kv: &mut s.kv, table: &mut s.table }
}

/// Compiles the component and links WASI and the key-value host, once for many instances.
pub fn prepare(engine: &Engine) -> anyhow::Result<GateKvPre<GateKvState>> {
    let component = Component::from_file(engine, crate::GATE_KV_WASM)?;
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    keyvalue::add_to_linker(&mut linker, kv_view)?;
    Ok(GateKvPre::new(linker.instantiate_pre(&component)?)?)
}

/// One instance of the gate over the shared `kv`.
pub struct GateKvInstance {
    pub store: Store<GateKvState>,
    pub gate: GateKv,
}

impl GateKvInstance {
    pub fn new(pre: &GateKvPre<GateKvState>, kv: impl Into<SharedKv>) -> anyhow::Result<Self> {
        Self::with_wasi(pre, kv, WasiCtx::builder().build())
    }

    /// One instance whose WASI context (its clock, say) the caller built.
    pub fn with_wasi(
        pre: &GateKvPre<GateKvState>,
        kv: impl Into<SharedKv>,
        wasi: WasiCtx,
    ) -> anyhow::Result<Self> {
        let state = GateKvState { wasi, table: ResourceTable::new(), kv: kv.into() };
        let mut store = Store::new(pre.engine(), state);
        let gate = pre.instantiate(&mut store)?;
        Ok(Self { store, gate })
    }

    /// The exported functions and the store to call them with.
    pub fn gate(&mut self) -> (&GateExports, &mut Store<GateKvState>) {
        (self.gate.mcp_resume_gate_gate(), &mut self.store)
    }
}
