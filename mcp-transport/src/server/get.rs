//! A GET: the session's standalone stream, or, with `Last-Event-ID`, the gate's decision — a
//! resume of exactly the missed events, or a fresh stream (never `404`, never an empty stream
//! that closes at once) with a `-32001` for each request whose result was lost.

use super::*;

impl Server {
    pub(super) fn get(&self, gate: &mut (impl GateApi + ?Sized), req: &HttpRequest, version: &str) -> Reply {
        if let Some(refused) = Self::require_sse(req, None) {
            return refused;
        }
        let session = match Self::session_id(req) {
            Ok(s) => s,
            Err(refused) => return Reply::Plain(refused),
        };
        let Some(cursor) = req.header(LAST_EVENT_ID_HEADER) else {
            return match gate.open_stream(&session, &Origin::Standalone) {
                Ok(opened) => Reply::Stream(self.new_stream(&session, &opened, version, None)),
                Err(e) => gate_error_reply(&e, None),
            };
        };
        match gate.reconnect(&session, cursor, &Origin::Standalone) {
            Ok(Decision::Resume(r)) => {
                let mut frames: Vec<String> = r.events.iter().map(sse::frame).collect();
                let follow_after = r.events.last().map_or(r.cursor_seq, |e| e.seq);
                let decision = DecisionLog {
                    resumed: true,
                    reason: None,
                    replayed: frames.len(),
                    stranded: r.stranded.clone(),
                };
                // Its writer is gone: what it stored, then the error, instead of a wait.
                frames.extend(r.stranded.iter().map(sse::stranded));
                Reply::Stream(Stream {
                    session,
                    resumable: true,
                    farewell: None,
                    stream: r.stream,
                    attachment: r.attachment,
                    frames,
                    follow_after,
                    close: r.includes_terminal || !r.stranded.is_empty(),
                    calls: Vec::new(),
                    cancels: Vec::new(),
                    decision: Some(decision),
                })
            }
            Ok(Decision::Fresh(f)) => {
                let decision = DecisionLog {
                    resumed: false,
                    reason: Some(f.reason),
                    replayed: 0,
                    stranded: f.stranded.clone(),
                };
                let mut stream = self.new_stream(&session, &f.opened, version, Some(decision));
                // Never an empty stream that closes at once: the fresh stream stays open, and a
                // request whose result was lost gets an error instead of silence.
                for lost in &f.stranded {
                    let error = jsonrpc::result_lost(lost);
                    if let Ok(event) = gate.emit(&session, f.opened.stream, &error) {
                        stream.frames.push(sse::recorded(&event, &error));
                        stream.follow_after = event.seq;
                    }
                }
                Reply::Stream(stream)
            }
            Err(e) => gate_error_reply(&e, None),
        }
    }
}
