//! `rediss://`: a store reached over TLS, trusted through `--store-ca` and refused without it.
//! The test Valkey is built without TLS, so a TLS endpoint the test starts (with a CA it makes)
//! terminates TLS in front of it, as a managed Redis's proxy does.

use std::net::SocketAddr;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use serde_json::json;
use tests::http::Client;
use tests::processes::ServerProcess;
use tests::redis::RedisServer;
use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};

const PASSWORD: &str = "tls-pw-Zq7-never-shown";

/// A TLS endpoint forwarding to `backend`, and the CA's certificate (PEM) that signed its
/// certificate for `127.0.0.1`.
struct TlsEndpoint {
    addr: SocketAddr,
    ca_pem: String,
    _runtime: tokio::runtime::Runtime,
}

fn tls_endpoint(backend: SocketAddr) -> TlsEndpoint {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert =
        CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap().signed_by(&key, &issuer).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else { return };
                let Ok(mut plain) = TcpStream::connect(backend).await else { return };
                let _ = copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    TlsEndpoint { addr, ca_pem: ca_cert.pem(), _runtime: runtime }
}

#[test]
fn a_store_over_tls_is_trusted_through_its_ca_and_refused_without_it() {
    let redis = RedisServer::start_with_password(PASSWORD);
    let tls = tls_endpoint(redis.addr());
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &tls.ca_pem).unwrap();
    let url = format!("rediss://app:{PASSWORD}@127.0.0.1:{}", tls.addr.port());

    let host = ServerProcess::host_example(&["--store", &url, "--store-ca", ca.to_str().unwrap()]);
    let client = Client::initialize(host.addr);
    let resp = client.call(2, "append", json!({"text": "over TLS"}), &[]);
    assert_eq!(resp.status, 200);
    assert!(resp.body().contains("\"result\""));
    let mut plain = redis.connection();
    let keys: Vec<String> = redis::cmd("KEYS").arg("rg:*").query(&mut plain).unwrap();
    assert!(keys.iter().any(|k| k.contains("journal")), "the state went through the TLS endpoint: {keys:?}");

    // Without the CA, the endpoint's certificate chains to nothing the system trusts.
    let binary = tests::processes::built_binary("host-example", "host-example");
    let out = std::process::Command::new(binary).args(["--store", &url, "--port", "0"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "an untrusted certificate is refused");
    assert!(stderr.contains("--store") && !stderr.contains(PASSWORD), "{stderr}");
}
