//! The HTTP server: every request gets a fresh instance of the composed component — nothing
//! survives in linear memory from one request to the next, exactly as on Spin — and all
//! instances share one key-value map. A handler keeps running after its response ends (a tool
//! whose client went away still records its events), as Spin lets it.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::keyvalue::{self, KvView, SharedKv};
use crate::variables::Variables;
use gate_host::net::Tcp;

/// One request's store data.
pub struct RequestState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
    kv: SharedKv,
    variables: Variables,
}

impl WasiView for RequestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for RequestState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            hooks: wasmtime_wasi_http::default_hooks(),
            table: &mut self.table,
            ctx: &mut self.http,
        }
    }
}

fn kv_view(s: &mut RequestState) -> KvView<'_> {
    KvView { kv: &mut s.kv, table: &mut s.table }
}

/// The composed app, pre-linked, and the store and variables its instances share.
pub struct EdgeHost {
    pre: ProxyPre<RequestState>,
    kv: SharedKv,
    variables: Variables,
    /// The instances handling requests right now (one task each).
    running: std::sync::Mutex<Vec<tokio::task::AbortHandle>>,
}

impl EdgeHost {
    /// Prepares `component` (a composed front + gate) to serve over `kv`, with `variables`.
    pub fn new(component: &[u8], kv: impl Into<SharedKv>, variables: Variables) -> anyhow::Result<Arc<Self>> {
        let engine = Engine::new(&Config::new())?;
        let component = Component::new(&engine, component)
            .map_err(anyhow::Error::from)
            .context("compiling the composed app")?;
        Self::from_compiled(&component, kv, variables)
    }

    /// Like [`EdgeHost::new`] for an app already compiled (tests compile it once per process).
    pub fn from_compiled(
        component: &Component,
        kv: impl Into<SharedKv>,
        variables: Variables,
    ) -> anyhow::Result<Arc<Self>> {
        let kv = kv.into();
        let engine = component.engine();
        let mut linker = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        keyvalue::add_to_linker(&mut linker, kv_view)?;
        crate::variables::add_to_linker(&mut linker, |s: &mut RequestState| &mut s.variables)?;
        let pre = ProxyPre::new(linker.instantiate_pre(component)?)?;
        Ok(Arc::new(Self { pre, kv, variables, running: std::sync::Mutex::new(Vec::new()) }))
    }

    /// The front and gate this crate was built with, composed, over `kv`.
    pub fn built(kv: impl Into<SharedKv>, variables: Variables) -> anyhow::Result<Arc<Self>> {
        Self::new(&crate::compose::compose_built()?, kv, variables)
    }

    /// The key-value store all instances share.
    pub fn kv(&self) -> &SharedKv {
        &self.kv
    }

    /// Stops every instance handling a request now, between two of its host calls, as a
    /// crash or an evicted serverless instance would: no cleanup runs. Returns how many.
    pub fn stop_instances(&self) -> usize {
        let mut running = self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let stopped = running.iter().filter(|t| !t.is_finished()).count();
        running.drain(..).for_each(|t| t.abort());
        stopped
    }

    async fn handle(
        &self,
        req: hyper::Request<Incoming>,
    ) -> anyhow::Result<hyper::Response<HyperOutgoingBody>> {
        let state = RequestState {
            wasi: WasiCtx::builder().inherit_stderr().build(),
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
            kv: self.kv.clone(),
            variables: self.variables.clone(),
        };
        let mut store = Store::new(self.pre.engine(), state);
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let req = store.data_mut().http().new_incoming_request(Scheme::Http, req)?;
        let out = store.data_mut().http().new_response_outparam(sender)?;
        let pre = self.pre.clone();
        // The handler runs on past the response (store-first streaming), in its own task.
        let task = tokio::spawn(async move {
            let proxy = pre.instantiate_async(&mut store).await?;
            proxy.wasi_http_incoming_handler().call_handle(&mut store, req, out).await
        });
        {
            let mut running = self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            running.retain(|t| !t.is_finished());
            running.push(task.abort_handle());
        }
        match receiver.await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => match task.await {
                Ok(Ok(())) => anyhow::bail!("the app never set a response"),
                Ok(Err(e)) => Err(anyhow::Error::from(e).context("the app failed before it set a response")),
                Err(e) => Err(e.into()),
            },
        }
    }

    /// Serves `/` (the app routes `/mcp`) on a listener the caller bound (tests bind port 0).
    /// With [`Tcp::NoDelay`] every accepted socket gets `TCP_NODELAY`; with [`Tcp::Nagle`] it
    /// does not, as on a host that owns the socket and leaves Nagle's algorithm on (what Spin's
    /// front must then cope with by coalescing its own writes).
    pub async fn serve_on(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        tcp: Tcp,
    ) -> anyhow::Result<()> {
        tracing::info!("Spin app (front + gate-kv) on http://{}/mcp ({tcp:?})", listener.local_addr()?);
        loop {
            let (client, _) = listener.accept().await?;
            tcp.apply(&client);
            let host = Arc::clone(&self);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let host = Arc::clone(&host);
                    async move {
                        Ok::<_, std::convert::Infallible>(match host.handle(req).await {
                            Ok(resp) => resp,
                            Err(e) => {
                                tracing::error!("request failed: {e:#}");
                                internal_error()
                            }
                        })
                    }
                });
                if let Err(e) = http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(client), service)
                    .await
                {
                    tracing::debug!("connection ended: {e}");
                }
            });
        }
    }

    pub async fn serve(self: Arc<Self>, addr: SocketAddr, tcp: Tcp) -> anyhow::Result<()> {
        self.serve_on(tokio::net::TcpListener::bind(addr).await?, tcp).await
    }

    /// Serves on `addr` until SIGTERM or SIGINT (a deploy), then drains: the listener closes,
    /// the handlers running now (calls, followers) get up to `drain_for` to finish, and those
    /// still running are stopped. A handler gets no signal to give its calls up (Spin has no
    /// such hook), so a stopped call's client gets its `-32001` once the call's lease passes.
    pub async fn serve_until_stopped(
        self: Arc<Self>,
        addr: SocketAddr,
        tcp: Tcp,
        drain_for: std::time::Duration,
    ) -> anyhow::Result<()> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            served = Arc::clone(&self).serve_on(listener, tcp) => served,
            _ = terminate.recv() => self.drain(drain_for).await,
            _ = tokio::signal::ctrl_c() => self.drain(drain_for).await,
        }
    }

    /// Handlers running now.
    pub fn running(&self) -> usize {
        let mut running = self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        running.retain(|t| !t.is_finished());
        running.len()
    }

    async fn drain(&self, drain_for: std::time::Duration) -> anyhow::Result<()> {
        tracing::info!(
            running = self.running(),
            drain_ms = drain_for.as_millis() as u64,
            "stopping: draining"
        );
        let deadline = tokio::time::Instant::now() + drain_for;
        while self.running() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        tracing::info!(stopped = self.stop_instances(), "stopped");
        Ok(())
    }
}

fn internal_error() -> hyper::Response<HyperOutgoingBody> {
    let body = Empty::<Bytes>::new().map_err(|never| match never {}).boxed_unsync();
    let mut resp = hyper::Response::new(body);
    *resp.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
    resp
}
