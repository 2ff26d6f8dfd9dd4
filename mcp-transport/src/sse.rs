//! SSE frames as the HTML living standard defines them: one `data:` line per line of the
//! payload, so a JSON message with embedded newlines still arrives whole.

use resume_gate::{Event, Recorded, RequestId};

use crate::jsonrpc;

/// One SSE event: `id`, optional `retry`, the data lines, a blank line. An event without an id
/// (a server running without the gate) gets no `id` line, and one without data either is
/// nothing at all.
pub fn frame(event: &Event) -> String {
    write(&event.id, event.retry_ms, &event.data)
}

/// The frame of an event just recorded with `data`.
pub fn recorded(event: &Recorded, data: &str) -> String {
    write(&event.id, None, data)
}

fn write(id: &str, retry_ms: Option<u32>, data: &str) -> String {
    let mut out = String::with_capacity(data.len() + id.len() + 32);
    if id.is_empty() && data.is_empty() {
        return out;
    }
    if !id.is_empty() {
        out.push_str("id: ");
        out.push_str(id);
        out.push('\n');
    }
    if let Some(retry) = retry_ms {
        out.push_str(&format!("retry: {retry}\n"));
    }
    if data.is_empty() {
        out.push_str("data: \n");
    }
    for line in data.split_terminator('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    out.push('\n');
    out
}

/// A frame without an id: a stateless-era stream's events, which nothing resumes.
pub fn unnamed(data: &str) -> String {
    write("", None, data)
}

/// A frame without an id answering request `id` with `-32001`: its result was lost with its
/// stream (evicted, expired, its writer gone, its state vanished).
pub fn stranded(id: &RequestId) -> String {
    write("", None, &jsonrpc::result_lost(id))
}

/// A frame with only a `retry` field: tells a client when to poll again (SEP-1699).
pub fn retry_only(ms: u32) -> String {
    format!("retry: {ms}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(data: &str, retry_ms: Option<u32>) -> Event {
        Event { id: "rg1.x".into(), stream: 1, seq: 0, data: data.into(), retry_ms, terminal: false }
    }

    #[test]
    fn a_priming_event_has_an_id_an_empty_data_line_and_the_retry_hint() {
        assert_eq!(frame(&event("", Some(500))), "id: rg1.x\nretry: 500\ndata: \n\n");
    }

    #[test]
    fn every_payload_line_gets_its_own_data_field() {
        assert_eq!(frame(&event("{\"a\":\n1}", None)), "id: rg1.x\ndata: {\"a\":\ndata: 1}\n\n");
    }

    #[test]
    fn a_recorded_event_is_written_from_its_id_and_the_hosts_data() {
        let event = Recorded { id: "rg1.y".into(), seq: 3 };
        assert_eq!(recorded(&event, "{\"a\":\n1}"), "id: rg1.y\ndata: {\"a\":\ndata: 1}\n\n");
        let unnamed = Recorded { id: String::new(), seq: 0 };
        assert_eq!(recorded(&unnamed, "{}"), "data: {}\n\n", "without the gate: no id line");
    }

    #[test]
    fn without_the_gate_events_have_no_id_line_and_priming_is_nothing() {
        let plain = |data: &str| Event { id: String::new(), ..event(data, None) };
        assert_eq!(frame(&plain("{}")), "data: {}\n\n");
        assert_eq!(frame(&plain("")), "");
    }
}
