//! MCP over kept-alive HTTP/1.1 connections, as the official clients connect (undici, httpx):
//! a [`Session`] is one connection that carries `initialize` and then every call, and a
//! load generator runs many sessions at once. The raw client in [`crate::http`] opens one
//! HTTP/1.0 connection per request, which hides what a kept-alive connection meets (a write
//! held back by Nagle's algorithm until the client's delayed ACK, ~40 ms per call).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

/// The protocol revision the sessions speak (priming events on).
pub const PROTOCOL: &str = "2025-11-25";

/// One MCP session on one kept-alive connection.
pub struct Session {
    sender: SendRequest<Full<Bytes>>,
    authority: String,
    session: String,
    next_id: i64,
}

impl Session {
    /// Connects, initializes and sends `notifications/initialized`.
    pub async fn open(addr: SocketAddr) -> Result<Self> {
        let tcp = tokio::net::TcpStream::connect(addr).await.context("connect")?;
        tcp.set_nodelay(true)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(connection);
        let mut s = Self { sender, authority: addr.to_string(), session: String::new(), next_id: 1 };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "keep-alive", "version": "1"}}});
        let (status, headers, body) = s.post(&init).await?;
        ensure!(status == 200, "initialize: HTTP {status}: {}", String::from_utf8_lossy(&body));
        s.session = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .context("initialize: no Mcp-Session-Id")?
            .to_owned();
        let (status, _, _) =
            s.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
        ensure!(status == 202, "notifications/initialized: HTTP {status}");
        Ok(s)
    }

    async fn post(&mut self, body: &Value) -> Result<(u16, hyper::HeaderMap, Bytes)> {
        let mut req = hyper::Request::post("/mcp")
            .header("host", &self.authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if !self.session.is_empty() {
            req = req.header("mcp-session-id", &self.session).header("mcp-protocol-version", PROTOCOL);
        }
        let req = req.body(Full::new(Bytes::from(body.to_string())))?;
        self.sender.ready().await?;
        let resp = self.sender.send_request(req).await?;
        let (parts, body) = resp.into_parts();
        let body = body.collect().await?.to_bytes();
        Ok((parts.status.as_u16(), parts.headers, body))
    }

    /// One `tools/call`, timed from sending the request to the end of its response; fails
    /// unless the response carries this call's result.
    pub async fn call(&mut self, tool: &str, arguments: Value) -> Result<Duration> {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool, "arguments": arguments, "_meta": {"progressToken": id}}});
        let start = Instant::now();
        let (status, _, body) = self.post(&body).await?;
        let elapsed = start.elapsed();
        ensure!(status == 200, "{tool}: HTTP {status}");
        let answered = sse_data(&body).any(|v| v["id"] == id && v.get("result").is_some());
        if !answered {
            bail!("{tool}: no result for id {id} in {:?}", String::from_utf8_lossy(&body));
        }
        Ok(elapsed)
    }

    /// Ends the session (DELETE), so a long run leaves no sessions behind.
    pub async fn close(mut self) -> Result<()> {
        let req = hyper::Request::delete("/mcp")
            .header("host", &self.authority)
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", PROTOCOL)
            .body(Full::new(Bytes::new()))?;
        self.sender.ready().await?;
        self.sender.send_request(req).await?.into_body().collect().await?;
        Ok(())
    }
}

/// The JSON of every SSE `data` field in a body (a JSON response body is one value).
fn sse_data(body: &[u8]) -> impl Iterator<Item = Value> + '_ {
    let text = std::str::from_utf8(body).unwrap_or("");
    let json = serde_json::from_str::<Value>(text).ok();
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim_start()).ok())
        .chain(json)
}

/// What a load run measured.
#[derive(Clone, Debug)]
pub struct Load {
    pub sessions: usize,
    pub calls: usize,
    pub calls_per_s: f64,
    /// Latencies of the calls that finished within the measured window, sorted.
    pub latencies: Vec<Duration>,
}

impl Load {
    pub fn percentile(&self, p: f64) -> Duration {
        percentile(&self.latencies, p)
    }
}

/// The `p` quantile (0..=1) of sorted durations (zero when there are none).
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `sessions` sessions, each on its own kept-alive connection with its own request ids, call
/// `tool` back to back: for `warm_up`, unmeasured, then for `measure`. Every response must
/// carry its result. Over several servers (sharing a store), session `i` talks to
/// `addrs[i % n]`.
pub async fn load_over(
    addrs: &[SocketAddr],
    sessions: usize,
    tool: &str,
    arguments: Value,
    warm_up: Duration,
    measure: Duration,
) -> Result<Load> {
    ensure!(!addrs.is_empty(), "no server to load");
    let mut opened = Vec::with_capacity(sessions);
    for i in 0..sessions {
        opened.push(Session::open(addrs[i % addrs.len()]).await?);
    }
    let start = Instant::now() + Duration::from_millis(10);
    let (from, until) = (start + warm_up, start + warm_up + measure);
    let tasks: Vec<_> = opened
        .into_iter()
        .map(|mut session| {
            let (tool, arguments) = (tool.to_owned(), arguments.clone());
            tokio::spawn(async move {
                tokio::time::sleep_until(start.into()).await;
                let mut times = Vec::new();
                while Instant::now() < until {
                    let began = Instant::now();
                    let t = session.call(&tool, arguments.clone()).await?;
                    if began >= from && began + t <= until {
                        times.push(t);
                    }
                }
                session.close().await?;
                anyhow::Ok(times)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await??);
    }
    latencies.sort();
    let calls = latencies.len();
    Ok(Load { sessions, calls, calls_per_s: calls as f64 / measure.as_secs_f64(), latencies })
}
