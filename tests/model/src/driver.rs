//! What the operation runner drives: the gate's operations as every embedding speaks them
//! ([`GateApi`]), plus a clock the runner sets. [`InProcess`] is the core called directly; the
//! component sides implement `Driver` in the `tests` crate.

pub use mcp_transport::gate::GateApi;
pub use mcp_transport::test_util::InProcess;
use resume_gate::Store;

/// A gate whose clock the runner sets; every operation is [`GateApi`]'s.
pub trait Driver: GateApi {
    /// Sets the wall clock the gate reads, in milliseconds since the Unix epoch.
    fn set_now(&mut self, ms: u64);
}

impl<S: Store> Driver for InProcess<S> {
    fn set_now(&mut self, ms: u64) {
        InProcess::set_now(self, ms);
    }
}
