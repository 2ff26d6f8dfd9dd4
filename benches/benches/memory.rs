//! Workload 6: memory under an event flood at the configured bounds. Every stream of every
//! session gets twice what its byte bound holds, so the buffers sit at their bounds and evict;
//! then what is held is compared with what the bounds allow: the payload bytes the store
//! holds, the process's resident-size growth (native core), and the component's linear memory.
//!
//! `cargo bench --bench memory` floods 100 sessions × 10 streams × 64 KiB and writes
//! `memory.json` for the report (into `$BENCH_OUT_DIR`, default `target/bench`); `cargo test --bench memory` floods a smaller
//! set and checks the bounds hold on both sides.

use anyhow::{Result, ensure};
use resume_gate::{Config, Origin, RequestId};
use tests::drivers::{Driver, GateApi, InProcess, Wasm};

const PAYLOAD: usize = 1024;
const BYTES_PER_STREAM: u64 = 64 << 10;

fn flood(gate: &mut dyn Driver, sessions: usize, streams: usize) -> Result<()> {
    let data = "x".repeat(PAYLOAD);
    let per_stream = 2 * BYTES_PER_STREAM as usize / PAYLOAD;
    for s in 0..sessions {
        let session = format!("flood-session-{s}");
        gate.open_session(&session).unwrap();
        for r in 0..streams {
            let opened = gate.open_stream(&session, &Origin::Request(RequestId::Number(r as i64))).unwrap();
            for _ in 0..per_stream {
                gate.emit(&session, opened.stream, &data).unwrap();
            }
            gate.detach(&session, opened.stream, opened.attachment).unwrap();
        }
    }
    Ok(())
}

/// Resident set size of this process, from `/proc/self/statm`.
fn resident_bytes() -> Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm.split_whitespace().nth(1).unwrap_or("0").parse()?;
    Ok(pages * 4096)
}

fn main() -> Result<()> {
    let full = std::env::args().any(|a| a == "--bench");
    let (sessions, streams) = if full { (100, 10) } else { (10, 4) };
    let config = Config {
        max_events_per_stream: 4096,
        max_bytes_per_stream: BYTES_PER_STREAM,
        max_streams_per_session: 64,
        ..Config::default()
    };
    let bound = (sessions * streams) as u64 * BYTES_PER_STREAM;

    let before = resident_bytes()?;
    let mut native = InProcess::with_config(config.clone()).expect("valid config");
    flood(&mut native, sessions, streams)?;
    let native_rss_growth = resident_bytes()?.saturating_sub(before);
    let held = native.gate.store().stats();
    ensure!(
        held.most_bytes_in_a_stream <= BYTES_PER_STREAM,
        "a native stream holds {} bytes",
        held.most_bytes_in_a_stream
    );
    ensure!(held.bytes <= bound, "the native store holds {} bytes, bound {bound}", held.bytes);
    drop(native);

    let mut wasm = Wasm::new()?;
    wasm.configure(&config).unwrap();
    let linear_before = wasm.instance.linear_memory_bytes();
    flood(&mut wasm, sessions, streams)?;
    let linear = wasm.instance.linear_memory_bytes();
    ensure!(linear >= linear_before, "linear memory never shrinks");

    let report = serde_json::json!({
        "sessions": sessions,
        "streams_per_session": streams,
        "payload_bytes": PAYLOAD,
        "max_bytes_per_stream": BYTES_PER_STREAM,
        "bound_bytes": bound,
        "native_held_bytes": held.bytes,
        "native_held_events": held.events,
        "native_rss_growth_bytes": native_rss_growth,
        "component_linear_memory_before_bytes": linear_before,
        "component_linear_memory_bytes": linear,
    });
    println!("{report:#}");
    if full {
        benches::write_bench_result("memory.json", &report)?;
    }
    Ok(())
}
