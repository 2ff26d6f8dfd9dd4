//! The test harness shared by the end-to-end tests: random operation sequences, and one
//! driver per side (the native core, the component in wasmtime) so that the same sequence
//! can run on both and their outcomes be compared.
//!
//! # Layout
//!
//! - [`ops`], [`held`], [`model`] (re-exported from `resume-gate-model`, which the fuzzer
//!   shares): operation sequences and their runner, what a store holds, the reference model.
//! - [`drivers`]: the native core and the wasmtime components behind the transport's `GateApi`,
//!   each with a clock the test sets (`Driver`).
//! - [`fault_proxy`]: a proxy in front of Redis that delays or drops chosen requests.
//! - [`http`]: the servers under test (host-example, and the Spin app served by edge-host) on
//!   a loopback port, and a raw HTTP/SSE client that can cut a connection at any byte.
//! - [`keep_alive`]: MCP sessions on kept-alive HTTP/1.1 connections, as real clients connect,
//!   and the load generator of the end-to-end benchmark.
//! - [`oci_registry`]: an OCI registry (the distribution spec's push and pull), in memory.
//! - [`processes`]: the hosts as separate processes (several on one store, SIGKILL).
//! - [`python`]: the virtualenv with the official Python SDK, from the committed lock.
//! - [`redis`]: a real Redis-protocol server (valkey-server from PyPI when none is installed).
//! - [`sdk_hosts`]: the Node and Python packages' example servers (the official SDKs with the
//!   gate's adapter) as child processes.
//! - [`workspace`]: a clean copy of the repository, and its documented commands run verbatim.

pub mod drivers;
pub mod fault_proxy;
pub mod http;
pub mod keep_alive;
pub mod oci_registry;
pub mod processes;
pub mod python;
pub mod redis;
pub mod redis_cluster;
pub mod sdk_hosts;
pub mod workspace;

pub use ::model::{held, model, ops};

/// `npm ci` in `dir` (a directory with a committed `package-lock.json`) when its
/// `node_modules` is missing or older than the lockfile; once per directory and process.
pub fn npm_ci(dir: &std::path::Path) {
    use std::sync::Mutex;
    static DONE: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if done.iter().any(|d| d == dir) {
        return;
    }
    let modified = |p: &std::path::Path| p.metadata().and_then(|m| m.modified()).ok();
    let stamp = dir.join("node_modules/.package-lock.json");
    if modified(&stamp).is_none() || modified(&stamp) < modified(&dir.join("package-lock.json")) {
        let status = std::process::Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(dir)
            .status()
            .expect("npm must be installed (Node 20 or later)");
        assert!(status.success(), "npm ci failed in {}", dir.display());
    }
    done.push(dir.to_owned());
}

/// Runs each named scenario, a `fn(fn() -> TestServer)`, against every server of
/// [`on_rust_servers!`] and the Node and Python packages' example servers (the official SDKs'
/// servers with the gate's adapter: the TypeScript SDK 1.32 and 2.x, the Python SDK).
#[macro_export]
macro_rules! on_every_server {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            $crate::rust_server_tests!($scenario);
            #[test]
            fn node_example() {
                super::$scenario($crate::http::TestServer::node_example)
            }
            #[test]
            fn node_v2_example() {
                super::$scenario($crate::http::TestServer::node_v2_example)
            }
            #[test]
            fn python_example() {
                super::$scenario($crate::http::TestServer::python_example)
            }
        }
    )*};
}

/// Runs each named scenario, a `fn(fn() -> TestServer)`, against the project's own hosts:
/// host-example, the Spin app, the Spin app over a store that answers like Spin's Redis
/// backend, the Spin app over a real Redis server, two Spin app hosts sharing that server with
/// every connection alternating between them, the same two for host-example (`--store`), and
/// two host-examples on a three-master Redis Cluster (`redis+cluster://`).
#[macro_export]
macro_rules! on_rust_servers {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            $crate::rust_server_tests!($scenario);
        }
    )*};
}

/// The tests of [`on_rust_servers!`] for one scenario, inside its module.
#[doc(hidden)]
#[macro_export]
macro_rules! rust_server_tests {
    ($scenario:ident) => {
        #[test]
        fn host_example() {
            super::$scenario($crate::http::TestServer::host_example)
        }
        #[test]
        fn edge() {
            super::$scenario($crate::http::TestServer::edge)
        }
        #[test]
        fn edge_over_redis_semantics() {
            super::$scenario($crate::http::TestServer::edge_over_redis_semantics)
        }
        #[test]
        fn edge_over_redis() {
            super::$scenario($crate::http::TestServer::edge_over_redis)
        }
        #[test]
        fn two_edges_over_redis() {
            super::$scenario($crate::http::TestServer::two_edges_over_redis)
        }
        #[test]
        fn host_example_over_redis() {
            super::$scenario($crate::http::TestServer::host_example_over_redis)
        }
        #[test]
        fn two_host_examples_over_redis() {
            super::$scenario($crate::http::TestServer::two_host_examples_over_redis)
        }
        #[test]
        fn two_host_examples_over_a_cluster() {
            super::$scenario($crate::http::TestServer::two_host_examples_over_cluster)
        }
    };
}

/// Runs each named scenario, a `fn(fn() -> TestServer)`, once against host-example and once
/// against the Spin app: `mod <scenario> { fn host_example(); fn edge(); }`.
#[macro_export]
macro_rules! on_both_servers {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[test]
            fn host_example() {
                super::$scenario($crate::http::TestServer::host_example)
            }
            #[test]
            fn edge() {
                super::$scenario($crate::http::TestServer::edge)
            }
        }
    )*};
}
