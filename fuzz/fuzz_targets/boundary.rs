//! The component boundary through wasmtime: every export called with strings and bytes from
//! the input (session ids, request ids, cursors, event data of any size). The component never
//! traps: every call returns a value or a typed error.
#![no_main]

use std::sync::OnceLock;

use gate_host::memory::types::{Origin, RequestId};
use gate_host::memory::{self, GateMemoryPre, MemoryWorld};
use gate_host::supervised::DEFAULT_MEMORY_LIMIT;
use libfuzzer_sys::fuzz_target;
use wasmtime::{Engine, Store};

fn prepared() -> &'static GateMemoryPre<memory::State> {
    static GATE: OnceLock<GateMemoryPre<memory::State>> = OnceLock::new();
    GATE.get_or_init(|| {
        memory::prepare(&Engine::default(), gate_host::GATE_MEMORY_WASM).expect("the gate component")
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fuzz_target!(|data: &[u8]| {
    let wasi = wasmtime_wasi::WasiCtx::builder().build();
    let mut instance = MemoryWorld::new(prepared(), wasi, DEFAULT_MEMORY_LIMIT).expect("instantiate");
    let (g, store): (_, &mut Store<_>) = instance.exports();
    let _ = g.call_open_session(&mut *store, "s").expect("no trap");
    let mut streams = vec![1u64];
    for chunk in data.split(|b| *b == 0xff).take(64) {
        let Some((&op, arg)) = chunk.split_first() else { continue };
        let stream = streams[usize::from(op >> 4) % streams.len()];
        let session = if op & 0x08 != 0 { text(arg) } else { "s".to_owned() };
        let origin = match op >> 6 {
            0 => Origin::Standalone,
            1 => Origin::Request(RequestId::Text(text(arg))),
            _ => Origin::Request(RequestId::Number(i64::from(op) - 128)),
        };
        match op % 11 {
            0 => drop(g.call_open_session(&mut *store, &session).expect("no trap")),
            1 => drop(g.call_has_session(&mut *store, &session).expect("no trap")),
            2 => {
                if let Ok(opened) = g.call_open_stream(&mut *store, &session, &origin).expect("no trap") {
                    streams.push(opened.stream);
                }
            }
            3 => drop(g.call_on_emit(&mut *store, &session, stream, &text(arg)).expect("no trap")),
            4 => drop(g.call_on_terminal(&mut *store, &session, stream, &text(arg)).expect("no trap")),
            5 => drop(g.call_on_reconnect(&mut *store, &session, arg, &origin).expect("no trap")),
            6 => drop(g.call_on_detach(&mut *store, &session, stream, u32::from(op)).expect("no trap")),
            7 => {
                let ids: Vec<RequestId> =
                    arg.chunks(2).map(|c| RequestId::Number(i64::from(c[0]) - 128)).collect();
                drop(g.call_join_stream(&mut *store, &session, stream, &ids).expect("no trap"))
            }
            8 => drop(g.call_check_stream(&mut *store, &session, stream, u32::from(op)).expect("no trap")),
            9 => drop(g.call_release_stream(&mut *store, &session, stream).expect("no trap")),
            _ => drop(g.call_end_session(&mut *store, &session).expect("no trap")),
        }
    }
});
