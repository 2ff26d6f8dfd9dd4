//! How native hosts set up an accepted socket.
//!
//! With Nagle's algorithm on, each small write after the first waits for the client's delayed
//! ACK (about 40 ms on Linux): a kept-alive client calling back to back pays it on every call.
//! So every host sets `TCP_NODELAY`; `Tcp::Nagle` exists only for measuring what a host's own
//! write coalescing achieves where it cannot (Spin owns the socket).

/// How accepted sockets are set up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tcp {
    /// `TCP_NODELAY`: every write leaves at once (the default).
    #[default]
    NoDelay,
    /// Nagle's algorithm left on: for measuring a host's own write coalescing only.
    Nagle,
}

impl Tcp {
    /// Sets up an accepted socket.
    pub fn apply(self, socket: &tokio::net::TcpStream) {
        if let Err(e) = socket.set_nodelay(self == Tcp::NoDelay) {
            tracing::warn!("setting TCP_NODELAY failed: {e}");
        }
    }
}
