//! Composition: the front imports `mcp:resume-gate/{types,gate}`, the gate exports them. What
//! neither satisfies (WASI, `wasi:keyvalue`, `wasi:http`) stays an import of the composed
//! component, one import per name, shared by both — as Spin links a component dependency.

use anyhow::Context as _;
use wac_graph::types::Package;
use wac_graph::{CompositionGraph, EncodeOptions};

/// The composed component's bytes.
pub fn compose(front: &[u8], gate: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut graph = CompositionGraph::new();
    let front = Package::from_bytes("resume-gate:spin-front", None, front.to_vec(), graph.types_mut())
        .context("reading the front component")?;
    let front = graph.register_package(front)?;
    let gate = Package::from_bytes("mcp:resume-gate", None, gate.to_vec(), graph.types_mut())
        .context("reading the gate component")?;
    let gate = graph.register_package(gate)?;
    wac_graph::plug(&mut graph, vec![gate], front).context("plugging the gate into the front")?;
    graph.encode(EncodeOptions::default()).context("encoding the composition")
}

/// The front and the gate this crate was built with, composed.
pub fn compose_built() -> anyhow::Result<Vec<u8>> {
    let read = |path: &str| std::fs::read(path).with_context(|| format!("reading {path}"));
    compose(&read(crate::FRONT_WASM)?, &read(crate::GATE_KV_WASM)?)
}
