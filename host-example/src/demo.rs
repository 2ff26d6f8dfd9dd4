//! `host-example demo`: plays the seed scenario (`shared/spec/seed-stale-cursor.md`) through
//! the real component in wasmtime and prints each decision of the gate with its reason.

use anyhow::{Result, anyhow, bail};
use gate_host::memory::types::{Decision, Event, GateError, Origin, RequestId, StaleReason};
use gate_host::memory::{self, Exports, MemoryWorld, State};
use gate_host::supervised::DEFAULT_MEMORY_LIMIT;
use wasmtime_wasi::WasiCtx;

pub fn run() -> Result<()> {
    let pre = memory::prepare(&wasmtime::Engine::default(), gate_host::GATE_MEMORY_WASM)?;
    let mut world = MemoryWorld::new(&pre, WasiCtx::builder().build(), DEFAULT_MEMORY_LIMIT)?;
    println!("gate component: {}", gate_host::GATE_MEMORY_WASM);
    let (gate, store) = world.exports();

    let session = "demo-session";
    let epoch = ok(gate.call_open_session(&mut *store, session)?)?.epoch;
    println!("\nsession {session} opened, epoch {epoch:016x}");

    println!("\n1. POST tools/call (id 1, `append`): the gate opens a stream");
    let opened = ok(gate.call_open_stream(&mut *store, session, &Origin::Request(RequestId::Number(1)))?)?;
    show("   sent", &opened.priming);
    let message = r#"{"method":"notifications/progress"}"#;
    let progress = ok(gate.call_on_emit(&mut *store, session, opened.stream, message)?)?;
    println!("   sent id={} {message}", progress.id);

    println!("\n2. the connection drops; the tool finishes while nobody listens");
    ok(gate.call_on_detach(&mut *store, session, opened.stream, opened.attachment)?)?;
    let response = r#"{"id":1,"result":"3 lines"}"#;
    let result = ok(gate.call_on_terminal(&mut *store, session, opened.stream, response)?)?;
    println!("   recorded id={} {response} [terminal]", result.id);

    println!("\n3. GET with Last-Event-ID = the progress event: a valid continuation point");
    reconnect(gate, store, session, progress.id.as_bytes(), &Origin::Standalone)?;

    println!("\n4. GET with Last-Event-ID = the terminal event (the seed's failure 1)");
    println!("   the naive rule finds the id in its buffer and replays the result again");
    reconnect(gate, store, session, result.id.as_bytes(), &Origin::Standalone)?;

    println!("\n5. a new POST tools/call (id 2) carrying that same Last-Event-ID (the seed's failure 2)");
    reconnect(gate, store, session, result.id.as_bytes(), &Origin::Request(RequestId::Number(2)))?;

    println!("\n6. same session id, a cursor from the finished stream (the seed's failure 3)");
    reconnect(gate, store, session, progress.id.as_bytes(), &Origin::Standalone)?;

    println!("\n7. the session is re-issued (new epoch); the old cursor comes back");
    ok(gate.call_open_session(&mut *store, session)?)?;
    reconnect(gate, store, session, progress.id.as_bytes(), &Origin::Standalone)?;

    println!("\n8. a cursor minted for another session, and one that is garbage");
    ok(gate.call_open_session(&mut *store, "other-session")?)?;
    let other = ok(gate.call_open_stream(&mut *store, "other-session", &Origin::Standalone)?)?;
    reconnect(gate, store, session, other.priming.id.as_bytes(), &Origin::Standalone)?;
    reconnect(gate, store, session, b"1-2-3", &Origin::Standalone)?;

    let c = gate.call_read_counters(&mut *store)?;
    println!(
        "\ncounters: {} events emitted, {} resumes, {} events replayed, fresh: {}",
        c.events_emitted,
        c.resumes,
        c.events_replayed,
        c.fresh
            .iter()
            .filter(|f| f.count > 0)
            .map(|f| format!("{}={}", reason(f.reason), f.count))
            .collect::<Vec<_>>()
            .join(" ")
    );
    if c.resumes != 1 || c.events_replayed != 1 {
        bail!("the demo expected exactly one resume replaying one event");
    }
    Ok(())
}

fn reason(r: StaleReason) -> &'static str {
    memory::convert::from_wit_reason(r).as_str()
}

fn ok<T>(r: Result<T, GateError>) -> Result<T> {
    r.map_err(|e| anyhow!("gate error: {e:?}"))
}

fn reconnect(
    gate: &Exports,
    store: &mut wasmtime::Store<State>,
    session: &str,
    cursor: &[u8],
    origin: &Origin,
) -> Result<()> {
    explain(&ok(gate.call_on_reconnect(store, session, cursor, origin)?)?);
    Ok(())
}

fn show(verb: &str, e: &Event) {
    let what = if e.data.is_empty() { "(priming)" } else { &e.data };
    let terminal = if e.terminal { " [terminal]" } else { "" };
    println!("{verb} id={} {what}{terminal}", e.id);
}

fn explain(d: &Decision) {
    match d {
        Decision::Resume(r) => {
            println!("   gate: RESUME stream {}, replaying {} event(s)", r.stream, r.events.len());
            for e in &r.events {
                show("     replay", e);
            }
            if r.includes_terminal {
                println!("     the terminal is among them: the host closes the response after it");
            }
        }
        Decision::Fresh(f) => {
            println!(
                "   gate: FRESH ({}), nothing replayed; new stream {} starts with {}",
                reason(f.reason),
                f.opened.stream,
                f.opened.priming.id
            );
            for id in &f.stranded {
                println!("     stranded request {id:?}: the host answers it with a JSON-RPC error");
            }
        }
    }
}
