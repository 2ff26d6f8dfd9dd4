//! The `append` tool's journal: one line per call, in a file, or (`--store`) in the store every
//! process shares, where a line is appended once per (session, request id) by one atomic
//! script on Redis (`mcp_transport::journal`).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Mutex;

use gate_host::keyvalue::SharedKv;
use mcp_transport::journal::{self as kv_journal, AppendError, JournalKv, JournalPage, MAX_JOURNAL_LINES};
use resume_gate::RequestId;
use resume_gate::kv::Kv;
use resume_gate_redis::ScriptError;

pub enum Journal {
    File(FileJournal),
    Store(KvJournal),
}

impl Journal {
    /// The journal in the file at `path` (created on the first line).
    pub fn open(path: PathBuf) -> anyhow::Result<Self> {
        let lines = match std::fs::File::open(&path) {
            Ok(f) => std::io::BufReader::new(f).lines().count() as u64,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e.into()),
        };
        Ok(Self::File(FileJournal { path, lines: Mutex::new(lines) }))
    }

    /// The journal in the store `kv`, shared with every process that uses it.
    pub fn in_store(kv: SharedKv) -> Self {
        Self::Store(KvJournal { kv })
    }

    /// The Redis the journal is kept in, if it is (`--store`): tasks go there too.
    pub fn redis(&self) -> Option<&resume_gate_redis::RedisKv> {
        match self {
            Self::Store(KvJournal { kv: SharedKv::Redis(redis) }) => Some(redis),
            _ => None,
        }
    }

    pub fn append(&self, session: &str, request: &RequestId, line: &str) -> Result<u64, AppendError> {
        match self {
            Self::File(f) => f.append(line),
            Self::Store(kv) => kv_journal::append_to_kv_journal(kv, session, request, line),
        }
    }

    pub fn page(&self, from: u64, limit: u64) -> Result<JournalPage, String> {
        match self {
            Self::File(f) => f.page(from, limit),
            Self::Store(kv) => kv_journal::kv_journal_page(kv, from, limit),
        }
    }
}

/// One line per call, in a file.
pub struct FileJournal {
    path: PathBuf,
    lines: Mutex<u64>,
}

impl FileJournal {
    fn append(&self, line: &str) -> Result<u64, AppendError> {
        let mut count = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| AppendError::Failed(e.to_string()))?;
        if *count >= MAX_JOURNAL_LINES {
            return Err(AppendError::Full);
        }
        // One write of the whole line: a failed one may have written part of it.
        writeln!(f, "{line}").map_err(|e| AppendError::Unknown(e.to_string()))?;
        *count += 1;
        Ok(*count)
    }

    fn page(&self, from: u64, limit: u64) -> Result<JournalPage, String> {
        let count = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(JournalPage::default()),
            Err(e) => return Err(e.to_string()),
        };
        let skip = usize::try_from(from).unwrap_or(usize::MAX);
        let take = usize::try_from(limit).unwrap_or(usize::MAX);
        let lines = std::io::BufReader::new(file).lines().skip(skip).take(take);
        let lines = lines.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
        Ok(JournalPage { lines, total: *count })
    }
}

/// The journal in the store, kept as the Spin app keeps it; on Redis one atomic script appends.
pub struct KvJournal {
    kv: SharedKv,
}

impl JournalKv for KvJournal {
    fn increment(&self, key: &str, delta: i64) -> Result<i64, String> {
        self.kv.clone().increment(key, delta).map_err(|e| e.0)
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        self.kv.clone().get(key).map_err(|e| e.0)
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<(), String> {
        self.kv.clone().set(key, value).map_err(|e| e.0)
    }

    fn append_once(&self, request_key: &str, line: &str) -> Result<u64, AppendError> {
        let SharedKv::Redis(redis) = &self.kv else {
            return kv_journal::append_once_by_calls(self, request_key, line);
        };
        let (counter, prefix) = (kv_journal::JOURNAL_COUNT_KEY, kv_journal::JOURNAL_LINE_PREFIX);
        match redis.append_once(counter, request_key, prefix, line, MAX_JOURNAL_LINES) {
            Ok(Some(n)) => Ok(n),
            Ok(None) => Err(AppendError::Full),
            Err(ScriptError::NotSent(e)) => Err(AppendError::Failed(e.0)),
            Err(ScriptError::Unknown(e)) => Err(AppendError::Unknown(e.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_journal_is_bounded_and_pages() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path().join("journal.txt")).unwrap();
        let (s, id) = ("session", RequestId::Number(1));
        for i in 0..MAX_JOURNAL_LINES {
            assert_eq!(journal.append(s, &id, &format!("line {i}")), Ok(i + 1));
        }
        assert_eq!(journal.append(s, &id, "one too many"), Err(AppendError::Full));
        let page = journal.page(998, 100).unwrap();
        assert_eq!(page, JournalPage { lines: vec!["line 998".into(), "line 999".into()], total: 1000 });
        let reopened = Journal::open(dir.path().join("journal.txt")).unwrap();
        assert_eq!(reopened.append(s, &id, "still full after a restart"), Err(AppendError::Full));
    }
}
