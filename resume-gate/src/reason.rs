//! Why a reconnect starts a fresh stream: one reason per failing check of the decision table,
//! for logs and metrics (never sent to a client).
//!
//! Adding a reason: a variant here, its place in the table (`decision`), its WIT case and its
//! README row; the compiler then names every other place (every conversion matches
//! exhaustively), and the counters follow by themselves: [`StaleReason::COUNT`] and
//! [`StaleReason::ALL`] are the compiler's own count and list of the variants, and a reason's
//! index is its discriminant, so no reason can index past its counter.

use strum::{EnumCount, IntoStaticStr, VariantArray};

/// Why a reconnect starts a fresh stream instead of resuming.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, EnumCount, VariantArray, IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum StaleReason {
    /// 1: the cursor is not an id this gate could have minted.
    Malformed,
    /// 2: a signing key is configured and the id's MAC does not verify.
    Forged,
    /// 3: the id was minted for another session.
    OtherSession,
    /// 4: the id is from an earlier epoch of this session (restart, re-issue).
    EpochChanged,
    /// 5 and 8: no such stream in this session, or no such event on it.
    Unknown,
    /// 6: a POST carried the cursor; resumption is always a GET.
    PostNeverResumes,
    /// 7 and 9: the client already holds the stream's final response.
    Completed,
    /// 7 and 10: the stream was cancelled, kept past retention, a call nobody was attached to
    /// past `max-detached`, or lost events the cursor needs.
    Aborted,
    /// 7: the stream was replaced by a newer standalone stream.
    Superseded,
    /// 10: events after the cursor were evicted; a partial replay is never given.
    Evicted,
}

impl StaleReason {
    /// Every reason, in declaration order ([`StaleReason::index`] is the position).
    pub const ALL: &'static [StaleReason] = <Self as VariantArray>::VARIANTS;

    /// How many reasons there are (the variants, counted by the compiler).
    pub const COUNT: usize = <Self as EnumCount>::COUNT;

    /// The reason's position in declaration order: always below [`StaleReason::COUNT`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The WIT case's name (`other-session`), for logs and metric labels.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}
