//! Event ids: what a client hands back as `Last-Event-ID`.
//!
//! An id names the session epoch, a tag of the session it was minted for, the stream within
//! the session and the sequence number within the stream, and optionally an HMAC so that a
//! client cannot forge or alter one:
//!
//! ```text
//! rg1.<epoch: 16 hex>.<session tag: 12 hex>.<stream: decimal>.<seq: decimal>[.<mac: 32 hex>]
//! ```
//!
//! The parser is total: it takes any bytes of any length and either yields the one canonical
//! id those bytes spell or refuses them. Canonical means `format(parse(s)) == s`, so no two
//! spellings denote one id and a MAC never has to cover more than the fields.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// Longest id the gate mints or accepts (DESIGN.md: at most 128 bytes).
pub const MAX_LEN: usize = 128;

const PREFIX: &[u8] = b"rg1";
const MAC_LEN: usize = 16;
const TAG_LEN: usize = 6;
const MAC_DOMAIN: &[u8] = b"resume-gate/event-id/v1";

/// Binds an id to the session it was minted for: the first bytes of SHA-256(session id).
pub type SessionTag = [u8; TAG_LEN];

pub fn session_tag(session_id: &str) -> SessionTag {
    let digest = Sha256::digest(session_id.as_bytes());
    let mut tag = [0; TAG_LEN];
    tag.copy_from_slice(&digest[..TAG_LEN]);
    tag
}

/// The fields of an event id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventId {
    pub epoch: u64,
    pub session: SessionTag,
    pub stream: u64,
    pub seq: u64,
    pub mac: Option<[u8; MAC_LEN]>,
}

/// A key that signs and verifies event ids.
#[derive(Clone)]
pub struct SigningKey(Hmac<Sha256>);

impl SigningKey {
    /// `None` only if HMAC refused the key, which it does for no length.
    pub fn new(key: &[u8]) -> Option<Self> {
        Hmac::new_from_slice(key).ok().map(Self)
    }

    fn tagger(&self, id: &EventId) -> Hmac<Sha256> {
        let mut mac = self.0.clone();
        mac.update(MAC_DOMAIN);
        mac.update(&id.epoch.to_be_bytes());
        mac.update(&id.session);
        mac.update(&id.stream.to_be_bytes());
        mac.update(&id.seq.to_be_bytes());
        mac
    }

    fn sign(&self, id: &EventId) -> [u8; MAC_LEN] {
        let full = self.tagger(id).finalize().into_bytes();
        let mut out = [0; MAC_LEN];
        out.copy_from_slice(&full[..MAC_LEN]);
        out
    }

    /// Constant-time check of the id's MAC; an id without one never verifies.
    pub fn verifies(&self, id: &EventId) -> bool {
        match &id.mac {
            Some(mac) => self.tagger(id).verify_truncated_left(mac).is_ok(),
            None => false,
        }
    }
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

impl EventId {
    /// A new id, signed when a key is given.
    pub fn mint(epoch: u64, session: SessionTag, stream: u64, seq: u64, key: Option<&SigningKey>) -> Self {
        let mut id = Self { epoch, session, stream, seq, mac: None };
        id.mac = key.map(|k| k.sign(&id));
        id
    }

    /// The wire form; always printable ASCII without `:`, space, CR, LF or NUL, ≤ 128 bytes.
    pub fn format(&self) -> String {
        let mut s = String::with_capacity(MAX_LEN);
        s.push_str("rg1.");
        push_hex(&mut s, &self.epoch.to_be_bytes());
        s.push('.');
        push_hex(&mut s, &self.session);
        let mut digits = itoa::Buffer::new();
        s.push('.');
        s.push_str(digits.format(self.stream));
        s.push('.');
        s.push_str(digits.format(self.seq));
        if let Some(mac) = &self.mac {
            s.push('.');
            push_hex(&mut s, mac);
        }
        s
    }

    /// The length of `format()` for the id of `seq` on `stream`, without minting it.
    pub fn formatted_len(stream: u64, seq: u64, signed: bool) -> usize {
        let digits = |n: u64| n.checked_ilog10().map_or(1, |d| d as usize + 1);
        let mac = if signed { 1 + 2 * MAC_LEN } else { 0 };
        "rg1.".len() + 16 + 1 + 2 * TAG_LEN + 1 + digits(stream) + 1 + digits(seq) + mac
    }

    /// Parses any bytes; `None` for anything that is not a canonical id.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        if bytes.len() > MAX_LEN {
            return None;
        }
        let mut parts = bytes.split(|&b| b == b'.');
        if parts.next()? != PREFIX {
            return None;
        }
        let epoch = u64::from_be_bytes(fixed_hex(parts.next()?)?);
        let session = fixed_hex(parts.next()?)?;
        let stream = decimal(parts.next()?)?;
        let seq = decimal(parts.next()?)?;
        let mac = match parts.next() {
            None => None,
            Some(mac) => Some(fixed_hex(mac)?),
        };
        if parts.next().is_some() {
            return None;
        }
        Some(Self { epoch, session, stream, seq, mac })
    }
}

/// Exactly `2 * N` lowercase hex digits.
fn fixed_hex<const N: usize>(field: &[u8]) -> Option<[u8; N]> {
    if field.len() != 2 * N || !field.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0; N];
    hex::decode_to_slice(field, &mut out).ok()?;
    Some(out)
}

/// Lower-case hex, the only spelling `fixed_hex` accepts.
fn push_hex(s: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
}

/// A `u64` in canonical decimal: no sign, no leading zero, no overflow.
fn decimal(field: &[u8]) -> Option<u64> {
    match field {
        [] => None,
        [b'0'] => Some(0),
        [b'0', ..] => None,
        digits => digits.iter().try_fold(0u64, |n, &b| {
            let d = b.checked_sub(b'0').filter(|d| *d <= 9)?;
            n.checked_mul(10)?.checked_add(u64::from(d))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(key: Option<&SigningKey>) -> EventId {
        EventId::mint(0xdead_beef_0000_0001, session_tag("s-1"), 7, 42, key)
    }

    #[test]
    fn an_id_round_trips_through_its_wire_form() {
        let key = SigningKey::new(b"0123456789abcdef").unwrap();
        for id in [sample(None), sample(Some(&key))] {
            let wire = id.format();
            assert!(wire.len() <= MAX_LEN);
            assert!(wire.bytes().all(|b| b.is_ascii_graphic() && b != b':'));
            assert_eq!(EventId::parse(wire.as_bytes()), Some(id));
        }
    }

    #[test]
    fn the_longest_id_fits_in_128_bytes() {
        let key = SigningKey::new(b"0123456789abcdef").unwrap();
        let id = EventId::mint(u64::MAX, [0xff; TAG_LEN], u64::MAX, u64::MAX, Some(&key));
        assert!(id.format().len() <= MAX_LEN);
        assert_eq!(EventId::parse(id.format().as_bytes()), Some(id));
    }

    #[test]
    fn non_canonical_spellings_are_refused() {
        let wire = sample(None).format();
        let bad = [
            wire.replace("rg1", "RG1"),
            wire.replace(".7.", ".07."),
            wire.replace(".42", ".+42"),
            wire.to_uppercase(),
            format!("{wire}."),
            format!("{wire}.00"),
            format!(".{wire}"),
            "rg1.0.0.0.0".to_owned(),
            format!("rg1.{:016x}.{}.1.99999999999999999999", 1, "00".repeat(6)),
            String::new(),
        ];
        for b in bad {
            assert_eq!(EventId::parse(b.as_bytes()), None, "{b}");
        }
    }

    #[test]
    fn an_altered_id_does_not_verify() {
        let key = SigningKey::new(b"0123456789abcdef").unwrap();
        let id = sample(Some(&key));
        assert!(key.verifies(&id));
        assert!(!key.verifies(&EventId { seq: 41, ..id }));
        assert!(!key.verifies(&EventId { mac: None, ..id }));
        assert!(!SigningKey::new(b"another key, 16+").unwrap().verifies(&id));
    }
}
