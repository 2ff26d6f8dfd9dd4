//! No gate at all: the server a gate-less MCP host would be, so a benchmark can show the gate's
//! share of a request (the end-to-end bench's `host-example, no gate` side). Sessions are still tracked, so unknown ones still get
//! `404`; streams get numbers; events get no id and nothing is buffered, so every reconnect
//! starts fresh. Not for serving clients: one whose connection drops loses what it missed.

use std::collections::HashSet;

use mcp_transport::gate::GateApi;
use resume_gate::{
    Decision, FreshStart, GateError, Opened, Origin, Polled, Recorded, RequestId, SessionInfo, StaleReason,
};

#[derive(Default)]
pub struct Bypass {
    sessions: HashSet<String>,
    last_stream: u64,
}

/// An event without an id: its frame is its data alone.
fn unnamed() -> Recorded {
    Recorded { id: String::new(), seq: 0 }
}

impl Bypass {
    fn known(&self, session: &str) -> Result<(), GateError> {
        self.sessions.contains(session).then_some(()).ok_or(GateError::UnknownSession)
    }
}

impl GateApi for Bypass {
    /// Nothing is counted without the gate.
    fn counters(&mut self) -> Result<resume_gate::Counters, GateError> {
        Ok(resume_gate::Counters::default())
    }
    fn collect_garbage(&mut self, _cursor: Option<&str>) -> Result<resume_gate::Swept, GateError> {
        Ok(resume_gate::Swept::default())
    }
    fn configure(&mut self, _config: &resume_gate::Config) -> Result<(), GateError> {
        Ok(())
    }
    fn open_session(&mut self, session: &str) -> Result<SessionInfo, GateError> {
        self.sessions.insert(session.to_owned());
        Ok(SessionInfo { epoch: 0, reclaimed: None })
    }
    fn has_session(&mut self, session: &str) -> Result<bool, GateError> {
        Ok(self.sessions.contains(session))
    }
    fn end_session(&mut self, session: &str) -> Result<(), GateError> {
        self.sessions.remove(session).then_some(()).ok_or(GateError::UnknownSession)
    }
    fn open_stream(&mut self, session: &str, _origin: &Origin) -> Result<Opened, GateError> {
        self.known(session)?;
        self.last_stream += 1;
        let priming = unnamed().into_event(self.last_stream, String::new(), false);
        Ok(Opened { stream: self.last_stream, attachment: 1, priming })
    }
    fn join_stream(
        &mut self,
        session: &str,
        _stream: u64,
        ids: &[RequestId],
    ) -> Result<Vec<bool>, GateError> {
        self.known(session)?;
        Ok(vec![true; ids.len()])
    }
    fn check_stream(
        &mut self,
        _session: &str,
        _stream: u64,
        _attachment: u32,
    ) -> Result<resume_gate::StreamStatus, GateError> {
        Ok(resume_gate::StreamStatus { attached: true, running: true, cancelled: Vec::new() })
    }
    fn release_stream(&mut self, _session: &str, _stream: u64) -> Result<(), GateError> {
        Ok(())
    }
    fn emit(&mut self, session: &str, _stream: u64, _data: &str) -> Result<Recorded, GateError> {
        self.known(session)?;
        Ok(unnamed())
    }
    fn terminal(&mut self, session: &str, _stream: u64, _data: &str) -> Result<Recorded, GateError> {
        self.known(session)?;
        Ok(unnamed())
    }
    fn detach(&mut self, _session: &str, _stream: u64, _attachment: u32) -> Result<(), GateError> {
        Ok(())
    }
    fn abort(&mut self, _session: &str, _stream: u64) -> Result<(), GateError> {
        Ok(())
    }
    fn abort_request(&mut self, _session: &str, _id: &RequestId) -> Result<bool, GateError> {
        Ok(false)
    }
    fn poll(
        &mut self,
        _session: &str,
        _stream: u64,
        _attachment: u32,
        _after: u64,
    ) -> Result<Polled, GateError> {
        Ok(Polled { events: Vec::new(), done: true, stranded: Vec::new() })
    }
    fn renew_lease(&mut self, _session: &str, _stream: u64) -> Result<(), GateError> {
        Ok(())
    }
    fn reconnect(&mut self, session: &str, _cursor: &[u8], origin: &Origin) -> Result<Decision, GateError> {
        let opened = self.open_stream(session, origin)?;
        Ok(Decision::Fresh(FreshStart { reason: StaleReason::Unknown, opened, stranded: Vec::new() }))
    }
}
