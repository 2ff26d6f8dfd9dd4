//! A TCP proxy in front of a Redis server that misbehaves on purpose, as a network or a
//! stalled server does: for a request whose bytes contain a marker, it delays the reply, or
//! forwards the request and never answers, or swallows the request. Everything else passes
//! through untouched. A Redis client speaks request then reply on a connection, so the first
//! reply after a marked request is that request's.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What happens to a marked request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Forwarded; its reply is held this long.
    DelayReply(Duration),
    /// Forwarded (it runs); its reply never comes.
    DropReply,
    /// Never forwarded (it does not run); no reply comes.
    DropRequest,
}

struct Rule {
    marker: Vec<u8>,
    fault: Fault,
    /// Requests it applied to so far.
    hits: usize,
}

/// The proxy; it runs until dropped (with its runtime).
pub struct FaultProxy {
    pub addr: SocketAddr,
    rules: Arc<Mutex<Vec<Rule>>>,
    _runtime: tokio::runtime::Runtime,
}

impl FaultProxy {
    /// A proxy on a free loopback port in front of `upstream`.
    pub fn start(upstream: SocketAddr) -> Self {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).expect("bind the proxy");
        let addr = listener.local_addr().unwrap();
        let rules: Arc<Mutex<Vec<Rule>>> = Arc::default();
        let shared = Arc::clone(&rules);
        runtime.spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let rules = Arc::clone(&shared);
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(upstream).await {
                        relay(client, server, rules).await;
                    }
                });
            }
        });
        Self { addr, rules, _runtime: runtime }
    }

    /// `redis://` URL of the proxy.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// From now on, a request containing `marker` meets `fault`.
    pub fn on(&self, marker: &str, fault: Fault) {
        self.lock().push(Rule { marker: marker.as_bytes().to_vec(), fault, hits: 0 });
    }

    /// Every request passes untouched from now on.
    pub fn clear(&self) {
        self.lock().iter_mut().for_each(|r| r.marker = b"\0never matches\0".to_vec());
    }

    /// How many requests met the fault of `marker`.
    pub fn hits(&self, marker: &str) -> usize {
        self.lock().iter().filter(|r| r.marker == marker.as_bytes()).map(|r| r.hits).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Rule>> {
        self.rules.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The fault the first rule whose marker is in `chunk` names, counting the hit.
fn fault_for(rules: &Mutex<Vec<Rule>>, chunk: &[u8]) -> Option<Fault> {
    let mut rules = rules.lock().unwrap_or_else(|e| e.into_inner());
    let rule = rules.iter_mut().find(|r| chunk.windows(r.marker.len()).any(|w| w == r.marker))?;
    rule.hits += 1;
    Some(rule.fault)
}

async fn relay(client: TcpStream, server: TcpStream, rules: Arc<Mutex<Vec<Rule>>>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // What the next reply meets: set by the request that precedes it.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Option<Fault>>();
    let upstream = async move {
        let mut buf = vec![0; 64 << 10];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let fault = fault_for(&rules, &buf[..n]);
            if fault == Some(Fault::DropRequest) {
                continue;
            }
            let _ = tx.send(fault);
            if server_write.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    let downstream = async move {
        let mut buf = vec![0; 64 << 10];
        loop {
            let n = match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            match rx.try_recv().ok().flatten() {
                Some(Fault::DelayReply(d)) => tokio::time::sleep(d).await,
                Some(Fault::DropReply) => continue,
                _ => {}
            }
            if client_write.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::join!(upstream, downstream);
}
