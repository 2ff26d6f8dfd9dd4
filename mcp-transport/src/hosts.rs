//! Which names a server answers to: the defence against DNS rebinding.
//!
//! A browser page on a hostile site can make its own name resolve to `127.0.0.1` and then talk
//! to a local MCP server as if it were that site; the `Host` it sends is still the hostile
//! name. So a server answers only requests whose `Host` (and `Origin`, when a browser sends
//! one) names one of its allowed hosts: localhost by default, the names it is deployed under
//! when configured (`--allowed-host`, a Spin variable).
//!
//! An entry is `NAME` (any port) or `NAME:PORT` (that port only); IPv6 addresses are written
//! in brackets (`[::1]`, `[::1]:8080`), bare ones are bracketed. Names compare without case
//! and without a trailing dot.

/// The localhost names, allowed when nothing else is configured.
pub const LOCALHOST: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Longest entry or authority considered (a DNS name is at most 253 bytes).
const MAX_AUTHORITY: usize = 300;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowedHosts {
    entries: Vec<Entry>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    host: String,
    port: Option<u16>,
}

impl Default for AllowedHosts {
    fn default() -> Self {
        Self::localhost()
    }
}

impl AllowedHosts {
    /// Only the localhost names.
    pub fn localhost() -> Self {
        Self::new(LOCALHOST)
    }

    /// The given entries; ones that are not a host name or address (with an optional port)
    /// are ignored, see [`AllowedHosts::invalid`] to report them.
    pub fn new<S: AsRef<str>>(entries: impl IntoIterator<Item = S>) -> Self {
        Self { entries: entries.into_iter().filter_map(|e| Entry::parse(e.as_ref())).collect() }
    }

    /// The entries of `list` that cannot be used, for a start-up error.
    pub fn invalid<S: AsRef<str>>(list: impl IntoIterator<Item = S>) -> Vec<String> {
        list.into_iter()
            .filter(|e| Entry::parse(e.as_ref()).is_none())
            .map(|e| e.as_ref().to_owned())
            .collect()
    }

    /// A comma-separated list (a Spin variable, an environment variable); empty → localhost.
    pub fn from_list(list: &str) -> Self {
        let entries: Vec<&str> = list.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
        if entries.is_empty() { Self::localhost() } else { Self::new(entries) }
    }

    /// The entry for an address a server is bound to (`[…]` for IPv6).
    pub fn entry_for(ip: std::net::IpAddr) -> String {
        match ip {
            std::net::IpAddr::V4(a) => a.to_string(),
            std::net::IpAddr::V6(a) => format!("[{a}]"),
        }
    }

    /// Also allows `entry`.
    pub fn with(mut self, entry: &str) -> Self {
        self.entries.extend(Entry::parse(entry));
        self
    }

    /// Whether a `Host` header value (`name`, `name:port`, `[v6]:port`) is allowed.
    pub fn allows(&self, authority: &str) -> bool {
        let Some(asked) = Entry::parse(authority) else { return false };
        self.entries.iter().any(|e| e.host == asked.host && e.port.is_none_or(|p| Some(p) == asked.port))
    }

    /// Whether an `Origin` header value (`scheme://authority`) names an allowed host; an opaque
    /// origin (`null`) never does.
    pub fn allows_origin(&self, origin: &str) -> bool {
        let Some((scheme, rest)) = origin.split_once("://") else { return false };
        if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
            return false;
        }
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        self.allows(authority)
    }

    /// Whether a request with these `Host` and `Origin` headers (absent: `None`) may be
    /// answered: every path a server serves (`/mcp`, `/metrics`) asks this.
    pub fn admits(&self, host: Option<&str>, origin: Option<&str>) -> bool {
        host.is_none_or(|h| self.allows(h)) && origin.is_none_or(|o| self.allows_origin(o))
    }
}

impl Entry {
    fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text.is_empty() || text.len() > MAX_AUTHORITY || text.contains('@') {
            return None;
        }
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (v6, after) = rest.split_once(']')?;
            v6.parse::<std::net::Ipv6Addr>().ok()?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':')?.parse().ok()?),
            };
            (format!("[{}]", v6.to_ascii_lowercase()), port)
        } else if text.matches(':').count() > 1 {
            // A bare IPv6 address.
            (format!("[{}]", text.parse::<std::net::Ipv6Addr>().ok()?), None)
        } else {
            match text.split_once(':') {
                Some((h, p)) => (h.to_ascii_lowercase(), Some(p.parse().ok()?)),
                None => (text.to_ascii_lowercase(), None),
            }
        };
        let host = host.strip_suffix('.').map(str::to_owned).unwrap_or(host);
        let name_ok = host.starts_with('[')
            || (!host.is_empty()
                && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'));
        name_ok.then_some(Self { host, port })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_default_only_localhost_names_are_allowed_on_any_port() {
        let a = AllowedHosts::default();
        for ok in ["localhost", "localhost:8080", "127.0.0.1:3000", "[::1]:9", "LOCALHOST", "localhost."] {
            assert!(a.allows(ok), "{ok}");
        }
        for refused in
            ["evil.example", "evil.example:8080", "127.0.0.2", "localhost.evil.example", "", "[::2]"]
        {
            assert!(!a.allows(refused), "{refused}");
        }
    }

    #[test]
    fn a_bare_name_matches_every_port_and_a_name_with_a_port_only_that_port() {
        let a = AllowedHosts::new(["mcp.example.com", "api.example.com:8443"]);
        assert!(
            a.allows("mcp.example.com") && a.allows("mcp.example.com:443") && a.allows("Mcp.Example.Com:80")
        );
        assert!(a.allows("api.example.com:8443"));
        assert!(!a.allows("api.example.com") && !a.allows("api.example.com:443"));
        assert!(!a.allows("localhost"), "configured names replace the localhost default");
    }

    #[test]
    fn ipv6_addresses_match_with_or_without_brackets_in_the_setting() {
        let a = AllowedHosts::new(["::1", "[2001:db8::5]:8080"]);
        assert!(a.allows("[::1]:3000") && a.allows("[2001:db8::5]:8080"));
        assert!(!a.allows("[2001:db8::5]:80"));
    }

    #[test]
    fn origins_must_be_http_or_https_and_name_an_allowed_host() {
        let a = AllowedHosts::new(["mcp.example.com"]);
        assert!(
            a.allows_origin("https://mcp.example.com") && a.allows_origin("http://mcp.example.com:8080/")
        );
        for refused in [
            "null",
            "https://evil.example",
            "file://mcp.example.com",
            "mcp.example.com",
            "https://u@mcp.example.com",
        ] {
            assert!(!a.allows_origin(refused), "{refused}");
        }
    }

    #[test]
    fn unusable_entries_are_reported_and_ignored() {
        let list = ["ok.example", "bad name", "x:notaport", "[zz::]", ""];
        assert_eq!(AllowedHosts::invalid(list), ["bad name", "x:notaport", "[zz::]", ""]);
        assert_eq!(AllowedHosts::new(list), AllowedHosts::new(["ok.example"]));
        assert_eq!(AllowedHosts::from_list(" , "), AllowedHosts::localhost());
        assert!(AllowedHosts::from_list("a.example, b.example:81").allows("b.example:81"));
    }
}
