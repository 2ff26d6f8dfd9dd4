//! HTTP requests built from the input — method, headers (session, cursor, version, media
//! types, host, origin) and body — handled by `mcp-transport` over the core gate in process.
//! Never a panic; every reply is a status the spec allows; a `404` only for a session the gate
//! does not know, a `503` only when the store is down. A task request is answered over tasks
//! in memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_transport::gate::GateApi;
use mcp_transport::http::HttpRequest;
use mcp_transport::reply::Reply;
use mcp_transport::server::{Server, ServerConfig};
use mcp_transport::tasks::{MemoryTasks, TaskSettings};
use mcp_transport::test_util::InProcess;

const NAMES: [&str; 10] = [
    "mcp-session-id",
    "last-event-id",
    "mcp-protocol-version",
    "content-type",
    "accept",
    "host",
    "origin",
    "mcp-method",
    "mcp-name",
    "x",
];
const METHODS: [&str; 5] = ["POST", "GET", "DELETE", "PUT", "post"];

fuzz_target!(|data: &[u8]| {
    let mut gate = InProcess::new();
    let server = Server::new(ServerConfig { tasks: true, ..ServerConfig::default() });
    let tasks = MemoryTasks::default();
    let mut now = 0u64;
    let mut minted = 0u32;
    let mut sessions: Vec<String> = Vec::new();
    // Each request: [method, header count, (name, len, value…)…, body len (2 bytes), body…].
    let mut rest = data;
    let mut take = |n: usize| {
        let (head, tail) = rest.split_at(n.min(rest.len()));
        rest = tail;
        head
    };
    for _ in 0..16 {
        let Some(&m) = take(1).first() else { break };
        gate.broken = m & 0x80 != 0 && m & 0x40 != 0;
        let mut req =
            HttpRequest { method: METHODS[usize::from(m) % METHODS.len()].into(), ..Default::default() };
        let count = take(1).first().copied().unwrap_or(0) % 8;
        for _ in 0..count {
            let name_pick = take(1).first().copied().unwrap_or(0);
            let len = usize::from(take(1).first().copied().unwrap_or(0));
            let mut value = take(len).to_vec();
            // Often, a session this run was given: past the session check into the gate.
            if usize::from(name_pick) % NAMES.len() == 0 && name_pick & 0x80 != 0 && !sessions.is_empty() {
                value = sessions[usize::from(name_pick) % sessions.len()].clone().into_bytes();
            }
            req.headers.push((NAMES[usize::from(name_pick) % NAMES.len()].into(), value));
        }
        let len = take(2).iter().fold(0usize, |n, b| n << 8 | usize::from(*b));
        req.body = take(len).to_vec();
        let session = req.header("mcp-session-id").map(<[u8]>::to_vec);
        let known = session
            .as_deref()
            .and_then(|s| std::str::from_utf8(s).ok())
            .is_some_and(|s| !gate.broken && gate.gate.has_session(s).unwrap_or(false));
        let reply = server.handle(&mut gate, &req, || {
            minted += 1;
            Some(format!("fuzz-session-{minted}"))
        });
        match reply {
            Reply::Plain(p) => {
                assert!(
                    matches!(p.status, 200 | 202 | 400 | 403 | 404 | 405 | 406 | 413 | 415 | 500 | 503),
                    "status {}",
                    p.status
                );
                assert!(p.status != 404 || !known, "404 for a session the gate holds");
                assert!(p.status != 503 || gate.broken, "503 without a store failure: {:?}", p.body);
                if let Some(s) = p.session {
                    sessions.push(s);
                }
            }
            Reply::Stream(_) => assert!(!gate.broken, "a stream from a store that is down"),
            Reply::Accepted { .. } => {}
            Reply::Task(request) => {
                now += 1_000;
                let answer =
                    mcp_transport::tasks::answer(&tasks, &TaskSettings::default(), &request, now, |b| {
                        b.fill((now / 1_000) as u8);
                        true
                    });
                assert!(matches!(answer.reply.status, 200 | 503), "task status {}", answer.reply.status);
            }
        }
    }
    let _ = gate.has_session("fuzz-session-1");
});
