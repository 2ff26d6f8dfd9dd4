//! `report`: the last step of `benches/run`. Reads one run's measurements and writes
//! BENCHMARKS.md and its SVG chart, so the numbers in the repository are always the numbers of
//! one run, side by side, never hand-copied.
//!
//! `report --criterion target/criterion [--harness node.json]... [--memory memory.json] [--e2e e2e.json] [--redis redis.md]
//!  [--packages packages.md]
//!  --wasm gate.wasm [--wasm-kv gate-kv.wasm]
//!  --about about.txt --analysis benches/analysis.md --chart benches/reconnect.svg
//!  --out BENCHMARKS.md`

mod chart;
mod report;
mod results;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

fn main() -> Result<()> {
    let mut criterion = None;
    let mut harness = Vec::new();
    let (mut wasm, mut about, mut analysis, mut chart, mut out) = (None, None, None, None, None);
    let (mut memory, mut e2e, mut wasm_kv, mut redis, mut packages) = (None, None, None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().with_context(|| format!("{flag} needs a value"))?;
        let slot = match flag.as_str() {
            "--criterion" => &mut criterion,
            "--harness" => {
                harness.push(PathBuf::from(value));
                continue;
            }
            "--wasm" => &mut wasm,
            "--wasm-kv" => &mut wasm_kv,
            "--memory" => &mut memory,
            "--e2e" => &mut e2e,
            "--redis" => &mut redis,
            "--packages" => &mut packages,
            "--about" => &mut about,
            "--analysis" => &mut analysis,
            "--chart" => &mut chart,
            "--out" => &mut out,
            _ => bail!("unknown flag {flag}"),
        };
        *slot = Some(PathBuf::from(value));
    }
    let need = |p: Option<PathBuf>, flag: &str| p.with_context(|| format!("{flag} is required"));
    let (criterion, wasm, chart, out) = (
        need(criterion, "--criterion")?,
        need(wasm, "--wasm")?,
        need(chart, "--chart")?,
        need(out, "--out")?,
    );

    let mut results = results::Results::default();
    results.add_criterion(&criterion)?;
    for path in &harness {
        results.add_harness_json(path)?;
    }
    chart::reconnect_vs_buffered(&results, &chart)?;
    let read = |p: &Option<PathBuf>| -> Result<String> {
        p.as_ref().map_or(Ok(String::new()), |p| {
            std::fs::read_to_string(p).with_context(|| p.display().to_string())
        })
    };
    let text = report::markdown(&report::Inputs {
        results: &results,
        about: &read(&about)?,
        component_bytes: file_len(&wasm)?,
        component_kv_bytes: wasm_kv.as_deref().map(file_len).transpose()?,
        chart: &relative(&chart, &out),
        analysis: &read(&analysis)?,
        memory: memory.as_ref().map(|p| results::Memory::read(p)).transpose()?,
        e2e: e2e.as_ref().map(|p| results::EndToEnd::read(p)).transpose()?,
        redis: &read(&redis)?,
        packages: &read(&packages)?,
    });
    std::fs::write(&out, text).with_context(|| out.display().to_string())?;
    eprintln!("wrote {} and {}", out.display(), chart.display());
    Ok(())
}

/// `chart` as a link from the directory `out` lives in.
fn relative(chart: &Path, out: &Path) -> String {
    let base = out.parent().unwrap_or(Path::new(""));
    chart.strip_prefix(base).unwrap_or(chart).display().to_string()
}

fn file_len(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path).with_context(|| path.display().to_string())?.len())
}
