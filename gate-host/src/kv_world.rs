//! World `gate-kv` in wasmtime: each [`KvWorld`] is one instance with its own `Store`, all of
//! them sharing one key-value store (a map in process, or Redis) — many "requests" at once,
//! and a trap loses nothing: the state was never in the instance.

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

pub use exports::mcp::resume_gate::gate::Guest as Exports;
pub use exports::mcp::resume_gate::types;

/// This world's WIT types ↔ the core's types.
pub mod convert {
    use super::types as wit;

    resume_gate::wit_conversions!();
}

pub struct KvState {
    wasi: WasiCtx,
    table: ResourceTable,
    kv: SharedKv,
}

impl WasiView for KvState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

fn kv_view(s: &mut KvState) -> KvView<'_> {
    KvView { kv: &mut s.kv, table: &mut s.table }
}

/// Compiles the component this crate was built with and links WASI and the key-value host, once
/// for many instances.
pub fn prepare(engine: &Engine) -> anyhow::Result<GateKvPre<KvState>> {
    prepare_from(engine, crate::GATE_KV_WASM)
}

/// As [`prepare`], for the component at `path`.
pub fn prepare_from(engine: &Engine, path: &str) -> anyhow::Result<GateKvPre<KvState>> {
    let component = Component::from_file(engine, path)?;
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    keyvalue::add_to_linker(&mut linker, kv_view)?;
    Ok(GateKvPre::new(linker.instantiate_pre(&component)?)?)
}

/// One instance of the gate over the shared `kv`.
pub struct KvWorld {
    store: Store<KvState>,
    bindings: GateKv,
}

impl KvWorld {
    pub fn new(pre: &GateKvPre<KvState>, kv: impl Into<SharedKv>) -> anyhow::Result<Self> {
        Self::with_wasi(pre, kv, WasiCtx::builder().build())
    }

    /// One instance whose WASI context (its clock, say) the caller built.
    pub fn with_wasi(
        pre: &GateKvPre<KvState>,
        kv: impl Into<SharedKv>,
        wasi: WasiCtx,
    ) -> anyhow::Result<Self> {
        let state = KvState { wasi, table: ResourceTable::new(), kv: kv.into() };
        let mut store = Store::new(pre.engine(), state);
        let bindings = pre.instantiate(&mut store)?;
        Ok(Self { store, bindings })
    }

    /// The exported functions and the store to call them with.
    pub fn exports(&mut self) -> (&Exports, &mut Store<KvState>) {
        (self.bindings.mcp_resume_gate_gate(), &mut self.store)
    }
}
