//! The `append` tool's journal: one line per call, at most [`MAX_JOURNAL_LINES`], read in
//! pages; kept by the host (a file, or the store many instances share). A line is appended
//! once per (session, request id), and an outcome that is not known is reported as such.

use resume_gate::RequestId;

use crate::jsonrpc;

/// Why an `append` wrote no line it can name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppendError {
    /// The journal holds [`MAX_JOURNAL_LINES`]; nothing was written.
    Full,
    /// Nothing was written (the store refused before the write was sent).
    Failed(String),
    /// The write was sent and no answer came (a timeout, a lost connection): the line may or
    /// may not be there. Never reported as a failure, since it can still land.
    Unknown(String),
}

/// A run of the journal's lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalPage {
    pub lines: Vec<String>,
    pub total: u64,
}

/// The key-value calls of a journal kept in a store that many instances share (the Spin app,
/// host-example `--store`). Every key carries the hash tag `{journal}`, so a Redis Cluster keeps
/// the journal on one shard and a script may touch all of it; none starts with the gate's
/// `rg/`, so the gate's garbage collection never takes one.
///
/// A line is appended once per request: `append_once` first looks for the line number its
/// request key names, so a retry of the same request (after a timeout, say) finds the line
/// instead of writing it again. Over plain key-value calls that is `get`, then `increment` to
/// number the line, then the line, then the request key; a writer that dies between two of
/// them leaves a numbered gap, which readers skip, so no lost write hides later lines. A store
/// with scripts (Redis) overrides `append_once` with one atomic script.
pub trait JournalKv {
    fn increment(&self, key: &str, delta: i64) -> Result<i64, String>;
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String>;
    fn set(&self, key: &str, value: &[u8]) -> Result<(), String>;

    /// Appends `line` unless the request `request_key` names appended one already; the line's
    /// number. A failure after a write was sent is [`AppendError::Unknown`].
    fn append_once(&self, request_key: &str, line: &str) -> Result<u64, AppendError> {
        append_once_by_calls(self, request_key, line)
    }
}

/// [`JournalKv::append_once`] over plain key-value calls (see the trait's docs).
pub fn append_once_by_calls(
    kv: &(impl JournalKv + ?Sized),
    request_key: &str,
    line: &str,
) -> Result<u64, AppendError> {
    if let Some(n) = kv.get(request_key).map_err(AppendError::Failed)? {
        return parse_line_number(&n).ok_or_else(|| AppendError::Failed("an unreadable request key".into()));
    }
    let max = MAX_JOURNAL_LINES as i64;
    let n = kv.increment(JOURNAL_COUNT_KEY, 1).map_err(AppendError::Unknown)?;
    if n > max {
        let _ = kv.increment(JOURNAL_COUNT_KEY, -1);
        return Err(AppendError::Full);
    }
    kv.set(&journal_line_key(n), line.as_bytes()).map_err(AppendError::Unknown)?;
    kv.set(request_key, n.to_string().as_bytes()).map_err(AppendError::Unknown)?;
    u64::try_from(n).map_err(|_| AppendError::Failed("journal count out of range".into()))
}

/// The journal's line counter.
pub const JOURNAL_COUNT_KEY: &str = "journal/{journal}/count";

/// The keys of the journal's lines: this prefix, then the line number (6 digits).
pub const JOURNAL_LINE_PREFIX: &str = "journal/{journal}/line/";

pub fn journal_line_key(n: i64) -> String {
    format!("{JOURNAL_LINE_PREFIX}{n:06}")
}

/// The key naming the line a request appended: by session and JSON-RPC id (its JSON, so that
/// `1` and `"1"` differ).
pub fn journal_request_key(session: &str, request: &RequestId) -> String {
    // The session's length first: a session id may hold `/`.
    format!("journal/{{journal}}/req/{}/{session}/{}", session.len(), jsonrpc::id_value(request))
}

fn parse_line_number(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

/// Appends a line to the journal in `kv` (at most [`MAX_JOURNAL_LINES`]), once for `request`
/// of `session`; its number.
pub fn append_to_kv_journal(
    kv: &impl JournalKv,
    session: &str,
    request: &RequestId,
    line: &str,
) -> Result<u64, AppendError> {
    kv.append_once(&journal_request_key(session, request), line)
}

/// Up to `limit` lines from line `from` (0-based) of the journal in `kv`, skipping a number
/// whose line is missing (its writer died, or has not stored it yet). The count is read by
/// adding 0: a counter's bytes are the backend's own (8 bytes on SQLite, ASCII decimal on
/// Redis).
pub fn kv_journal_page(kv: &impl JournalKv, from: u64, limit: u64) -> Result<JournalPage, String> {
    let total = kv.increment(JOURNAL_COUNT_KEY, 0)?.clamp(0, MAX_JOURNAL_LINES as i64);
    let first = i64::try_from(from).unwrap_or(i64::MAX).saturating_add(1);
    let last = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(first - 1).min(total);
    let mut lines = Vec::new();
    for n in first..=last {
        if let Some(bytes) = kv.get(&journal_line_key(n))? {
            lines.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    Ok(JournalPage { lines, total: u64::try_from(total).unwrap_or(0) })
}

/// Lines the journal holds; `append` fails beyond (a host enforces it where it writes).
pub const MAX_JOURNAL_LINES: u64 = 1000;

/// Lines one `journal` call returns at most, and by default.
pub const JOURNAL_PAGE_LINES: u64 = 100;

/// Bytes of lines one `journal` page holds at most (at least one line), so that a page is
/// one event the gate can buffer.
pub const JOURNAL_PAGE_BYTES: usize = 256 * 1024;
