//! BENCHMARKS.md: every workload × side with medians and the ratio to the native core, then
//! the targets with where we stand. Only numbers from this run; the prose that
//! explains them is a committed file the report appends.

use std::fmt::Write;

use crate::results::{EndToEnd, Memory, Results, Spread, Workload};

/// The end-to-end sides, as the bench names them.
const GATED: &str = "host-example";
const UNGATED: &str = "host-example, no gate";
const EDGE: &str = "edge-host";
const TS_SERVER: &str = "ts-sdk server";

pub struct Inputs<'a> {
    pub results: &'a Results,
    pub about: &'a str,
    pub component_bytes: u64,
    /// World `gate-kv`, when the run names it.
    pub component_kv_bytes: Option<u64>,
    pub chart: &'a str,
    pub analysis: &'a str,
    pub memory: Option<Memory>,
    pub e2e: Option<EndToEnd>,
    /// Section 7 as the Redis bench wrote it (its own tables), empty when not run.
    pub redis: &'a str,
    /// Section 8, the Node and Python packages' per-call table (markdown), if measured.
    pub packages: &'a str,
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
        .chain(
            [
                ("one `tools/call`: open, terminal, detach, in a full session", false),
                ("the same, caches cold (4 MiB written before each call)", true),
            ]
            .map(|(label, cold)| (label.to_owned(), Workload::Call { cold })),
        )
        .collect();
    section(&mut out, "1. `on-emit`, and one call's gate work", &sides, r, &emit_rows);

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

    out.push_str(&e2e_section(i.e2e.as_ref()));
    match &i.memory {
        None => {
            let _ = writeln!(out, "### 6. Memory under an event flood\n\nNot measured in this run.\n");
        }
        Some(m) => out.push_str(&memory_section(m)),
    }
    if i.redis.is_empty() {
        let _ = writeln!(out, "### 7. On Redis\n\nNot measured in this run.\n");
    } else {
        out.push_str(i.redis.trim_end());
        out.push_str("\n\n");
    }
    if i.packages.is_empty() {
        let _ = writeln!(out, "### 8. In the SDK packages\n\nNot measured in this run.\n");
    } else {
        out.push_str(i.packages.trim_end());
        out.push_str("\n\n");
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
        goal: "component `on-emit` ≤ 1.5× native",
        measured: ratios.iter().map(|(p, x)| format!("{x:.1}× at {p} B")).collect::<Vec<_>>().join(", "),
        met: (!ratios.is_empty()).then(|| ratios.iter().all(|(_, x)| *x <= 1.5)),
    });
    let resume_ratio = resume(COMPONENT, 10_000).zip(resume(LIMIT, 10_000)).map(|(c, n)| c / n);
    list.push(Target {
        goal: "component resume (k=10, 10⁴ buffered) ≤ 1.5× native",
        measured: resume_ratio.map(|x| format!("{x:.1}×")).unwrap_or_default(),
        met: resume_ratio.map(|x| x <= 1.5),
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
        goal: "component ≤ 100 KB (release, world `gate-memory`)",
        measured: format!("{} bytes ({:.1} KB)", i.component_bytes, i.component_bytes as f64 / 1000.0),
        met: Some(i.component_bytes <= 100_000),
    });
    for (side, goal) in [
        (COMPONENT, "per-request instance ready in ≤ 20 µs (pooling allocator, `gate-memory`)"),
        ("component+kv", "per-request instance ready in ≤ 20 µs (pooling allocator, `gate-kv`)"),
    ] {
        let ready = r.get(&Workload::Instantiate("pooling".into()), side);
        list.push(Target {
            goal,
            measured: ready.map(duration).unwrap_or_default(),
            met: ready.map(|ns| ns <= 20_000.0),
        });
    }
    list.extend(e2e_targets(i.e2e.as_ref()));
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

/// The targets of the end-to-end workload: kept-alive latency and throughput against the
/// TypeScript SDK's server, and the gate's share of a call.
fn e2e_targets(e: Option<&EndToEnd>) -> Vec<Target> {
    let client_p50 = |side: &str| e.and_then(|e| e.client(side)).map(|r| r.p50_us);
    let rate = |side: &str, n: u64| e.and_then(|e| e.load(side, n)).map(|r| r.calls_per_s);
    let mut list = Vec::new();

    let vs_ts = client_p50(GATED).zip(client_p50(TS_SERVER));
    list.push(Target {
        goal: "official TS client: host-example p50 ≤ ⅓ of the TS SDK server's",
        measured: vs_ts
            .map(|(ours, ts)| {
                format!("{} vs {} ({:.2}×)", duration(ours * 1e3), duration(ts * 1e3), ours / ts)
            })
            .unwrap_or_default(),
        met: vs_ts.map(|(ours, ts)| ours * 3.0 <= ts),
    });
    let speedups: Vec<(u64, f64)> =
        [32, 256].into_iter().filter_map(|n| Some((n, rate(GATED, n)? / rate(TS_SERVER, n)?))).collect();
    list.push(Target {
        goal: "keep-alive throughput ≥ 4× the TS SDK server's at 32 and at 256 sessions (host-example)",
        measured: speedups.iter().map(|(n, x)| format!("{x:.1}× at {n}")).collect::<Vec<_>>().join(", "),
        met: (speedups.len() == 2).then(|| speedups.iter().all(|(_, x)| *x >= 4.0)),
    });
    let growth = rate(GATED, 256).zip(rate(GATED, 32));
    list.push(Target {
        goal: "no throughput drop from 32 to 256 sessions (host-example; ≥ 95 %, the run-to-run noise)",
        measured: growth
            .map(|(a, b)| format!("{a:.0} vs {b:.0} calls/s ({:.2}×)", a / b))
            .unwrap_or_default(),
        met: growth.map(|(a, b)| a >= 0.95 * b),
    });
    let edge = client_p50(EDGE);
    list.push(Target {
        goal: "official TS client: edge-host p50 ≤ 5 ms (in-process store)",
        measured: edge.map(|us| duration(us * 1e3)).unwrap_or_default(),
        met: edge.map(|us| us <= 5_000.0),
    });
    let shares = gate_shares(e);
    list.push(Target {
        goal: "gate overhead ≤ 3 % of p50 `tools/call` latency in host-example (kept alive)",
        measured: shares
            .iter()
            .map(|(how, s)| format!("{:.1} % ({how})", s * 100.0))
            .collect::<Vec<_>>()
            .join(", "),
        met: (!shares.is_empty()).then(|| shares.iter().all(|(_, s)| *s <= 0.03)),
    });
    list
}

/// (p50 with the gate − p50 without) / p50 with the gate: with the official client, and under
/// the load generator with one session.
fn gate_shares(e: Option<&EndToEnd>) -> Vec<(&'static str, f64)> {
    let Some(e) = e else { return Vec::new() };
    let share = |with: f64, without: f64| (with - without) / with;
    let client = e
        .client(GATED)
        .zip(e.client(UNGATED))
        .map(|(a, b)| ("official TS client", share(a.p50_us, b.p50_us)));
    let load =
        e.load(GATED, 1).zip(e.load(UNGATED, 1)).map(|(a, b)| ("load, 1 session", share(a.p50_us, b.p50_us)));
    client.into_iter().chain(load).collect()
}

/// How a server side is shown: the SDK servers and the Spin app by their full names.
fn server(side: &str) -> String {
    match side {
        TS_SERVER => "TypeScript SDK reference server (its example event store)".to_owned(),
        "py-sdk server" => "Python SDK server (uvicorn; no event store in the package)".to_owned(),
        EDGE => "edge-host (the Spin app)".to_owned(),
        other => other.to_owned(),
    }
}

fn e2e_section(e: Option<&EndToEnd>) -> String {
    let mut out = String::from(
        "### 5. `tools/call` end to end, connections kept alive

",
    );
    let Some(e) = e else {
        out.push_str(
            "Not measured in this run.

",
        );
        return out;
    };
    let _ = writeln!(
        out,
        "Every call is `tools/call {}` (its result is ready at once) over HTTP/1.1 on loopback, the \
         connection kept alive as real clients keep it; the servers take turns, a round each. \
         \"Nagle on\" leaves Nagle's algorithm on (no `TCP_NODELAY`), as Spin may: only the front's own \
         write coalescing keeps those calls from waiting for delayed ACKs.\n",
        e.tool
    );
    let ts = e.client(TS_SERVER).map(|r| r.p50_us);
    out.push_str(
        "The official TypeScript client (`@modelcontextprotocol/sdk` 1.32.2, undici), sequential calls:\n\n",
    );
    out.push_str(
        "| server | calls | p50 | p99 | p50 × the TS SDK server's |\n| --- | ---: | ---: | ---: | ---: |\n",
    );
    for r in &e.client {
        let vs = ts.map_or("—".to_owned(), |ts| format!("{:.2}×", r.p50_us / ts));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {vs} |",
            server(&r.side),
            r.calls,
            duration(r.p50_us * 1e3),
            duration(r.p99_us * 1e3)
        );
    }
    let levels = e.levels();
    let _ = write!(
        out,
        "\nKeep-alive load: each session on its own connection with its own request ids, calling back \
         to back for {:.0} s per cell; calls/s (p50, p99):\n\n| server |",
        e.load_seconds
    );
    for n in &levels {
        let _ = write!(out, " {n} session{} |", if *n == 1 { "" } else { "s" });
    }
    out.push_str("\n| --- |");
    out.push_str(&" ---: |".repeat(levels.len()));
    out.push('\n');
    let mut sides: Vec<&str> = e.load.iter().map(|r| r.side.as_str()).collect();
    sides.dedup();
    for side in sides {
        let _ = write!(out, "| {} |", server(side));
        for n in &levels {
            let cell = e.load(side, *n).map_or("—".to_owned(), |r| {
                format!("{:.0} ({}, {})", r.calls_per_s, duration(r.p50_us * 1e3), duration(r.p99_us * 1e3))
            });
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out.push('\n');
    for (how, share) in gate_shares(Some(e)) {
        let _ = writeln!(out, "The gate's share of the p50 of a call ({how}): {:.1} %.", share * 100.0);
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
    use crate::results::{ClientRow, LoadRow};

    fn results(rows: &[(Workload, &str, f64)]) -> Results {
        let mut r = Results::default();
        for (w, side, ns) in rows {
            r.0.entry(w.clone()).or_default().insert((*side).to_owned(), *ns);
        }
        r
    }

    fn inputs(r: &Results) -> Inputs<'_> {
        Inputs {
            results: r,
            about: "",
            component_bytes: 1,
            component_kv_bytes: None,
            chart: "c.svg",
            analysis: "",
            memory: None,
            e2e: None,
            redis: "",
            packages: "",
        }
    }

    fn render(r: &Results, bytes: u64) -> String {
        markdown(&Inputs { component_bytes: bytes, ..inputs(r) })
    }

    #[test]
    fn ratios_are_to_native_in_the_same_row() {
        let one = Workload::Emit { spread: Spread::OneStream, payload: 128 };
        let md = render(&results(&[(one.clone(), "native", 1000.0), (one, "component", 3000.0)]), 1);
        assert!(md.contains("| one stream, 128 B | 1.00 µs | 3.00 µs (3.0×) |"), "{md}");
        assert!(md.contains("| component `on-emit` ≤ 1.5× native | 3.0× at 128 B | **missed** |"), "{md}");
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
        let md = render(&r, 100_000);
        assert!(md.contains("≤ 1.3× at 10² (native) | 1.20× | met |"), "{md}");
        assert!(md.contains("≤ 1.3× at 10² (component) | 1.50× | **missed** |"), "{md}");
        assert!(
            md.contains(
                "| component ≤ 100 KB (release, world `gate-memory`) | 100000 bytes (100.0 KB) | met |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| gate overhead ≤ 3 % of p50 `tools/call` latency in host-example (kept alive) | — | not measured |"
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

    #[test]
    fn the_kept_alive_targets_compare_host_example_with_the_ts_sdk_server_in_the_same_run() {
        let client = |side: &str, p50_us: f64| ClientRow {
            side: side.into(),
            calls: 10,
            p50_us,
            p99_us: p50_us * 2.0,
        };
        let load = |side: &str, sessions: u64, calls_per_s: f64| LoadRow {
            side: side.into(),
            sessions,
            calls_per_s,
            p50_us: 1000.0,
            p99_us: 2000.0,
        };
        let e = EndToEnd {
            tool: "countdown {\"n\":0}".into(),
            load_seconds: 6.0,
            client: vec![
                client(GATED, 1000.0),
                client(UNGATED, 990.0),
                client(EDGE, 6000.0),
                client(TS_SERVER, 3500.0),
            ],
            load: vec![
                load(GATED, 32, 16_000.0),
                load(GATED, 256, 15_000.0),
                load(TS_SERVER, 32, 3_000.0),
                load(TS_SERVER, 256, 3_000.0),
            ],
        };
        let md = markdown(&Inputs { e2e: Some(e), ..inputs(&Results::default()) });
        assert!(
            md.contains("host-example p50 ≤ ⅓ of the TS SDK server's | 1.00 ms vs 3.50 ms (0.29×) | met |"),
            "{md}"
        );
        assert!(
            md.contains("at 32 and at 256 sessions (host-example) | 5.3× at 32, 5.0× at 256 | met |"),
            "{md}"
        );
        assert!(md.contains("| 15000 vs 16000 calls/s (0.94×) | **missed** |"), "{md}");
        assert!(md.contains("edge-host p50 ≤ 5 ms (in-process store) | 6.00 ms | **missed** |"), "{md}");
        assert!(md.contains("| 1.0 % (official TS client) | met |"), "{md}");
        assert!(md.contains("| host-example, no gate | 10 | 990.00 µs | 1.98 ms | 0.28× |"), "{md}");
        assert!(
            md.contains("| host-example | 16000 (1.00 ms, 2.00 ms) | 15000 (1.00 ms, 2.00 ms) |"),
            "{md}"
        );
    }
}
