//! Sessions: the unit no event may ever leave.
//!
//! A session is an `Mcp-Session-Id`. Its epoch is fresh randomness drawn whenever the session
//! is opened or re-issued, so ids minted before a restart or a re-issue can never match again.

use serde::{Deserialize, Serialize};

use crate::config::Millis;
use crate::error::GateError;
use crate::event_id::{SessionTag, session_tag};
use crate::stream::StreamNo;

/// Longest session id accepted.
pub const MAX_SESSION_ID_LEN: usize = 128;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionMeta {
    pub id: String,
    pub tag: SessionTag,
    pub epoch: u64,
    /// The live standalone stream, if any: a new one supersedes it.
    pub standalone: Option<StreamNo>,
    /// Every stream record the session holds (live streams and tombstones), oldest first;
    /// at most `max-streams-per-session`.
    pub streams: Vec<StreamNo>,
    pub last_active: Millis,
}

impl SessionMeta {
    pub fn new(id: &str, epoch: u64, now: Millis) -> Self {
        Self {
            id: id.to_owned(),
            tag: session_tag(id),
            epoch,
            standalone: None,
            streams: Vec::new(),
            last_active: now,
        }
    }
}

/// MCP session ids are visible ASCII (0x21–0x7E); we also bound their length.
pub fn validate_session_id(id: &str) -> Result<(), GateError> {
    let ok =
        !id.is_empty() && id.len() <= MAX_SESSION_ID_LEN && id.bytes().all(|b| (0x21..=0x7e).contains(&b));
    if ok { Ok(()) } else { Err(GateError::InvalidSessionId) }
}

/// Epoch from host-supplied entropy, guaranteed to differ from the previous one.
pub fn next_epoch(entropy: [u8; 8], previous: Option<u64>) -> u64 {
    let epoch = u64::from_le_bytes(entropy);
    if Some(epoch) == previous { epoch ^ 1 } else { epoch }
}
