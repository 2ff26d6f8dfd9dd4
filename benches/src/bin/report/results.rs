//! One run's measurements, read from wherever each side wrote them: criterion's result tree
//! for the Rust sides, the Node harness's JSON for the TypeScript SDK's store and the component
//! under jco. Workloads are named once here, so every side lands in the same table row.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Spread {
    OneStream,
    /// 1 000 streams in 100 sessions, round-robin.
    ManyStreams,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Workload {
    Emit {
        spread: Spread,
        payload: u32,
    },
    /// A resume replaying 10 events of 128 B, with this many events buffered.
    Resume {
        buffered: u64,
    },
    /// A reconnect that comes out fresh for this reason.
    Stale(String),
    /// A per-request instance from `InstancePre`, with this allocator.
    Instantiate(String),
    /// The gate's work for one `tools/call` whose result is ready at once (open, terminal,
    /// detach) in a session at `max-streams-per-session`; `cold`: after other work filled the
    /// caches.
    Call {
        cold: bool,
    },
}

/// Median nanoseconds per operation, by workload, then by side.
#[derive(Default, Debug)]
pub struct Results(pub BTreeMap<Workload, BTreeMap<String, f64>>);

impl Results {
    pub fn get(&self, workload: &Workload, side: &str) -> Option<f64> {
        self.0.get(workload)?.get(side).copied()
    }

    fn add(&mut self, workload: Workload, side: &str, median_ns: f64) {
        self.0.entry(workload).or_default().insert(side.to_owned(), median_ns);
    }

    /// Every `*/new/benchmark.json` under criterion's output directory, with its median.
    pub fn add_criterion(&mut self, dir: &Path) -> Result<()> {
        #[derive(Deserialize)]
        struct Id {
            group_id: String,
            function_id: Option<String>,
            value_str: Option<String>,
        }
        #[derive(Deserialize)]
        struct Estimates {
            median: Estimate,
        }
        #[derive(Deserialize)]
        struct Estimate {
            point_estimate: f64,
        }
        for path in files_named(dir, "benchmark.json")? {
            let new = path.parent().expect("a file has a parent");
            if !new.ends_with("new") {
                continue;
            }
            let id: Id = read_json(&path)?;
            let estimates: Estimates = read_json(&new.join("estimates.json"))?;
            let function = id.function_id.unwrap_or_default();
            let value = id.value_str.unwrap_or_default();
            let (workload, side) = match criterion_workload(&id.group_id, &function, &value) {
                Some(found) => found,
                None => bail!("a benchmark this report does not know: {}", path.display()),
            };
            self.add(workload, &side, estimates.median.point_estimate);
        }
        Ok(())
    }

    /// The Node harness's output: `[{side, workload, median_ns, ...}]`.
    pub fn add_harness_json(&mut self, path: &Path) -> Result<()> {
        #[derive(Deserialize)]
        struct Row {
            side: String,
            workload: String,
            median_ns: f64,
        }
        let rows: Vec<Row> = read_json(path)?;
        for row in rows {
            let workload = harness_workload(&row.workload)
                .with_context(|| format!("{}: unknown workload {}", path.display(), row.workload))?;
            self.add(workload, &row.side, row.median_ns);
        }
        Ok(())
    }

    /// Every side that measured anything, in the order the tables show them.
    pub fn sides(&self) -> Vec<String> {
        let mut sides: Vec<String> = self.0.values().flat_map(|m| m.keys().cloned()).collect();
        sides.sort_by_key(|s| (side_rank(s), s.clone()));
        sides.dedup();
        sides
    }
}

/// The limit first, then the component, then everything else.
fn side_rank(side: &str) -> usize {
    const RUST_SIDES: [&str; 4] = ["native", "component", "native+kv", "component+kv"];
    RUST_SIDES.iter().position(|s| *s == side).unwrap_or(RUST_SIDES.len())
}

fn criterion_workload(group: &str, function: &str, value: &str) -> Option<(Workload, String)> {
    let payload = |rest: &str| rest.strip_suffix(" B")?.parse().ok();
    if let Some(rest) = group.strip_prefix("emit/one stream/") {
        let workload = Workload::Emit { spread: Spread::OneStream, payload: payload(rest)? };
        return Some((workload, function.to_owned()));
    }
    if let Some(rest) = group.strip_prefix("emit/1000 streams in 100 sessions/") {
        let workload = Workload::Emit { spread: Spread::ManyStreams, payload: payload(rest)? };
        return Some((workload, function.to_owned()));
    }
    match group {
        "resume k=10/128 B" => {
            Some((Workload::Resume { buffered: value.parse().ok()? }, function.to_owned()))
        }
        "stale" => Some((Workload::Stale(value.to_owned()), function.to_owned())),
        "instantiate" => Some((Workload::Instantiate(value.to_owned()), function.to_owned())),
        "call/open, terminal, detach" => Some((Workload::Call { cold: false }, function.to_owned())),
        "call/open, terminal, detach, caches cold" => {
            Some((Workload::Call { cold: true }, function.to_owned()))
        }
        _ => None,
    }
}

fn harness_workload(id: &str) -> Option<Workload> {
    let parts: Vec<&str> = id.split('/').collect();
    match parts.as_slice() {
        ["emit", "one-stream", p] => {
            Some(Workload::Emit { spread: Spread::OneStream, payload: p.parse().ok()? })
        }
        ["emit", "1000-streams-100-sessions", p] => {
            Some(Workload::Emit { spread: Spread::ManyStreams, payload: p.parse().ok()? })
        }
        ["resume-k10", "128", n] => Some(Workload::Resume { buffered: n.parse().ok()? }),
        // The SDK store's "no": an id it never issued, the row of the gate's `unknown`.
        ["stale", "unknown-id"] => Some(Workload::Stale("unknown".into())),
        ["stale", reason] => Some(Workload::Stale((*reason).to_owned())),
        _ => None,
    }
}

/// Workload 6, as the memory bench wrote it.
#[derive(Deserialize, Debug)]
pub struct Memory {
    pub sessions: u64,
    pub streams_per_session: u64,
    pub payload_bytes: u64,
    pub max_bytes_per_stream: u64,
    pub bound_bytes: u64,
    pub native_held_bytes: u64,
    pub native_rss_growth_bytes: u64,
    pub component_linear_memory_before_bytes: u64,
    pub component_linear_memory_bytes: u64,
}

impl Memory {
    pub fn read(path: &Path) -> Result<Self> {
        read_json(path)
    }
}

/// Workload 5 as the end-to-end bench wrote it: the official TypeScript client's sequential
/// calls, and the keep-alive load at each number of sessions, per server.
#[derive(Deserialize, Debug, Clone)]
pub struct EndToEnd {
    /// The call every request makes, e.g. `countdown {"n":0}`.
    pub tool: String,
    /// Measured seconds per load cell, all rounds together.
    pub load_seconds: f64,
    pub client: Vec<ClientRow>,
    pub load: Vec<LoadRow>,
}

#[derive(Deserialize, Debug, Clone)]
pub struct ClientRow {
    pub side: String,
    pub calls: u64,
    pub p50_us: f64,
    pub p99_us: f64,
}

#[derive(Deserialize, Debug, Clone)]
pub struct LoadRow {
    pub side: String,
    pub sessions: u64,
    pub calls_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

impl EndToEnd {
    pub fn read(path: &Path) -> Result<Self> {
        read_json(path)
    }

    pub fn client(&self, side: &str) -> Option<&ClientRow> {
        self.client.iter().find(|r| r.side == side)
    }

    pub fn load(&self, side: &str, sessions: u64) -> Option<&LoadRow> {
        self.load.iter().find(|r| r.side == side && r.sessions == sessions)
    }

    /// The numbers of sessions measured, in order.
    pub fn levels(&self) -> Vec<u64> {
        let mut levels: Vec<u64> = self.load.iter().map(|r| r.sessions).collect();
        levels.sort_unstable();
        levels.dedup();
        levels
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn files_named(dir: &Path, name: &str) -> Result<Vec<std::path::PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|n| n == name) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}
