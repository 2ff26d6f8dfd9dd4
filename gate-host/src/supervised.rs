//! An instance of either world behind the transport's `GateApi`, recreated after a trap: the
//! one place a host's trap recovery lives.
//!
//! A trap poisons a wasmtime instance. The component never traps on any input (the boundary
//! tests hold it to that), but a host that caps the instance's memory, say, can still meet one.
//! [`Supervised`] answers that call with a store error (`503`, never `404`), makes a new
//! instance, and configures it with the bounds the old one had. For world `gate-memory` the
//! sessions went with the old instance (later requests of them get `404`); for `gate-kv`
//! nothing is lost: the state is in the store.

use resume_gate::{Config, GateError};
use wasmtime::Store;
use wasmtime_wasi::WasiCtx;

use crate::keyvalue::SharedKv;
use crate::kv_world::{self, GateKvPre, KvState, KvWorld};
use crate::memory::{self, GateMemoryPre, MemoryWorld};

/// What a world's instance offers its supervisor.
pub trait World: Sized {
    type Exports;
    type State: 'static;
    type WitError;
    /// What it takes to make another instance.
    type Maker;

    fn make(maker: &Self::Maker) -> anyhow::Result<Self>;
    fn exports(&mut self) -> (&Self::Exports, &mut Store<Self::State>);
    /// `configure` with `config`; `false` if the instance refused it.
    fn configure(&mut self, config: &Config) -> bool;
    fn error(e: Self::WitError) -> GateError;
    /// The instance's linear memory, when its state lives there.
    fn memory_bytes(&self) -> Option<usize> {
        None
    }
}

/// The instances a supervisor makes of world `gate-memory`: linked once, with a memory cap.
#[derive(Clone)]
pub struct MemoryMaker {
    pub pre: GateMemoryPre<memory::State>,
    pub memory_limit: usize,
}

/// The instances a supervisor makes of world `gate-kv`: linked once, over one shared store.
#[derive(Clone)]
pub struct KvMaker {
    pub pre: GateKvPre<KvState>,
    pub kv: SharedKv,
}

impl World for MemoryWorld {
    type Exports = memory::Exports;
    type State = memory::State;
    type WitError = memory::types::GateError;
    type Maker = MemoryMaker;

    fn make(maker: &MemoryMaker) -> anyhow::Result<Self> {
        MemoryWorld::new(&maker.pre, WasiCtx::builder().build(), maker.memory_limit)
    }
    fn exports(&mut self) -> (&memory::Exports, &mut Store<memory::State>) {
        MemoryWorld::exports(self)
    }
    fn configure(&mut self, config: &Config) -> bool {
        let (g, store) = self.exports();
        matches!(g.call_configure(store, &memory::convert::to_wit_config(config)), Ok(Ok(())))
    }
    fn error(e: memory::types::GateError) -> GateError {
        memory::convert::from_wit_error(e)
    }
    fn memory_bytes(&self) -> Option<usize> {
        Some(self.linear_memory_bytes())
    }
}

impl World for KvWorld {
    type Exports = kv_world::Exports;
    type State = KvState;
    type WitError = kv_world::types::GateError;
    type Maker = KvMaker;

    fn make(maker: &KvMaker) -> anyhow::Result<Self> {
        KvWorld::new(&maker.pre, maker.kv.clone())
    }
    fn exports(&mut self) -> (&kv_world::Exports, &mut Store<KvState>) {
        KvWorld::exports(self)
    }
    fn configure(&mut self, config: &Config) -> bool {
        let (g, store) = self.exports();
        matches!(g.call_configure(store, &kv_world::convert::to_wit_config(config)), Ok(Ok(())))
    }
    fn error(e: kv_world::types::GateError) -> GateError {
        kv_world::convert::from_wit_error(e)
    }
}

/// An instance of world `W`, recreated after a trap.
pub struct Supervised<W: World> {
    instance: W,
    maker: W::Maker,
    /// The bounds `configure` accepted, for an instance that replaces this one.
    config: Option<Config>,
}

impl<W: World> Supervised<W> {
    pub fn new(maker: W::Maker) -> anyhow::Result<Self> {
        Ok(Self { instance: W::make(&maker)?, maker, config: None })
    }

    /// Supervises an instance made by the caller (with a test's clock, say).
    pub fn with_instance(instance: W, maker: W::Maker) -> Self {
        Self { instance, maker, config: None }
    }

    /// The bounds in force (the defaults until `configure`).
    pub fn config(&self) -> Config {
        self.config.clone().unwrap_or_default()
    }

    /// The instance, for a caller that calls its exports itself.
    pub fn instance(&mut self) -> &mut W {
        &mut self.instance
    }

    /// Calls an export; a trap recreates the instance and becomes a store error (`503`).
    pub fn call<T>(
        &mut self,
        f: impl FnOnce(&W::Exports, &mut Store<W::State>) -> wasmtime::Result<Result<T, W::WitError>>,
    ) -> Result<T, GateError> {
        let (g, store) = self.instance.exports();
        match f(g, store) {
            Ok(r) => r.map_err(W::error),
            Err(trap) => Err(self.recover(&trap)),
        }
    }

    fn recover(&mut self, trap: &wasmtime::Error) -> GateError {
        tracing::error!(error = %trap, "the gate component trapped; recreating the instance");
        match W::make(&self.maker) {
            Ok(instance) => {
                self.instance = instance;
                if let Some(config) = &self.config
                    && !self.instance.configure(config)
                {
                    tracing::error!("the recreated gate instance refused its configuration");
                }
            }
            Err(e) => tracing::error!(error = %e, "recreating the gate instance failed"),
        }
        GateError::Store("the gate component trapped; its instance was recreated".into())
    }

    /// Bounds `configure` accepted: every instance that replaces this one gets them too.
    fn configured(&mut self, config: &Config) {
        self.config = Some(config.clone());
    }

    fn memory_bytes_used(&self) -> Option<usize> {
        self.instance.memory_bytes()
    }
}

mcp_transport::forward_gate_api!(Supervised<MemoryWorld>, crate::memory::convert);
mcp_transport::forward_gate_api!(Supervised<KvWorld>, crate::kv_world::convert);

/// Sees every growth of an instance's linear memory (which never shrinks) and allows it up
/// to a limit: the gate's own bounds keep it well below, and a host can report the size.
pub struct MemoryWatch {
    bytes: usize,
    limit: usize,
}

impl MemoryWatch {
    pub fn new(limit: usize) -> Self {
        Self { bytes: 0, limit }
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
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

/// Linear memory an instance may grow to by default: the component's 32-bit address space.
pub const DEFAULT_MEMORY_LIMIT: usize = 4 << 30;
