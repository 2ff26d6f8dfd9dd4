//! BENCHMARKS.md: every workload × side with medians and the ratio to the native core, then
//! the targets with where we stand. Only numbers from this run; the prose that
//! explains them is a committed file the report appends.

use std::fmt::Write;

use crate::results::{EndToEnd, Memory, Results, Spread, Workload};

pub struct Inputs<'a> {
    pub results: &'a Results,
    pub about: &'a str,
    pub component_bytes: u64,
    /// World `gate-kv`, when the run names it.
    pub component_kv_bytes: Option<u64>,
    pub chart: &'a str,
    pub analysis: &'a str,
    pub memory: Option<Memory>,
    pub e2e: Vec<EndToEnd>,
}

const LIMIT: &str = "native";
const COMPONENT: &str = "component";

pub fn markdown(i: &Inputs) -> String {
    let r = i.results;
    let sides = r.sides();
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmarks\n");
    let _ = writeln!(
        out,
        "Written by `benches/run` (see the README); do not edit by hand. Medians per operation; \
         in brackets the ratio to the native core in the same row (the limit). The analysis at \
         the end is `benches/analysis.md`.\n"
    );
    for line in i.about.lines().filter(|l| !l.trim().is_empty()) {
        let _ = writeln!(out, "- {line}");
    }
    let _ = writeln!(out, "\n## Targets\n");
    out.push_str(&targets(i));

    let emit_rows: Vec<(String, Workload)> = [Spread::OneStream, Spread::ManyStreams]
        .into_iter()
        .flat_map(|spread| {
            [128, 4096].into_iter().map(move |payload| {
                let label = match spread {
                    Spread::OneStream => format!("one stream, {payload} B"),
                    Spread::ManyStreams => format!("1 000 streams in 100 sessions, {payload} B"),
                };
                (label, Workload::Emit { spread, payload })
            })
        })
        .collect();
    section(&mut out, "1. `on-emit`", &sides, r, &emit_rows);

    let resume_rows: Vec<(String, Workload)> = [100, 10_000, 1_000_000]
        .into_iter()
        .map(|n| (format!("{} buffered", power_of_ten(n)), Workload::Resume { buffered: n }))
        .collect();
    section(&mut out, "2. `on-reconnect` resuming k = 10 events of 128 B", &sides, r, &resume_rows);
    let _ = writeln!(out, "![reconnect time versus events buffered]({})\n", i.chart);

    let stale_rows = rows_of(r, |w| match w {
        Workload::Stale(reason) => Some(format!("`{reason}`")),
        _ => None,
    });
    section(&mut out, "3. `on-reconnect` with a stale cursor: the cost of saying no", &sides, r, &stale_rows);

    let inst_rows = rows_of(r, |w| match w {
        Workload::Instantiate(a) => Some(format!("`InstancePre`, {a} allocator")),
        _ => None,
    });
    section(&mut out, "4. Per-request instance, ready after its first call", &sides, r, &inst_rows);
    let _ = write!(out, "Component size (release): world `gate-memory` {} bytes", i.component_bytes);
    if let Some(kv) = i.component_kv_bytes {
        let _ = write!(out, ", world `gate-kv` {kv} bytes");
    }
    out.push_str(".\n\n");

    out.push_str(&e2e_section(&i.e2e));
    match &i.memory {
        None => {
            let _ = writeln!(out, "### 6. Memory under an event flood\n\nNot measured in this run.\n");
        }
        Some(m) => out.push_str(&memory_section(m)),
    }

    let _ = writeln!(out, "## Analysis\n");
    out.push_str(i.analysis.trim_end());
    out.push('\n');
    out
}

/// The measured workloads `label` names, with their row labels, in workload order.
fn rows_of(r: &Results, label: impl Fn(&Workload) -> Option<String>) -> Vec<(String, Workload)> {
    r.0.keys().filter_map(|w| Some((label(w)?, w.clone()))).collect()
}

fn section(out: &mut String, title: &str, sides: &[String], r: &Results, rows: &[(String, Workload)]) {
    let present: Vec<&String> =
        sides.iter().filter(|s| rows.iter().any(|(_, w)| r.get(w, s).is_some())).collect();
    if rows.is_empty() || present.is_empty() {
        let _ = writeln!(out, "### {title}\n\nNot measured in this run.\n");
        return;
    }
    let _ = writeln!(out, "### {title}\n");
    let _ = write!(out, "| |");
    for s in &present {
        let _ = write!(out, " {} |", display(s));
    }
    let _ = write!(out, "\n| --- |");
    for _ in &present {
        let _ = write!(out, " ---: |");
    }
    out.push('\n');
    for (label, w) in rows {
        let limit = r.get(w, LIMIT);
        let _ = write!(out, "| {label} |");
        for s in &present {
            let cell = match (r.get(w, s), limit) {
                (None, _) => "—".to_owned(),
                (Some(ns), Some(l)) if s.as_str() != LIMIT => format!("{} ({})", duration(ns), ratio(ns / l)),
                (Some(ns), _) => duration(ns),
            };
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out.push('\n');
}

/// One target: what it asks, what this run measured, whether it holds.
struct Target {
    goal: &'static str,
    measured: String,
    met: Option<bool>,
}

fn targets(i: &Inputs) -> String {
    let r = i.results;
    let emit = |side: &str, payload| r.get(&Workload::Emit { spread: Spread::OneStream, payload }, side);
    let resume = |side: &str, n| r.get(&Workload::Resume { buffered: n }, side);
    let mut list = Vec::new();

    let ratios: Vec<(u32, f64)> =
        [128, 4096].into_iter().filter_map(|p| Some((p, emit(COMPONENT, p)? / emit(LIMIT, p)?))).collect();
    list.push(Target {
        goal: "component `on-emit` ≤ 2× native",
        measured: ratios.iter().map(|(p, x)| format!("{x:.1}× at {p} B")).collect::<Vec<_>>().join(", "),
        met: (!ratios.is_empty()).then(|| ratios.iter().all(|(_, x)| *x <= 2.0)),
    });
    let rate = emit(COMPONENT, 128).map(|ns| 1e9 / ns);
    list.push(Target {
        goal: "≥ 2 M emits/s on one core in wasmtime",
        measured: rate.map(|r| format!("{:.2} M emits/s (128 B)", r / 1e6)).unwrap_or_default(),
        met: rate.map(|r| r >= 2e6),
    });
    for (side, goal) in [
        (LIMIT, "`on-reconnect` at 10⁶ buffered ≤ 1.3× at 10² (native)"),
        (COMPONENT, "`on-reconnect` at 10⁶ buffered ≤ 1.3× at 10² (component)"),
    ] {
        let growth = resume(side, 1_000_000).zip(resume(side, 100)).map(|(a, b)| a / b);
        list.push(Target {
            goal,
            measured: growth.map(|g| format!("{g:.2}×")).unwrap_or_default(),
            met: growth.map(|g| g <= 1.3),
        });
    }
    let ts = r.sides().into_iter().find(|s| s.starts_with("ts-sdk"));
    for (side, goal) in [
        (COMPONENT, "≥ 20× faster than the TS SDK example store at 10⁴ (component in wasmtime)"),
        (
            "component via jco (Node)",
            "≥ 20× faster than the TS SDK example store at 10⁴ (component under jco, same Node process)",
        ),
    ] {
        let speedup = ts.as_deref().and_then(|ts| Some(resume(ts, 10_000)? / resume(side, 10_000)?));
        list.push(Target {
            goal,
            measured: speedup.map(|x| format!("{x:.0}× faster")).unwrap_or_default(),
            met: speedup.map(|x| x >= 20.0),
        });
    }
    list.push(Target {
        goal: "component ≤ 150 KB (release)",
        measured: format!("{} bytes ({:.1} KB)", i.component_bytes, i.component_bytes as f64 / 1000.0),
        met: Some(i.component_bytes <= 150_000),
    });
    let ready = r.get(&Workload::Instantiate("pooling".into()), COMPONENT);
    list.push(Target {
        goal: "per-request instance ready in ≤ 20 µs",
        measured: ready.map(|ns| format!("{} (pooling allocator)", duration(ns))).unwrap_or_default(),
        met: ready.map(|ns| ns <= 20_000.0),
    });
    let shares: Vec<(String, f64)> = gate_shares(&i.e2e);
    list.push(Target {
        goal: "gate overhead ≤ 3 % of p50 `tools/call` latency in host-example",
        measured: shares
            .iter()
            .map(|(tool, s)| format!("{:.1} % (`{tool}`)", s * 100.0))
            .collect::<Vec<_>>()
            .join(", "),
        met: (!shares.is_empty()).then(|| shares.iter().all(|(_, s)| *s <= 0.03)),
    });
    let memory = i.memory.as_ref().map(|m| {
        let of_bound = |used: u64| used as f64 / m.bound_bytes as f64;
        (of_bound(m.native_rss_growth_bytes), of_bound(m.component_linear_memory_bytes))
    });
    list.push(Target {
        goal: "memory within 10 % of the configured bounds",
        measured: memory
            .map(|(native, component)| {
                format!(
                    "native resident growth {native:.2}×, component linear memory {component:.2}× the bounds"
                )
            })
            .unwrap_or_default(),
        met: memory.map(|(native, component)| native <= 1.10 && component <= 1.10),
    });

    let mut out = String::from("| target | this run | |\n| --- | --- | --- |\n");
    for t in list {
        let verdict = match t.met {
            Some(true) => "met",
            Some(false) => "**missed**",
            None => "not measured",
        };
        let measured = if t.measured.is_empty() { "—".to_owned() } else { t.measured };
        let _ = writeln!(out, "| {} | {} | {} |", t.goal, measured, verdict);
    }
    out.push('\n');
    out
}

/// Per tool: (p50 with the gate − p50 without) / p50 with the gate.
fn gate_shares(rows: &[EndToEnd]) -> Vec<(String, f64)> {
    let mut tools: Vec<&str> = rows.iter().map(|r| r.tool.as_str()).collect();
    tools.dedup();
    tools
        .into_iter()
        .filter_map(|tool| {
            let p50 = |mode: &str| rows.iter().find(|r| r.tool == tool && r.mode == mode).map(|r| r.p50_us);
            let (with, without) = (p50("gate")?, p50("no gate")?);
            Some((tool.to_owned(), (with - without) / with))
        })
        .collect()
}

fn e2e_section(rows: &[EndToEnd]) -> String {
    let mut out = String::from("### 5. `tools/call` end to end through host-example\n\n");
    if rows.is_empty() {
        out.push_str("Not measured in this run.\n\n");
        return out;
    }
    out.push_str(
        "One TCP connection per call on loopback, timed until the server closes the SSE response \
         after the result; the two servers take turns, a round of 100 calls each.\n\n",
    );
    out.push_str("| tool | server | calls | p50 | p99 | calls/s (one client) |\n| --- | --- | ---: | ---: | ---: | ---: |\n");
    for r in rows {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {:.0} |",
            r.tool,
            if r.mode == "gate" { "host-example" } else { "host-example `--no-gate`" },
            r.calls,
            duration(r.p50_us * 1e3),
            duration(r.p99_us * 1e3),
            r.calls_per_s
        );
    }
    out.push('\n');
    for (tool, share) in gate_shares(rows) {
        let _ = writeln!(out, "The gate's share of the p50 of `{tool}`: {:.1} %.", share * 100.0);
    }
    out.push('\n');
    out
}

fn memory_section(m: &Memory) -> String {
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / f64::from(1 << 20));
    let ratio = |b: u64| format!("{:.2}×", b as f64 / m.bound_bytes as f64);
    let mut out = String::from("### 6. Memory under an event flood\n\n");
    let _ = writeln!(
        out,
        "{} sessions × {} streams, `max-bytes-per-stream` {}, events of {} B, each stream sent twice \
         its bound: the bounds allow {} of buffered ids and data.\n",
        m.sessions,
        m.streams_per_session,
        mib(m.max_bytes_per_stream),
        m.payload_bytes,
        mib(m.bound_bytes)
    );
    let _ = writeln!(out, "| | bytes | × bound |\n| --- | ---: | ---: |");
    let _ = writeln!(
        out,
        "| native: payload bytes the store holds | {} | {} |",
        mib(m.native_held_bytes),
        ratio(m.native_held_bytes)
    );
    let _ = writeln!(
        out,
        "| native: growth of the process's resident size | {} | {} |",
        mib(m.native_rss_growth_bytes),
        ratio(m.native_rss_growth_bytes)
    );
    let _ = writeln!(
        out,
        "| component: linear memory (before the flood: {}) | {} | {} |\n",
        mib(m.component_linear_memory_before_bytes),
        mib(m.component_linear_memory_bytes),
        ratio(m.component_linear_memory_bytes)
    );
    out
}

/// Column headings: the Rust sides' bench ids say less than their names should.
pub fn display(side: &str) -> &str {
    match side {
        "native" => "native core",
        "component" => "component (wasmtime)",
        "native+kv" => "native core + kv store",
        "component+kv" => "gate-kv component + kv host (wasmtime)",
        other => other,
    }
}

fn ratio(x: f64) -> String {
    if x >= 100.0 { format!("{x:.0}×") } else { format!("{x:.1}×") }
}

pub fn duration(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

pub fn power_of_ten(n: u64) -> String {
    const SUP: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let digits = n.to_string();
    match digits.strip_prefix('1') {
        Some(zeros) if zeros.bytes().all(|b| b == b'0') => {
            format!(
                "10{}",
                zeros.len().to_string().chars().map(|c| SUP[c as usize - '0' as usize]).collect::<String>()
            )
        }
        _ => digits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(rows: &[(Workload, &str, f64)]) -> Results {
        let mut r = Results::default();
        for (w, side, ns) in rows {
            r.0.entry(w.clone()).or_default().insert((*side).to_owned(), *ns);
        }
        r
    }

    fn render(r: &Results, bytes: u64) -> String {
        markdown(&Inputs {
            results: r,
            about: "",
            component_bytes: bytes,
            component_kv_bytes: None,
            chart: "c.svg",
            analysis: "",
            memory: None,
            e2e: Vec::new(),
        })
    }

    #[test]
    fn ratios_are_to_native_in_the_same_row() {
        let one = Workload::Emit { spread: Spread::OneStream, payload: 128 };
        let md = render(&results(&[(one.clone(), "native", 1000.0), (one, "component", 3000.0)]), 1);
        assert!(md.contains("| one stream, 128 B | 1.00 µs | 3.00 µs (3.0×) |"), "{md}");
        assert!(md.contains("| component `on-emit` ≤ 2× native | 3.0× at 128 B | **missed** |"), "{md}");
    }

    #[test]
    fn flat_reconnect_and_size_targets_are_judged_from_the_run() {
        let at = |n| Workload::Resume { buffered: n };
        let r = results(&[
            (at(100), "native", 1000.0),
            (at(1_000_000), "native", 1200.0),
            (at(100), "component", 2000.0),
            (at(1_000_000), "component", 3000.0),
        ]);
        let md = render(&r, 150_000);
        assert!(md.contains("≤ 1.3× at 10² (native) | 1.20× | met |"), "{md}");
        assert!(md.contains("≤ 1.3× at 10² (component) | 1.50× | **missed** |"), "{md}");
        assert!(md.contains("| component ≤ 150 KB (release) | 150000 bytes (150.0 KB) | met |"), "{md}");
        assert!(
            md.contains(
                "| gate overhead ≤ 3 % of p50 `tools/call` latency in host-example | — | not measured |"
            ),
            "{md}"
        );
    }

    #[test]
    fn a_side_that_did_not_run_a_row_shows_a_dash() {
        let at = |n| Workload::Resume { buffered: n };
        let r = results(&[(at(100), "native", 1000.0), (at(10_000), "ts-sdk store", 5e6)]);
        let md = render(&r, 1);
        assert!(md.contains("| 10² buffered | 1.00 µs | — |"), "{md}");
        assert!(md.contains("| 10⁴ buffered | — | 5.00 ms |"), "{md}");
    }
}
