//! `--store`: the gate's state in a key-value store that any number of host-example processes
//! share (Redis), instead of in the component instance.
//!
//! The gate-kv component runs over the key-value host of `kv-host`; the `append` journal moves
//! into the same store (the keys the Spin app uses), so that every process sees one journal.
//! A trap loses nothing here: the instance is recreated and the state is still in the store.

use kv_host::gate_kv::{self, GateExports, GateKvInstance, GateKvPre, GateKvState, types};
use kv_host::keyvalue::SharedKv;
use mcp_transport::tools;
use resume_gate::RequestId;
use resume_gate::kv::Kv;
use resume_gate_redis::ScriptError;
use wasmtime::Engine;

/// One gate-kv instance over a shared store.
pub struct KvGateHost {
    instance: GateKvInstance,
    pre: GateKvPre<GateKvState>,
    kv: SharedKv,
    config: Option<resume_gate::Config>,
}

impl KvGateHost {
    /// Compiles and links the gate-kv component this crate was built with, over `kv`.
    pub fn new(kv: SharedKv) -> anyhow::Result<Self> {
        let pre = gate_kv::prepare(&Engine::default())?;
        let instance = GateKvInstance::new(&pre, kv.clone())?;
        Ok(Self { instance, pre, kv, config: None })
    }

    /// Bounds `configure` accepted, kept for an instance that replaces this one after a trap.
    fn configured(&mut self, config: &resume_gate::Config) {
        self.config = Some(config.clone());
    }

    /// The bounds in force (the defaults until `configure`).
    pub fn config(&self) -> resume_gate::Config {
        self.config.clone().unwrap_or_default()
    }

    /// The store, for the journal.
    pub fn kv(&self) -> SharedKv {
        self.kv.clone()
    }

    fn call<T>(
        &mut self,
        f: impl FnOnce(
            &GateExports,
            &mut wasmtime::Store<GateKvState>,
        ) -> wasmtime::Result<Result<T, types::GateError>>,
    ) -> Result<T, resume_gate::GateError> {
        let (g, store) = self.instance.gate();
        match f(g, store) {
            Ok(r) => r.map_err(kv_convert::from_wit_error),
            Err(trap) => Err(self.recover(&trap)),
        }
    }

    /// A new instance over the same store: the state was never in the old one.
    fn recover(&mut self, trap: &wasmtime::Error) -> resume_gate::GateError {
        tracing::error!(error = %trap, "the gate component trapped; recreating the instance");
        match GateKvInstance::new(&self.pre, self.kv.clone()) {
            Ok(instance) => {
                self.instance = instance;
                if let Some(config) = self.config.clone() {
                    let wit = kv_convert::to_wit_config(&config);
                    let (g, store) = self.instance.gate();
                    if !matches!(g.call_configure(store, &wit), Ok(Ok(()))) {
                        tracing::error!("the recreated gate instance refused its configuration");
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "recreating the gate instance failed"),
        }
        resume_gate::GateError::Store("the gate component trapped; its instance was recreated".into())
    }

    fn memory_bytes_used(&self) -> Option<usize> {
        None
    }
}

use gate_kv::convert as kv_convert;

mcp_transport::forward_gate_api!(KvGateHost, kv_convert);

/// The `append` journal in the store, kept as the Spin app keeps it. On Redis a line is
/// appended by one atomic script, once per request (`tools::JournalKv`).
pub struct KvJournal {
    kv: SharedKv,
}

impl KvJournal {
    pub fn new(kv: SharedKv) -> Self {
        Self { kv }
    }

    pub fn append(&self, session: &str, request: &RequestId, line: &str) -> Result<u64, tools::AppendError> {
        tools::append_to_kv_journal(self, session, request, line)
    }

    pub fn page(&self, from: u64, limit: u64) -> Result<tools::JournalPage, String> {
        tools::kv_journal_page(self, from, limit)
    }
}

impl tools::JournalKv for KvJournal {
    fn increment(&self, key: &str, delta: i64) -> Result<i64, String> {
        self.kv.clone().increment(key, delta).map_err(|e| e.0)
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        self.kv.clone().get(key).map_err(|e| e.0)
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<(), String> {
        self.kv.clone().set(key, value).map_err(|e| e.0)
    }

    fn append_once(&self, request_key: &str, line: &str) -> Result<u64, tools::AppendError> {
        let SharedKv::Redis(redis) = &self.kv else {
            return tools::append_once_by_calls(self, request_key, line);
        };
        let (counter, prefix) = (tools::JOURNAL_COUNT_KEY, tools::JOURNAL_LINE_PREFIX);
        match redis.append_once(counter, request_key, prefix, line, tools::MAX_JOURNAL_LINES) {
            Ok(Some(n)) => Ok(n),
            Ok(None) => Err(tools::AppendError::Full),
            Err(ScriptError::NotSent(e)) => Err(tools::AppendError::Failed(e.0)),
            Err(ScriptError::Unknown(e)) => Err(tools::AppendError::Unknown(e.0)),
        }
    }
}
