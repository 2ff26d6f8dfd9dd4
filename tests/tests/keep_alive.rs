//! The regression guard for kept-alive connections: a `tools/call` whose result is ready at
//! once must not wait for TCP's delayed ACK.
//!
//! Real clients (undici, httpx) keep their connection alive. If the server writes the SSE
//! response as several small writes with Nagle's algorithm on, every write after the first
//! waits until the client ACKs the one before, and a client in request-response rhythm delays
//! that ACK by at least 40 ms (Linux's minimum delayed-ACK timer): every call then takes
//! ≥ 40 ms. Two checks, on host-example and on the Spin app (edge-host), each with
//! `TCP_NODELAY` (how they serve) and with Nagle's algorithm left on (where only the server's
//! own write coalescing helps — Spin owns its sockets):
//!
//! - **one read**: the response head, the priming event and the result arrive in the first
//!   read. This does not depend on timing: a server that makes one write delivers one segment
//!   on loopback, which a read returns whole; with Nagle on, a second write would be held back
//!   for the delayed ACK and miss the read.
//! - **no stall**: the median of the measured calls is under 20 ms. A stalled call takes
//!   ≥ 40 ms by construction; a healthy one takes ~1–5 ms here even in a debug build, so the
//!   median of 15 calls crosses 20 ms only if most calls are slowed 4× by load — and this
//!   binary holds this one test, so nothing else of the test suite runs beside it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use tests::http::{Client, Setup, Tcp, TestServer};
use tests::keep_alive::percentile;

/// Calls before measuring: the first segments of a connection are ACKed at once (quick-ACK
/// mode), which would hide a stall.
const WARM_UP: usize = 5;
const MEASURED: usize = 15;
const STALL: Duration = Duration::from_millis(40);

/// One kept-alive HTTP/1.1 connection in one session, read at the socket.
struct RawConnection {
    socket: TcpStream,
    addr: SocketAddr,
    session: String,
}

/// One call as it arrived: how long it took and what the first read returned.
struct Arrival {
    elapsed: Duration,
    first_read: String,
}

impl RawConnection {
    fn open(addr: SocketAddr) -> Self {
        let session = Client::initialize(addr).session;
        let socket = TcpStream::connect(addr).expect("connect");
        socket.set_nodelay(true).unwrap();
        socket.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Self { socket, addr, session }
    }

    /// `countdown {n: 0}`: its result is ready at once. Reads the chunked response to its end.
    fn call(&mut self, id: u64) -> Arrival {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"countdown","arguments":{{"n":0}}}}}}"#
        );
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Session-Id: {}\r\n\
             MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            self.session,
            body.len()
        );
        let start = Instant::now();
        self.socket.write_all(request.as_bytes()).unwrap();
        let mut received = Vec::new();
        let mut first_read = None;
        let mut buf = [0u8; 64 << 10];
        // A chunked body ends with an empty chunk; SSE frames never contain CR LF.
        while !received.ends_with(b"\r\n0\r\n\r\n") {
            let n = self.socket.read(&mut buf).expect("the response arrives");
            assert!(
                n > 0,
                "the server closed a kept-alive connection: {}",
                String::from_utf8_lossy(&received)
            );
            received.extend_from_slice(&buf[..n]);
            first_read.get_or_insert_with(|| String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        let elapsed = start.elapsed();
        let text = String::from_utf8_lossy(&received);
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        let answered = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.strip_prefix("data: ")?).ok())
            .any(|v| v["id"] == id && v.get("result").is_some());
        assert!(answered, "no result for {id}: {text}");
        Arrival { elapsed, first_read: first_read.unwrap_or_default() }
    }
}

fn check(name: &str, server: TestServer) {
    let mut conn = RawConnection::open(server.addr);
    for id in 0..WARM_UP {
        conn.call(id as u64);
    }
    let mut times = Vec::new();
    for id in WARM_UP..WARM_UP + MEASURED {
        let arrival = conn.call(id as u64);
        let first = &arrival.first_read;
        assert!(
            first.starts_with("HTTP/1.1 200")
                && first.contains("\ndata: \n\n")
                && first.contains(r#""result""#),
            "{name}: head, priming event and result did not arrive in one read:\n{first}"
        );
        times.push(arrival.elapsed);
    }
    times.sort();
    let median = percentile(&times, 0.5);
    println!(
        "{name}: kept-alive countdown n=0: min {:?}, median {median:?}, max {:?}",
        times[0],
        times[times.len() - 1]
    );
    assert!(
        median < STALL / 2,
        "{name}: kept-alive calls stall (median {median:?}; a delayed ACK is {STALL:?}): {times:?}"
    );
}

#[test]
fn a_kept_alive_call_with_an_immediate_result_is_one_write_and_never_waits_for_a_delayed_ack() {
    check("host-example", TestServer::host_example());
    let nagle = Setup { tcp: Tcp::Nagle, ..Setup::default() };
    check("host-example, Nagle on", TestServer::host_example_with(nagle.clone()));
    check("edge-host", TestServer::edge());
    check("edge-host, Nagle on (the front's coalescing alone)", TestServer::edge_with(nagle));
}
