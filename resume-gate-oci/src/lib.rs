//! The gate's components as OCI artifacts: where edge platforms pull Wasm from.
//!
//! A push writes the layout `wkg oci push` writes (an OCI image manifest, a
//! `application/vnd.wasm.config.v0+json` config naming the component's world, one
//! `application/wasm` layer), with the same libraries (`oci-client`, `oci-wasm`), so anything
//! that pulls components from a registry pulls these. A pull checks what a reference pins
//! (`oci-client` does): the manifest's digest, and every blob's against the manifest.
//!
//! A registry on this machine (`localhost`, `127.0.0.1`, `[::1]`) is spoken to over plain
//! HTTP, as a development registry is; every other one over HTTPS. Credentials come from
//! `REGISTRY_USERNAME` and `REGISTRY_PASSWORD` (anonymous without them) and are never printed.

use anyhow::{Context, Result, bail};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use oci_wasm::{WasmClient, WasmConfig};
use sha2::{Digest, Sha256};

/// Who the registry is told we are: from the environment, or nobody.
pub fn auth_from_env() -> RegistryAuth {
    match (std::env::var("REGISTRY_USERNAME"), std::env::var("REGISTRY_PASSWORD")) {
        (Ok(user), Ok(password)) if !user.is_empty() => RegistryAuth::Basic(user, password),
        _ => RegistryAuth::Anonymous,
    }
}

/// Parses a reference (`registry/repository:tag` or `…@sha256:…`).
pub fn reference(text: &str) -> Result<Reference> {
    text.parse().with_context(|| format!("not an OCI reference: {text}"))
}

/// What an error adds when no credentials were given.
fn hint(auth: &RegistryAuth) -> &'static str {
    match auth {
        RegistryAuth::Anonymous => " (anonymously: REGISTRY_USERNAME and REGISTRY_PASSWORD were not set)",
        _ => "",
    }
}

fn client_for(reference: &Reference) -> WasmClient {
    let registry = reference.resolve_registry();
    let host = registry.rsplit_once(':').map_or(registry, |(host, _)| host);
    let local = matches!(host, "localhost" | "127.0.0.1" | "[::1]");
    let protocol = if local { ClientProtocol::Http } else { ClientProtocol::Https };
    WasmClient::new(Client::new(ClientConfig { protocol, ..ClientConfig::default() }))
}

/// Pushes a component under `to` (a tag); returns the reference pinned by the manifest's
/// digest, the one to deploy.
pub async fn push(component: &[u8], to: &Reference, auth: &RegistryAuth) -> Result<Reference> {
    let (config, layer) = WasmConfig::from_raw_component(component.to_vec(), None)
        .context("reading the component's world (is it a component?)")?;
    let client = client_for(to);
    client
        .push(to, auth, layer, config, None)
        .await
        .with_context(|| format!("pushing to {to}{}", hint(auth)))?;
    let digest =
        client.fetch_manifest_digest(to, auth).await.with_context(|| format!("reading {to}'s digest"))?;
    Ok(to.clone_with_digest(digest))
}

/// Pulls the component `from` names, its digests checked; a reference without a digest gets
/// whatever its tag names now.
pub async fn pull(from: &Reference, auth: &RegistryAuth) -> Result<Vec<u8>> {
    let image =
        client_for(from).pull(from, auth).await.with_context(|| format!("pulling {from}{}", hint(auth)))?;
    let [layer] = image.layers.as_slice() else { bail!("{from}: not one Wasm layer") };
    Ok(layer.data.to_vec())
}

/// `sha256:…` of some bytes, as OCI names blobs.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}
