//! Where connections come from: one server, or a Redis Cluster whose client routes each
//! command by its key's slot and follows `MOVED` and `ASK` while slots move. Every command the
//! store sends names keys of one slot (a session's keys share its hash tag, the journal's share
//! `{journal}`), so nothing needs a cross-slot command. What a cluster cannot route by key is
//! done node by node here: a `SCAN` of every master, a `WAIT` on the node that took the write,
//! and wake-ups subscribed on one node (a cluster forwards every `PUBLISH` to all its nodes).

use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterClientBuilder, ClusterConnection};
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, Connection, ConnectionInfo, ConnectionLike, IntoConnectionInfo, RedisResult, Value};

use crate::{Options, StoreUrl};

/// How connections are made.
pub(crate) enum Backend {
    Single(redis::Client),
    /// The cluster, and one of its nodes for the subscription.
    Cluster {
        client: Box<ClusterClient>,
        seed: redis::Client,
    },
}

/// A pooled connection.
pub(crate) enum Conn {
    Single(Connection),
    Cluster(Box<ClusterConnection>),
}

/// `url` as the client's connection details, without `CLIENT SETINFO` on connecting (a
/// connection opened while the server stalls then waits for nothing but its first command).
fn info(url: &str) -> RedisResult<ConnectionInfo> {
    let info = url.into_connection_info()?;
    Ok(info.clone().set_redis_settings(info.redis_settings().clone().set_skip_set_lib_name()))
}

fn client(info: ConnectionInfo, tls: bool, options: &Options) -> RedisResult<redis::Client> {
    if tls {
        // The process's TLS provider, unless the host chose one already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let roots = redis::TlsCertificates { client_tls: None, root_cert: options.ca.clone() };
        redis::Client::build_with_tls(info, roots)
    } else {
        redis::Client::open(info)
    }
}

impl Backend {
    pub(crate) fn new(url: &StoreUrl, options: &Options) -> RedisResult<Self> {
        if !url.is_cluster() {
            return Ok(Self::Single(client(info(url.secret())?, url.is_tls(), options)?));
        }
        let nodes = url.cluster_nodes().iter().map(|n| info(n)).collect::<RedisResult<Vec<_>>>()?;
        let Some(first) = nodes.first().cloned() else {
            return Err(redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "no cluster node named",
            )));
        };
        let mut builder = ClusterClientBuilder::new(nodes)
            .connection_timeout(options.timeout)
            .response_timeout(options.timeout);
        if url.is_tls() {
            let _ = rustls::crypto::ring::default_provider().install_default();
            builder = builder.tls(redis::TlsMode::Secure);
            if let Some(ca) = &options.ca {
                builder =
                    builder.certs(redis::TlsCertificates { client_tls: None, root_cert: Some(ca.clone()) });
            }
        }
        Ok(Self::Cluster { client: Box::new(builder.build()?), seed: client(first, url.is_tls(), options)? })
    }

    pub(crate) fn connect(&self, timeout: Duration) -> RedisResult<Conn> {
        let conn = match self {
            Self::Single(client) => Conn::Single(client.get_connection_with_timeout(timeout)?),
            Self::Cluster { client, .. } => Conn::Cluster(Box::new(client.get_connection()?)),
        };
        conn.set_timeout(timeout)?;
        Ok(conn)
    }

    /// A plain connection to subscribe on (in a cluster, to one of its nodes).
    pub(crate) fn subscriber(&self, timeout: Duration) -> RedisResult<Connection> {
        match self {
            Self::Single(client) | Self::Cluster { seed: client, .. } => {
                client.get_connection_with_timeout(timeout)
            }
        }
    }
}

impl Conn {
    pub(crate) fn set_timeout(&self, timeout: Duration) -> RedisResult<()> {
        match self {
            Self::Single(c) => {
                c.set_read_timeout(Some(timeout))?;
                c.set_write_timeout(Some(timeout))
            }
            Self::Cluster(c) => {
                c.set_read_timeout(Some(timeout))?;
                c.set_write_timeout(Some(timeout))
            }
        }
    }

    /// `WAIT 1 ms` on the connection that took the last write of `key`: how many replicas
    /// have it.
    pub(crate) fn wait_for_replica(&mut self, key: &str, ms: u64) -> RedisResult<i64> {
        let mut wait = redis::cmd("WAIT");
        wait.arg(1).arg(ms);
        match self {
            Self::Single(c) => wait.query(c),
            Self::Cluster(c) => {
                let route = Route::with_key(key.as_bytes(), SlotAddr::Master);
                let answer = c.route_command(
                    &wait,
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route)),
                )?;
                Ok(redis::from_redis_value(answer)?)
            }
        }
    }

    /// One `SCAN … MATCH pattern` step: from `cursor` (`None`: the start), the keys and the
    /// cursor of the next step (`None`: done). In a cluster the cursor names the master too,
    /// and the masters are scanned in turn.
    pub(crate) fn scan_step(
        &mut self,
        cursor: Option<&str>,
        pattern: &str,
    ) -> RedisResult<(Vec<String>, Option<String>)> {
        let scan = |at: &str| {
            let mut cmd = redis::cmd("SCAN");
            cmd.arg(at).arg("MATCH").arg(pattern).arg("COUNT").arg(64);
            cmd
        };
        match self {
            Self::Single(c) => {
                let (next, keys): (String, Vec<String>) = scan(cursor.unwrap_or("0")).query(c)?;
                Ok((keys, (next != "0").then_some(next)))
            }
            Self::Cluster(c) => {
                let masters = masters(c)?;
                let (mut node, at) = cursor
                    .and_then(|s| s.split_once(':'))
                    .and_then(|(n, at)| Some((n.parse::<usize>().ok()?, at.to_owned())))
                    .unwrap_or((0, "0".to_owned()));
                let Some((host, port)) = masters.get(node).cloned() else { return Ok((Vec::new(), None)) };
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host, port });
                let (next, keys): (String, Vec<String>) =
                    redis::from_redis_value(c.route_command(&scan(&at), routing)?)?;
                let next = if next != "0" {
                    Some(format!("{node}:{next}"))
                } else {
                    node += 1;
                    (node < masters.len()).then(|| format!("{node}:0"))
                };
                Ok((keys, next))
            }
        }
    }
}

/// The cluster's masters that serve slots, by address, in a stable order.
fn masters(c: &mut ClusterConnection) -> RedisResult<Vec<(String, u16)>> {
    let nodes: String = redis::from_redis_value(c.route_command(
        &redis::cmd("CLUSTER").arg("NODES").clone(),
        RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
    )?)?;
    let mut masters: Vec<(String, u16)> = nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let serves = fields.len() > 8 && fields[2].contains("master") && !fields[2].contains("fail");
            let addr = fields.get(1)?.split(['@', ',']).next()?;
            let (host, port) = addr.rsplit_once(':')?;
            serves.then(|| (host.to_owned(), port.parse().ok())).and_then(|(h, p)| Some((h, p?)))
        })
        .collect();
    masters.sort();
    Ok(masters)
}

impl ConnectionLike for Conn {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        match self {
            Self::Single(c) => c.req_packed_command(cmd),
            Self::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands(&mut self, cmd: &[u8], offset: usize, count: usize) -> RedisResult<Vec<Value>> {
        match self {
            Self::Single(c) => c.req_packed_commands(cmd, offset, count),
            Self::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        match self {
            Self::Single(c) => c.req_command(cmd),
            Self::Cluster(c) => c.req_command(cmd),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(c) => c.get_db(),
            Self::Cluster(c) => c.get_db(),
        }
    }

    fn supports_pipelining(&self) -> bool {
        match self {
            Self::Single(c) => c.supports_pipelining(),
            Self::Cluster(c) => c.supports_pipelining(),
        }
    }

    fn check_connection(&mut self) -> bool {
        match self {
            Self::Single(c) => c.check_connection(),
            Self::Cluster(c) => c.check_connection(),
        }
    }

    fn is_open(&self) -> bool {
        match self {
            Self::Single(c) => c.is_open(),
            Self::Cluster(c) => c.is_open(),
        }
    }
}
