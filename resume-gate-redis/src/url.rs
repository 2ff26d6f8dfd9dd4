//! The store's address as the operator gave it, and as everything else may see it.
//!
//! A Redis URL may carry a password (`redis://:PW@host`, ACL `redis://user:PW@host`). The
//! process needs it once, to connect; every log line, error and HTTP body shows
//! [`StoreUrl`]'s `Display`, which never holds it, and [`StoreUrl::scrub`] takes it out of any
//! text a dependency wrote (an error message that echoes what it was given).

use std::fmt;

use resume_gate::StoreError;

/// A `redis://`, `rediss://` or `redis+cluster://` URL whose password is never shown.
#[derive(Clone)]
pub struct StoreUrl {
    full: String,
    shown: String,
    password: Option<String>,
}

impl StoreUrl {
    /// Checks the scheme and takes the URL apart enough to hide its secret; the rest is checked
    /// by the client when it connects.
    pub fn parse(url: &str) -> Result<Self, StoreError> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(StoreError("a store URL is redis://[USER:PASSWORD@]HOST:PORT[/DB]".into()));
        };
        if !matches!(scheme, "redis" | "rediss" | "redis+cluster" | "rediss+cluster") {
            return Err(StoreError(format!(
                "a store URL starts with redis://, rediss://, redis+cluster:// or rediss+cluster://, not {scheme}://"
            )));
        }
        let authority_end = rest.find('/').unwrap_or(rest.len());
        let (authority, path) = rest.split_at(authority_end);
        let (shown, password) = match authority.rsplit_once('@') {
            Some((userinfo, host)) => {
                let (user, password) = userinfo.split_once(':').unwrap_or(("", userinfo));
                let password = (!password.is_empty()).then(|| password.to_owned());
                let user = if user.is_empty() { String::new() } else { format!("{user}:") };
                (format!("{scheme}://{user}***@{host}{path}"), password)
            }
            None => (url.to_owned(), None),
        };
        Ok(Self { full: url.to_owned(), shown, password })
    }

    /// The URL to connect with: only for the client, never for output.
    pub(crate) fn secret(&self) -> &str {
        &self.full
    }

    /// `rediss://` or `rediss+cluster://`: TLS.
    pub fn is_tls(&self) -> bool {
        self.full.starts_with("rediss")
    }

    /// `redis+cluster://HOST:PORT[,HOST:PORT…]`: a Redis Cluster, reached through these nodes.
    pub fn is_cluster(&self) -> bool {
        self.scheme().ends_with("+cluster")
    }

    fn scheme(&self) -> &str {
        self.full.split_once("://").map_or("", |(scheme, _)| scheme)
    }

    /// A cluster's seed nodes, each as a plain `redis://` (or `rediss://`) URL with the
    /// credentials: only for the client, never for output.
    pub(crate) fn cluster_nodes(&self) -> Vec<String> {
        let scheme = if self.is_tls() { "rediss" } else { "redis" };
        let rest = self.full.split_once("://").map_or("", |(_, rest)| rest);
        let (userinfo, hosts) = match rest.rsplit_once('@') {
            Some((userinfo, hosts)) => (format!("{userinfo}@"), hosts),
            None => (String::new(), rest),
        };
        let hosts = hosts.split('/').next().unwrap_or_default();
        hosts.split(',').filter(|h| !h.is_empty()).map(|h| format!("{scheme}://{userinfo}{h}")).collect()
    }

    /// `text` with the password (and the whole URL) replaced by what `Display` shows.
    pub fn scrub(&self, text: &str) -> String {
        let text = text.replace(&self.full, &self.shown);
        match &self.password {
            Some(pw) => text.replace(pw.as_str(), "***"),
            None => text,
        }
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({})", self.shown)
    }
}

#[cfg(test)]
mod tests {
    use super::StoreUrl;

    #[test]
    fn the_password_is_never_shown() {
        for (url, shown) in [
            ("redis://:s3cret@127.0.0.1:6379", "redis://***@127.0.0.1:6379"),
            ("redis://app:s3cret@h:1/2", "redis://app:***@h:1/2"),
            ("rediss://app:s3cret@h:1", "rediss://app:***@h:1"),
            ("redis://h:1/0", "redis://h:1/0"),
        ] {
            let parsed = StoreUrl::parse(url).unwrap();
            assert_eq!(parsed.to_string(), shown);
            assert!(!format!("{parsed:?}").contains("s3cret"));
            if url.contains("s3cret") {
                assert!(!parsed.scrub(&format!("failed: {url}: s3cret refused")).contains("s3cret"));
            }
        }
    }

    #[test]
    fn a_cluster_url_names_its_seed_nodes_and_shows_no_password() {
        let url = StoreUrl::parse("redis+cluster://app:s3cret@h1:1,h2:2").unwrap();
        assert!(url.is_cluster() && !url.is_tls());
        assert_eq!(url.to_string(), "redis+cluster://app:***@h1:1,h2:2");
        assert_eq!(url.cluster_nodes(), ["redis://app:s3cret@h1:1", "redis://app:s3cret@h2:2"]);
        let tls = StoreUrl::parse("rediss+cluster://h1:1").unwrap();
        assert!(tls.is_cluster() && tls.is_tls());
        assert_eq!(tls.cluster_nodes(), ["rediss://h1:1"]);
    }

    #[test]
    fn other_schemes_are_refused_without_echoing_the_url() {
        let e = StoreUrl::parse("http://:s3cret@h").unwrap_err();
        assert!(!e.0.contains("s3cret"), "{}", e.0);
        assert!(StoreUrl::parse("no scheme").is_err());
    }
}
