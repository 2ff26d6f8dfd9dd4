//! An OCI registry for the tests, written from the OCI distribution specification (v1.1): what
//! a push and a pull by tag or digest use, in memory. No registry can be installed from the
//! package registries this project reaches, so the tests start this one.
//!
//! - `GET /v2/`;
//! - blobs: `HEAD`/`GET /v2/<name>/blobs/<digest>`; uploads `POST /v2/<name>/blobs/uploads/`
//!   (with `?digest=`: the whole blob at once), `PATCH` chunks, `PUT …?digest=` to close, the
//!   digest checked;
//! - manifests: `PUT`, `HEAD`, `GET /v2/<name>/manifests/<tag or digest>`.
//!
//! With credentials set, every request must carry them (`Basic`), else `401` with the
//! challenge. Every request is logged (method and path) for the tests to look at.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use sha2::{Digest, Sha256};

#[derive(Default)]
struct State {
    blobs: HashMap<String, Bytes>,
    /// (repository, tag or digest) → (media type, manifest).
    manifests: HashMap<(String, String), (String, Bytes)>,
    uploads: HashMap<String, Vec<u8>>,
    next_upload: u64,
    credentials: Option<String>,
    log: Vec<String>,
}

pub struct Registry {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    _runtime: tokio::runtime::Runtime,
}

impl Registry {
    /// On a free port.
    pub fn start() -> Self {
        Self::start_on(0, None)
    }

    /// On `port` (0: a free one); with `credentials` (`user`, `password`), only for them.
    pub fn start_on(port: u16, credentials: Option<(&str, &str)>) -> Self {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(("127.0.0.1", port)))
            .unwrap_or_else(|e| panic!("the test registry cannot listen on port {port}: {e}"));
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            credentials: credentials.map(|(u, p)| basic(u, p)),
            ..State::default()
        }));
        let shared = state.clone();
        runtime.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, hyper::Error>(handle(&state, req).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
        Self { addr, state, _runtime: runtime }
    }

    /// `host:port`, as a reference names the registry.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// Every request so far: `METHOD path?query`, with the `Authorization` header's value if any.
    pub fn log(&self) -> Vec<String> {
        self.state.lock().unwrap().log.clone()
    }

    /// The manifest a repository's tag or digest names, and its media type.
    pub fn manifest(&self, repository: &str, reference: &str) -> Option<(String, Bytes)> {
        self.state.lock().unwrap().manifests.get(&(repository.to_owned(), reference.to_owned())).cloned()
    }
}

fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
}

/// `sha256:…` of some bytes, as OCI names blobs and manifests.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn reply(status: StatusCode, headers: &[(&str, String)], body: Bytes) -> Response<Full<Bytes>> {
    let mut resp = Response::builder().status(status);
    for (name, value) in headers {
        resp = resp.header(*name, value);
    }
    resp.body(Full::new(body)).unwrap()
}

fn error(status: StatusCode, code: &str) -> Response<Full<Bytes>> {
    let body = format!(r#"{{"errors":[{{"code":"{code}","message":"{code}"}}]}}"#);
    reply(status, &[("Content-Type", "application/json".into())], body.into())
}

/// What a path under `/v2/` names.
enum Target<'a> {
    Base,
    /// Blobs are kept by digest, whatever repository names them.
    Blob(&'a str),
    Uploads(&'a str),
    Upload(&'a str, &'a str),
    Manifest(&'a str, &'a str),
}

fn target(path: &str) -> Option<Target<'_>> {
    let rest = path.strip_prefix("/v2/")?;
    if rest.is_empty() {
        return Some(Target::Base);
    }
    if let Some(name) = rest.strip_suffix("/blobs/uploads/") {
        return Some(Target::Uploads(name));
    }
    if let Some((name, id)) = rest.rsplit_once("/blobs/uploads/") {
        return Some(Target::Upload(name, id));
    }
    if let Some((_, digest)) = rest.rsplit_once("/blobs/") {
        return Some(Target::Blob(digest));
    }
    let (name, reference) = rest.rsplit_once("/manifests/")?;
    Some(Target::Manifest(name, reference))
}

fn query<'a>(req: &'a Request<Incoming>, key: &str) -> Option<&'a str> {
    req.uri().query()?.split('&').find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
}

async fn handle(state: &Mutex<State>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let authorization = req.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    {
        let mut s = state.lock().unwrap();
        let line = format!("{} {}", req.method(), req.uri());
        s.log.push(match &authorization {
            Some(a) => format!("{line} [{a}]"),
            None => line,
        });
        if s.credentials.is_some() && s.credentials != authorization {
            return reply(
                StatusCode::UNAUTHORIZED,
                &[("WWW-Authenticate", r#"Basic realm="resume-gate tests""#.into())],
                Bytes::new(),
            );
        }
    }
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    let digest = query(&req, "digest").map(|d| d.replace("%3A", ":").replace("%3a", ":"));
    let content_type =
        req.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let Ok(body) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
        return error(StatusCode::BAD_REQUEST, "BLOB_UPLOAD_INVALID");
    };
    let mut s = state.lock().unwrap();
    match (method, target(&path)) {
        (Method::GET, Some(Target::Base)) => reply(StatusCode::OK, &[], "{}".into()),
        (m @ (Method::GET | Method::HEAD), Some(Target::Blob(digest))) => match s.blobs.get(digest) {
            Some(blob) => {
                let headers = [
                    ("Docker-Content-Digest", digest.to_owned()),
                    ("Content-Length", blob.len().to_string()),
                ];
                reply(StatusCode::OK, &headers, if m == Method::GET { blob.clone() } else { Bytes::new() })
            }
            None => error(StatusCode::NOT_FOUND, "BLOB_UNKNOWN"),
        },
        (Method::POST, Some(Target::Uploads(name))) => match digest {
            Some(digest) => store_blob(&mut s, name, &digest, body.to_vec()),
            None => {
                s.next_upload += 1;
                let id = format!("u{}", s.next_upload);
                s.uploads.insert(id.clone(), body.to_vec());
                let location = format!("/v2/{name}/blobs/uploads/{id}");
                reply(StatusCode::ACCEPTED, &[("Location", location), ("Range", "0-0".into())], Bytes::new())
            }
        },
        (Method::PATCH, Some(Target::Upload(name, id))) => {
            let Some(upload) = s.uploads.get_mut(id) else {
                return error(StatusCode::NOT_FOUND, "BLOB_UPLOAD_UNKNOWN");
            };
            upload.extend_from_slice(&body);
            let range = format!("0-{}", upload.len().saturating_sub(1));
            let location = format!("/v2/{name}/blobs/uploads/{id}");
            reply(StatusCode::ACCEPTED, &[("Location", location), ("Range", range)], Bytes::new())
        }
        (Method::PUT, Some(Target::Upload(name, id))) => {
            let (Some(digest), Some(mut data)) = (digest, s.uploads.remove(id)) else {
                return error(StatusCode::NOT_FOUND, "BLOB_UPLOAD_UNKNOWN");
            };
            data.extend_from_slice(&body);
            store_blob(&mut s, name, &digest, data)
        }
        (Method::PUT, Some(Target::Manifest(name, reference))) => {
            let digest = digest_of(&body);
            if reference.starts_with("sha256:") && reference != digest {
                return error(StatusCode::BAD_REQUEST, "DIGEST_INVALID");
            }
            let stored = (content_type, body);
            s.manifests.insert((name.to_owned(), digest.clone()), stored.clone());
            s.manifests.insert((name.to_owned(), reference.to_owned()), stored);
            let location = format!("/v2/{name}/manifests/{digest}");
            reply(
                StatusCode::CREATED,
                &[("Location", location), ("Docker-Content-Digest", digest)],
                Bytes::new(),
            )
        }
        (m @ (Method::GET | Method::HEAD), Some(Target::Manifest(name, reference))) => {
            match s.manifests.get(&(name.to_owned(), reference.to_owned())) {
                Some((media_type, manifest)) => {
                    let headers = [
                        ("Content-Type", media_type.clone()),
                        ("Docker-Content-Digest", digest_of(manifest)),
                        ("Content-Length", manifest.len().to_string()),
                    ];
                    reply(
                        StatusCode::OK,
                        &headers,
                        if m == Method::GET { manifest.clone() } else { Bytes::new() },
                    )
                }
                None => error(StatusCode::NOT_FOUND, "MANIFEST_UNKNOWN"),
            }
        }
        _ => error(StatusCode::NOT_FOUND, "UNSUPPORTED"),
    }
}

fn store_blob(s: &mut State, name: &str, digest: &str, data: Vec<u8>) -> Response<Full<Bytes>> {
    if digest_of(&data) != digest {
        return error(StatusCode::BAD_REQUEST, "DIGEST_INVALID");
    }
    s.blobs.insert(digest.to_owned(), data.into());
    let location = format!("/v2/{name}/blobs/{digest}");
    reply(
        StatusCode::CREATED,
        &[("Location", location), ("Docker-Content-Digest", digest.to_owned())],
        Bytes::new(),
    )
}
