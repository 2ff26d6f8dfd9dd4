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
use edge_host::gate_kv::{self, GateKvInstance, GateKvPre, GateKvState};
use host_example::GateHost;
use resume_gate::{Config, GateError};
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime_wasi::{HostWallClock, WasiCtxBuilder};

pub use resume_gate_model::driver::{Driver, GateApi, Native};

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

/// The component built by host-example's build script, compiled once per test process.
pub fn compiled_gate() -> (Engine, Component) {
    static COMPILED: std::sync::OnceLock<(Engine, Component)> = std::sync::OnceLock::new();
    COMPILED
        .get_or_init(|| {
            let engine = engine();
            let component =
                GateHost::compile(&engine, host_example::GATE_WASM).expect("compile the gate component");
            (engine, component)
        })
        .clone()
}

/// The real component in wasmtime, one instance, its clock under the test's control.
pub struct Wasm {
    pub host: GateHost,
    clock: TestClock,
}

impl Wasm {
    pub fn new() -> Result<Self> {
        let (engine, component) = compiled_gate();
        let clock = TestClock::default();
        let wasi = WasiCtxBuilder::new().wall_clock(clock.clone()).build();
        Ok(Self { host: GateHost::with_wasi(&engine, &component, wasi)?, clock })
    }
}

/// The gate-kv component in wasmtime over the draft2 key-value host, one instance, its clock
/// under the test's control; `kv` is shared with whoever else holds a clone.
pub struct WasmKv {
    pub instance: GateKvInstance,
    clock: TestClock,
}

impl WasmKv {
    pub fn new(kv: impl Into<edge_host::keyvalue::SharedKv>) -> Result<Self> {
        static PREPARED: std::sync::OnceLock<GateKvPre<GateKvState>> = std::sync::OnceLock::new();
        let pre = PREPARED.get_or_init(|| gate_kv::prepare(&engine()).expect("link gate-kv"));
        let clock = TestClock::default();
        let wasi = WasiCtxBuilder::new().wall_clock(clock.clone()).build();
        Ok(Self { instance: GateKvInstance::with_wasi(pre, kv, wasi)?, clock })
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
                let (gate, store) = self.exports();
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

impl Wasm {
    fn exports(&mut self) -> (&host_example::GateExports, &mut wasmtime::Store<host_example::HostState>) {
        self.host.gate()
    }
}

impl WasmKv {
    fn exports(&mut self) -> (&gate_kv::GateExports, &mut wasmtime::Store<GateKvState>) {
        self.instance.gate()
    }
}

component_side!(
    Wasm,
    host_example::convert,
    host_example::GateExports,
    host_example::HostState,
    host_example::types::GateError
);
component_side!(
    WasmKv,
    edge_host::gate_kv::convert,
    gate_kv::GateExports,
    GateKvState,
    gate_kv::types::GateError
);
