//! An HTTP request as the transport reads it: what every host turns its own request into.

pub const SESSION_HEADER: &str = "mcp-session-id";

pub const VERSION_HEADER: &str = "mcp-protocol-version";

pub const LAST_EVENT_ID_HEADER: &str = "last-event-id";

/// An HTTP request, as the host read it. Header names are lowercase.
#[derive(Clone, Debug, Default)]
pub struct HttpRequest {
    pub method: String,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice())
    }

    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name).and_then(|v| std::str::from_utf8(v).ok()).map(str::trim)
    }
}

/// Largest request body a host reads (`413` beyond); a host stops reading there.
pub const MAX_BODY_BYTES: usize = 4 << 20;
