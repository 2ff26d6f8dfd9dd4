//! One trait, every side: the native core (over the memory or the key-value store) and the real
//! components in wasmtime (world `gate-memory`, and world `gate-kv` over the draft2 key-value
//! host).
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
use resume_gate::{Config, Decision, Event, GateError, Opened, Origin, SessionInfo};
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime_wasi::{HostWallClock, WasiCtxBuilder};

pub use resume_gate_model::driver::{Driver, Native};

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

/// [`Driver`] for a component side: `$ty` has a `clock` and `exports()`, `$convert` holds the
/// WIT conversions of its bindings.
macro_rules! component_driver {
    ($ty:ty, $convert:path) => {
        impl Driver for $ty {
            fn set_now(&mut self, ms: u64) {
                self.clock.set(ms);
            }
            fn configure(&mut self, config: &Config) -> Result<Result<(), GateError>> {
                use $convert::*;
                let (gate, store) = self.exports();
                Ok(gate.call_configure(store, &to_wit_config(config))?.map_err(from_wit_error))
            }
            fn open_session(&mut self, session: &str) -> Result<Result<SessionInfo, GateError>> {
                use $convert::*;
                let (gate, store) = self.exports();
                Ok(gate
                    .call_open_session(store, session)?
                    .map(|i| SessionInfo { epoch: i.epoch, reclaimed: i.reclaimed })
                    .map_err(from_wit_error))
            }
            fn end_session(&mut self, session: &str) -> Result<Result<(), GateError>> {
                use $convert::*;
                let (gate, store) = self.exports();
                Ok(gate.call_end_session(store, session)?.map_err(from_wit_error))
            }
            fn open_stream(&mut self, session: &str, origin: &Origin) -> Result<Result<Opened, GateError>> {
                use $convert::*;
                let (gate, store) = self.exports();
                Ok(gate
                    .call_open_stream(store, session, &to_wit_origin(origin))?
                    .map(from_wit_opened)
                    .map_err(from_wit_error))
            }
            fn emit(&mut self, session: &str, stream: u64, data: &str) -> Result<Result<Event, GateError>> {
                use $convert::*;
                let (gate, store) = self.exports();
                Ok(gate
                    .call_on_emit(store, session, stream, data)?
                    .map(from_wit_event)
                    .map_err(from_wit_error))
            }
            fn terminal(
                &mut self,
                session: &str,
                stream: u64,
                data: &str,
            ) -> Result<Result<Event, GateError>> {
                use $convert::*;
                let (gate, store) = self.exports();
                Ok(gate
                    .call_on_terminal(store, session, stream, data)?
                    .map(from_wit_event)
                    .map_err(from_wit_error))
            }
            fn detach(
                &mut self,
                session: &str,
                stream: u64,
                attachment: u32,
            ) -> Result<Result<(), GateError>> {
                use $convert::*;
                let (gate, store) = self.exports();
                Ok(gate.call_on_detach(store, session, stream, attachment)?.map_err(from_wit_error))
            }
            fn abort(&mut self, session: &str, stream: u64) -> Result<Result<(), GateError>> {
                use $convert::*;
                let (gate, store) = self.exports();
                Ok(gate.call_abort_stream(store, session, stream)?.map_err(from_wit_error))
            }
            fn reconnect(
                &mut self,
                session: &str,
                cursor: &[u8],
                origin: &Origin,
            ) -> Result<Result<Decision, GateError>> {
                use $convert::*;
                let (gate, store) = self.exports();
                let d = gate.call_on_reconnect(store, session, cursor, &to_wit_origin(origin))?;
                Ok(d.map(from_wit_decision).map_err(from_wit_error))
            }
        }
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

component_driver!(Wasm, host_example::convert);
component_driver!(WasmKv, edge_host::gate_kv::convert);
