//! What the transport needs from the gate: the operations of `mcp:resume-gate/gate`, in the
//! core's types. A host implements it over its binding of the component.

use resume_gate::{Decision, Event, GateError, Opened, Origin, Polled, RequestId};

pub trait GateApi {
    fn open_session(&mut self, session: &str) -> Result<u64, GateError>;
    /// `Err` when the store could not tell (the host answers `503`, never `404`).
    fn has_session(&mut self, session: &str) -> Result<bool, GateError>;
    fn end_session(&mut self, session: &str) -> Result<(), GateError>;
    fn open_stream(&mut self, session: &str, origin: &Origin) -> Result<Opened, GateError>;
    fn emit(&mut self, session: &str, stream: u64, data: &str) -> Result<Event, GateError>;
    fn terminal(&mut self, session: &str, stream: u64, data: &str) -> Result<Event, GateError>;
    fn detach(&mut self, session: &str, stream: u64, attachment: u32) -> Result<(), GateError>;
    fn abort(&mut self, session: &str, stream: u64) -> Result<(), GateError>;
    fn abort_request(&mut self, session: &str, id: &RequestId) -> Result<bool, GateError>;
    fn poll(&mut self, session: &str, stream: u64, attachment: u32, after: u64) -> Result<Polled, GateError>;
    fn reconnect(&mut self, session: &str, cursor: &[u8], origin: &Origin) -> Result<Decision, GateError>;
    /// Bytes of memory the gate's state occupies, when the host can tell (a component
    /// instance: its linear memory).
    fn memory_bytes(&self) -> Option<usize> {
        None
    }
}
