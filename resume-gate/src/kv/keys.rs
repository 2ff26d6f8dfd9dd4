//! Where each record lives: the key layout of the module docs, and parsing a key back for
//! garbage collection and tools. Session ids are escaped (`%`, `/`, `{`, `}`) so that no key of
//! one session is a prefix of another's and the Redis Cluster hash tag is the whole id.

use sha2::{Digest, Sha256};

use crate::stream::{DataKey, RequestId, StreamNo};

pub(crate) const SESSION_COUNT: &str = "rg/sessions";
/// Counter: sessions created or removed so far (each counts itself before it changes the
/// session count); garbage collection reconciles the count only while it stands still.
pub(crate) const SESSION_CHANGES: &str = "rg/changes";
/// Garbage collection's record of the session count's reconciliation (`collect`).
pub(crate) const COUNT_CHECK: &str = "rg/count-check";
/// Counter: bytes every session holds, as counted against `max-total-bytes`.
pub(crate) const TOTAL_BYTES: &str = "rg/bytes";
pub(crate) const QUEUE_TAIL: &str = "rg/q/tail";
pub(crate) const QUEUE_HEAD: &str = "rg/q/head";
pub(crate) fn escape(session: &str) -> String {
    let mut out = String::with_capacity(session.len());
    for c in session.chars() {
        match c {
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            c => out.push(c),
        }
    }
    out
}

pub(crate) fn unescape(escaped: &str) -> String {
    escaped.replace("%2F", "/").replace("%7B", "{").replace("%7D", "}").replace("%25", "%")
}

/// The session record's key.
pub fn session_key(session: &str) -> String {
    format!("rg/{{{}}}/s", escape(session))
}

/// Counter: bytes the session holds, as counted against `max-bytes-per-session`.
pub(crate) fn bytes_key(session: &str) -> String {
    format!("rg/{{{}}}/b", escape(session))
}

pub(crate) fn stream_counter_key(session: &str) -> String {
    format!("rg/{{{}}}/n", escape(session))
}

/// The key of a stream's record.
pub fn stream_key(session: &str, no: StreamNo) -> String {
    format!("rg/{{{}}}/t/{no}", escape(session))
}

/// The key of one event's data.
pub fn event_key(session: &str, no: StreamNo, key: DataKey) -> String {
    format!("rg/{{{}}}/e/{no}/{:x}.{:x}", escape(session), key.writer, key.n)
}

/// The data key an event key names.
pub(crate) fn parse_data_key(key: &str) -> Option<DataKey> {
    let (writer, n) = key.rsplit_once('/')?.1.split_once('.')?;
    Some(DataKey { writer: u64::from_str_radix(writer, 16).ok()?, n: u64::from_str_radix(n, 16).ok()? })
}

/// The mark garbage collection leaves on a claim no stream holds: when it first saw it so.
pub(crate) fn claim_mark_key(claim: &str) -> Option<String> {
    let (session, id) = claim.rsplit_once("/r/")?;
    Some(format!("{session}/x/{id}"))
}

pub(crate) fn queue_key(slot: i64) -> String {
    format!("rg/q/{slot}")
}

pub(crate) fn slot_key(session: &str) -> String {
    format!("rg/{{{}}}/p", escape(session))
}

/// The key of a request id's claim.
pub fn claim_key(session: &str, id: &RequestId) -> String {
    let id = match id {
        RequestId::Number(n) => format!("n{n}"),
        RequestId::Text(t) => format!("t{}", hex::encode(&Sha256::digest(t.as_bytes())[..16])),
    };
    format!("rg/{{{}}}/r/{id}", escape(session))
}

/// The global counters and records, which outlive every session: a store that expires what
/// sessions leave never expires these (a counter that vanished would count from zero again).
pub fn outlives_sessions(key: &str) -> bool {
    [SESSION_COUNT, SESSION_CHANGES, COUNT_CHECK, TOTAL_BYTES, QUEUE_TAIL, QUEUE_HEAD].contains(&key)
}

/// A session's byte count, which a store that expires what sessions leave keeps twice as long:
/// it is written with every change of the session's records, so it outlives them, and garbage
/// collection takes what it still counts off the total before it goes.
pub fn outlives_its_session(key: &str) -> bool {
    matches!(parse_key(key), Some((_, KeyKind::Bytes)))
}

/// Every global key; all others belong to one session.
pub fn is_global_key(key: &str) -> bool {
    [SESSION_COUNT, SESSION_CHANGES, COUNT_CHECK, TOTAL_BYTES].contains(&key) || key.starts_with("rg/q/")
}

/// What a key of the layout holds: for tests and tools that look into a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Session,
    StreamCounter,
    QueueSlot,
    /// The bytes the session holds (its count against `max-bytes-per-session`).
    Bytes,
    Stream(StreamNo),
    Event(StreamNo),
    Claim,
    /// Garbage collection's mark on a claim no stream held when it looked.
    ClaimMark,
}

/// The session a key belongs to (unescaped) and what it holds; `None` for a global key or one
/// outside the layout.
pub fn parse_key(key: &str) -> Option<(String, KeyKind)> {
    let rest = key.strip_prefix("rg/{")?;
    let (session, rest) = rest.split_once("}/")?;
    let mut parts = rest.split('/');
    let kind = match (parts.next()?, parts.next(), parts.next(), parts.next()) {
        ("s", None, ..) => KeyKind::Session,
        ("n", None, ..) => KeyKind::StreamCounter,
        ("p", None, ..) => KeyKind::QueueSlot,
        ("b", None, ..) => KeyKind::Bytes,
        ("r", Some(_), None, _) => KeyKind::Claim,
        ("x", Some(_), None, _) => KeyKind::ClaimMark,
        ("t", Some(no), None, _) => KeyKind::Stream(no.parse().ok()?),
        ("e", Some(no), Some(_), None) => KeyKind::Event(no.parse().ok()?),
        _ => return None,
    };
    Some((unescape(session), kind))
}
