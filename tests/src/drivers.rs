//! Every side behind one interface, the transport's `GateApi`: the native core (over the memory
//! or the key-value store) and the real components in wasmtime (world `gate-memory`, and world
//! `gate-kv` over the draft2 key-value host), each with a clock the test sets (`Driver`).
//!
//! The component side reads time from a wall clock the test controls, through WASI, exactly as
//! it would read the host's clock; randomness is the host's real one (epochs are compared
//! after normalization, see `ops`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Result;
use gate_host::kv_world::{self, GateKvPre, KvState, KvWorld};
use gate_host::memory::{self, GateMemoryPre, MemoryWorld};
use gate_host::supervised::DEFAULT_MEMORY_LIMIT;
use resume_gate::{Config, GateError};
use wasmtime::Engine;
use wasmtime_wasi::{HostWallClock, WasiCtxBuilder};

pub use ::model::driver::{Driver, GateApi, InProcess};

/// A wall clock the test sets, in milliseconds since the Unix epoch.
#[derive(Clone, Default)]
pub struct TestClock(Arc<AtomicU64>);

impl TestClock {
    pub fn set(&self, ms: u64) {
        self.0.store(ms, Ordering::SeqCst);
    }
}

impl HostWallClock for TestClock {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }
    fn now(&self) -> Duration {
        Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
}

/// The engine the component sides share. `RESUME_GATE_PERFMAP=1` names the components'
/// compiled code for `perf`.
pub fn engine() -> Engine {
    static ENGINE: std::sync::OnceLock<Engine> = std::sync::OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut config = wasmtime::Config::new();
            if std::env::var_os("RESUME_GATE_PERFMAP").is_some() {
                config.profiler(wasmtime::ProfilingStrategy::PerfMap);
            }
            Engine::new(&config).expect("an engine")
        })
        .clone()
}

/// World `gate-memory` built by gate-host's build script, linked once per test process.
pub fn prepared_memory() -> GateMemoryPre<memory::State> {
    static PREPARED: std::sync::OnceLock<GateMemoryPre<memory::State>> = std::sync::OnceLock::new();
    PREPARED
        .get_or_init(|| memory::prepare(&engine(), gate_host::GATE_MEMORY_WASM).expect("link gate-memory"))
        .clone()
}

/// World `gate-kv` built by gate-host's build script, linked once per test process.
pub fn prepared_kv() -> GateKvPre<KvState> {
    static PREPARED: std::sync::OnceLock<GateKvPre<KvState>> = std::sync::OnceLock::new();
    PREPARED.get_or_init(|| kv_world::prepare(&engine()).expect("link gate-kv")).clone()
}

/// The real component in wasmtime, one instance, its clock under the test's control.
pub struct Wasm {
    pub instance: MemoryWorld,
    clock: TestClock,
}

impl Wasm {
    pub fn new() -> Result<Self> {
        let clock = TestClock::default();
        let wasi = WasiCtxBuilder::new().wall_clock(clock.clone()).build();
        Ok(Self { instance: MemoryWorld::new(&prepared_memory(), wasi, DEFAULT_MEMORY_LIMIT)?, clock })
    }
}

/// The gate-kv component in wasmtime over the draft2 key-value host, one instance, its clock
/// under the test's control; `kv` is shared with whoever else holds a clone.
pub struct WasmKv {
    pub instance: KvWorld,
    clock: TestClock,
}

impl WasmKv {
    pub fn new(kv: impl Into<gate_host::keyvalue::SharedKv>) -> Result<Self> {
        let clock = TestClock::default();
        let wasi = WasiCtxBuilder::new().wall_clock(clock.clone()).build();
        Ok(Self { instance: KvWorld::with_wasi(&prepared_kv(), kv, wasi)?, clock })
    }
}

/// The transport's `GateApi` for a component side, through the one forwarding every wasmtime
/// embedding uses; here a trap fails the test at once.
macro_rules! component_side {
    ($ty:ty, $convert:path, $exports:ty, $state:ty, $wit_error:ty) => {
        impl $ty {
            fn call<T>(
                &mut self,
                f: impl FnOnce(&$exports, &mut wasmtime::Store<$state>) -> wasmtime::Result<Result<T, $wit_error>>,
            ) -> Result<T, GateError> {
                use $convert as convert;
                let (gate, store) = self.instance.exports();
                f(gate, store).expect("the component trapped").map_err(convert::from_wit_error)
            }
            fn configured(&mut self, _config: &Config) {}
            fn memory_bytes_used(&self) -> Option<usize> {
                None
            }
        }

        impl Driver for $ty {
            fn set_now(&mut self, ms: u64) {
                self.clock.set(ms);
            }
        }

        mcp_transport::forward_gate_api!($ty, $convert);
    };
}

component_side!(Wasm, memory::convert, memory::Exports, memory::State, memory::types::GateError);
component_side!(WasmKv, kv_world::convert, kv_world::Exports, KvState, kv_world::types::GateError);
