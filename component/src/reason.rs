//! Why a reconnect starts a fresh stream: one reason per failing check of the decision table,
//! for logs and metrics (never sent to a client).
//!
//! Adding a reason: a variant here, its place in the table (`decision`), its WIT case; the
//! compiler then names every other place (the counters are sized from [`StaleReason::COUNT`],
//! and every conversion matches exhaustively).

/// Why a reconnect starts a fresh stream instead of resuming.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    pub const ALL: [StaleReason; Self::COUNT] = [
        Self::Malformed,
        Self::Forged,
        Self::OtherSession,
        Self::EpochChanged,
        Self::Unknown,
        Self::PostNeverResumes,
        Self::Completed,
        Self::Aborted,
        Self::Superseded,
        Self::Evicted,
    ];

    /// How many reasons there are: one past the last one's index.
    pub const COUNT: usize = Self::Evicted.index() + 1;

    /// The reason's position in declaration order; an exhaustive match, so a new reason does
    /// not compile until it has one (and `COUNT` follows the last).
    pub const fn index(self) -> usize {
        match self {
            Self::Malformed => 0,
            Self::Forged => 1,
            Self::OtherSession => 2,
            Self::EpochChanged => 3,
            Self::Unknown => 4,
            Self::PostNeverResumes => 5,
            Self::Completed => 6,
            Self::Aborted => 7,
            Self::Superseded => 8,
            Self::Evicted => 9,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::Forged => "forged",
            Self::OtherSession => "other-session",
            Self::EpochChanged => "epoch-changed",
            Self::Unknown => "unknown",
            Self::PostNeverResumes => "post-never-resumes",
            Self::Completed => "completed",
            Self::Aborted => "aborted",
            Self::Superseded => "superseded",
            Self::Evicted => "evicted",
        }
    }
}

// `ALL` lists every reason at its index (checked when the crate compiles).
const _: () = {
    let mut i = 0;
    while i < StaleReason::COUNT {
        assert!(StaleReason::ALL[i].index() == i);
        i += 1;
    }
};
