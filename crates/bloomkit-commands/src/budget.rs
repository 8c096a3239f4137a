//! The memory a command may allocate: the host's answer, asked before allocating.

/// How much memory a command may allocate, asked before it allocates.
///
/// The server answers from `--maxmemory` and its running total; replaying the log on start-up
/// uses [`Replay`], since what was acknowledged once must load again.
pub trait Budget {
    /// Whether `extra_bytes` more may be allocated without exceeding `--maxmemory`.
    fn within_maxmemory(&self, extra_bytes: usize) -> bool;

    /// Bytes the machine can still give (Linux `MemAvailable`), or `None` if unknown. A
    /// `RESERVE` larger than this answers `ERR Insufficient memory to create filter`.
    fn machine_available(&self) -> Option<usize>;

    /// Whether a reply of `bytes` may be built: a host that counts its clients' buffers
    /// against `maxmemory` answers no when one would not fit, and the command answers
    /// `OOM` before it copies anything (a `SCANDUMP` chunk). Yes unless a host says
    /// otherwise, as in Redis, where replies are never refused.
    fn admits_reply(&self, _bytes: usize) -> bool {
        true
    }

    /// Whether the command is replayed (from a log, or a master's replication stream): it was
    /// acknowledged once, under the limits of the host that ran it, and is applied again
    /// whatever this host's are, so that the replay rebuilds the same filter. A command asks
    /// only where the answer changes what it does (a `CF.ADD` past `cf-max-expansions`): a
    /// host may pay to find out. No unless a host says so.
    fn replays(&self) -> bool {
        false
    }
}

/// A [`Budget`] that admits everything, for a client's command: for tests.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unlimited;

impl Budget for Unlimited {
    fn within_maxmemory(&self, _extra_bytes: usize) -> bool {
        true
    }

    fn machine_available(&self) -> Option<usize> {
        None
    }
}

/// The [`Budget`] of a replay ([`Budget::replays`]): admits everything, as what was
/// acknowledged once must load again.
#[derive(Clone, Copy, Debug, Default)]
pub struct Replay;

impl Budget for Replay {
    fn within_maxmemory(&self, _extra_bytes: usize) -> bool {
        true
    }

    fn machine_available(&self) -> Option<usize> {
        None
    }

    fn replays(&self) -> bool {
        true
    }
}
