//! A Redis Cluster for the tests: three masters on free loopback ports (Valkey with
//! `cluster-enabled yes`), the slots split evenly by the test as an operator assigns them, and
//! a slot moved by hand mid-run as an operator resharding does.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::redis::RedisServer;

const RANGES: [(u16, u16); 3] = [(0, 5460), (5461, 10922), (10923, 16383)];

pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    /// Slots moved since the start, and where to.
    moved: Mutex<HashMap<u16, usize>>,
}

fn query<T: redis::FromRedisValue>(node: &RedisServer, cmd: &mut redis::Cmd) -> T {
    cmd.query(&mut node.connection()).unwrap_or_else(|e| panic!("{cmd:?} on {}: {e}", node.addr()))
}

impl RedisCluster {
    pub fn start() -> Self {
        let nodes: Vec<RedisServer> = (0..3).map(|_| RedisServer::start_cluster_node()).collect();
        let first = nodes[0].addr();
        for node in &nodes[1..] {
            let () =
                query(node, redis::cmd("CLUSTER").arg("MEET").arg(first.ip().to_string()).arg(first.port()));
        }
        for (node, (from, to)) in nodes.iter().zip(RANGES) {
            let () = query(node, redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(from).arg(to));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let up = |n: &RedisServer| {
            let info: String = query(n, redis::cmd("CLUSTER").arg("INFO"));
            info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3")
        };
        while !nodes.iter().all(up) {
            assert!(Instant::now() < deadline, "the cluster never came up");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { nodes, moved: Mutex::default() }
    }

    /// `redis+cluster://` naming every node.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(|n| n.addr().to_string()).collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// The slot `key` hashes to.
    pub fn slot(&self, key: &str) -> u16 {
        query(&self.nodes[0], redis::cmd("CLUSTER").arg("KEYSLOT").arg(key))
    }

    /// The node serving `slot` now.
    pub fn owner(&self, slot: u16) -> usize {
        let moved = self.moved.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        moved
            .get(&slot)
            .copied()
            .unwrap_or_else(|| RANGES.iter().position(|(a, b)| (*a..=*b).contains(&slot)).unwrap())
    }

    /// Keys on each node.
    pub fn keys_per_node(&self) -> Vec<usize> {
        self.nodes.iter().map(|n| query::<Vec<String>>(n, redis::cmd("KEYS").arg("*")).len()).collect()
    }

    /// Moves `slot` and its keys to node `to` as resharding does (`SETSLOT … IMPORTING` and
    /// `MIGRATING`, `MIGRATE` in batches, `SETSLOT … NODE` everywhere): clients meet `ASK`
    /// while it moves and `MOVED` after. `between` runs once the first keys moved.
    pub fn migrate(&self, slot: u16, to: usize, mut between: impl FnMut()) {
        let from = self.owner(slot);
        assert_ne!(from, to, "slot {slot} is on node {to} already");
        let (source, target) = (&self.nodes[from], &self.nodes[to]);
        let id = |n: &RedisServer| -> String { query(n, redis::cmd("CLUSTER").arg("MYID")) };
        let (source_id, target_id) = (id(source), id(target));
        let setslot = |n: &RedisServer, how: &str, node: &str| {
            let () = query(n, redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg(how).arg(node));
        };
        setslot(target, "IMPORTING", &source_id);
        setslot(source, "MIGRATING", &target_id);
        let mut first = true;
        loop {
            let keys: Vec<String> =
                query(source, redis::cmd("CLUSTER").arg("GETKEYSINSLOT").arg(slot).arg(4));
            if keys.is_empty() {
                break;
            }
            let addr = target.addr();
            let () = query(
                source,
                redis::cmd("MIGRATE")
                    .arg(addr.ip().to_string())
                    .arg(addr.port())
                    .arg("")
                    .arg(0)
                    .arg(5000)
                    .arg("KEYS")
                    .arg(&keys),
            );
            if std::mem::take(&mut first) {
                between();
            }
        }
        for node in [target, source] {
            setslot(node, "NODE", &target_id);
        }
        let other = self.nodes.iter().find(|n| !std::ptr::eq(*n, source) && !std::ptr::eq(*n, target));
        if let Some(other) = other {
            setslot(other, "NODE", &target_id);
        }
        self.moved.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(slot, to);
    }
}

/// One cluster for a whole test process; tests keep apart by key prefix.
pub fn shared() -> &'static RedisCluster {
    static CLUSTER: std::sync::OnceLock<RedisCluster> = std::sync::OnceLock::new();
    CLUSTER.get_or_init(RedisCluster::start)
}
