//! `/metrics`: the gate's counters and the server's own, in the Prometheus text format.
//!
//! Off by default (`--metrics` turns it on): the page tells anyone who can reach the port how
//! busy the server is. The format is a handful of `# HELP` / `# TYPE` lines and samples, so it
//! is written here rather than through a metrics registry.

use std::fmt::Write;

use resume_gate::{Counters, StaleReason};

/// What one scrape reports.
pub struct Snapshot {
    pub counters: Counters,
    /// HTTP requests to `/mcp` since start.
    pub requests: u64,
    /// SSE responses attached to this process now.
    pub live_streams: usize,
    /// The gate's memory (its instance's linear memory), when the host can tell.
    pub memory_bytes: Option<usize>,
    /// `max-total-bytes`: what the gate may keep.
    pub budget_bytes: u64,
}

/// The exposition format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

pub fn render(s: &Snapshot) -> String {
    let c = &s.counters;
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(&str, u64)]| {
        let _ = writeln!(out, "# HELP resume_gate_{name} {help}\n# TYPE resume_gate_{name} {kind}");
        for (labels, value) in samples {
            let _ = writeln!(out, "resume_gate_{name}{labels} {value}");
        }
    };
    metric("requests_total", "counter", "HTTP requests to /mcp.", &[("", s.requests)]);
    metric(
        "live_streams",
        "gauge",
        "SSE responses attached to this process.",
        &[("", s.live_streams as u64)],
    );
    metric("sessions", "gauge", "Sessions the gate holds.", &[("", c.sessions)]);
    metric("events_emitted_total", "counter", "Events the gate minted ids for.", &[("", c.events_emitted)]);
    metric("resumes_total", "counter", "Reconnects that resumed a stream.", &[("", c.resumes)]);
    metric("events_replayed_total", "counter", "Events replayed by resumes.", &[("", c.events_replayed)]);
    let labels: Vec<String> =
        StaleReason::ALL.iter().map(|r| format!("{{reason=\"{}\"}}", r.as_str())).collect();
    let fresh: Vec<(&str, u64)> =
        StaleReason::ALL.iter().zip(&labels).map(|(r, l)| (l.as_str(), c.fresh_for(*r))).collect();
    metric("fresh_total", "counter", "Reconnects that started a fresh stream, by reason.", &fresh);
    metric(
        "evicted_events_total",
        "counter",
        "Events dropped from a buffer to keep a bound.",
        &[("", c.evicted_events)],
    );
    metric("expired_streams_total", "counter", "Streams aborted past retention.", &[("", c.expired_streams)]);
    metric(
        "reclaimed_sessions_total",
        "counter",
        "Idle sessions reclaimed for new ones.",
        &[("", c.reclaimed_sessions)],
    );
    metric("errors_total", "counter", "Gate calls that returned an error.", &[("", c.errors)]);
    if let Some(bytes) = s.memory_bytes {
        metric("memory_bytes", "gauge", "Memory the gate's state occupies.", &[("", bytes as u64)]);
    }
    metric(
        "memory_budget_bytes",
        "gauge",
        "What the gate may keep (max-total-bytes).",
        &[("", s.budget_bytes)],
    );
    out
}
