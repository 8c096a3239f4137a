//! The open-file limit: raised at start-up to what `--maxclients` needs, or `maxclients`
//! lowered to what the limit allows, as Redis's `adjustOpenFilesLimit` does.
//!
//! Without it, a server whose `ulimit -n` is below `maxclients` accepts until the process
//! runs out of descriptors, and the clients after that wait in the listen backlog, neither
//! served nor refused (with `ulimit -n 256` and the default 10,000, 129 of 372 connections
//! did). With it, a client over the lowered `maxclients` is accepted and told
//! `-ERR max number of clients reached`, with descriptors to spare for that.

/// Descriptors kept for the server itself beyond one per client (the listener, the log,
/// the snapshot being written, the manifest, the runtime's own): Redis's
/// `CONFIG_MIN_RESERVED_FDS`.
pub const RESERVED_FDS: u64 = 32;

/// What [`fit_open_files`] did, for the server to say on standard error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fitted {
    /// The limit was already enough (or cannot be read on this platform).
    Enough,
    /// The soft limit was raised from `from` to `to`.
    Raised {
        /// The soft limit found.
        from: u64,
        /// The soft limit set.
        to: u64,
    },
    /// The limit could not be raised far enough: `maxclients` was lowered.
    Lowered {
        /// The `maxclients` asked for.
        requested: usize,
        /// The `maxclients` that fits.
        maxclients: usize,
        /// The soft limit now.
        limit: u64,
    },
}

impl Fitted {
    /// The line to print, Redis's wording where it has one; `None` when nothing changed.
    pub fn message(&self) -> Option<String> {
        match self {
            Fitted::Enough => None,
            Fitted::Raised { from, to } => Some(format!(
                "increased maximum number of open files to {to} (it was originally set to {from})"
            )),
            Fitted::Lowered {
                requested,
                maxclients,
                limit,
            } => Some(format!(
                "you requested maxclients of {requested} requiring at least {} max file \
                 descriptors, but the open-file limit is {limit} and cannot be raised: \
                 maxclients has been reduced to {maxclients} to compensate for low ulimit. If \
                 you need higher maxclients increase 'ulimit -n'",
                *requested as u64 + RESERVED_FDS
            )),
        }
    }
}

/// Raises this process's soft open-file limit toward `maxclients` + [`RESERVED_FDS`] (and
/// the hard limit too, where the process may), and returns the `maxclients` that fits,
/// with what was done.
///
/// # Errors
///
/// When the limit leaves no room for a single client: the message says how far to raise
/// `ulimit -n`.
#[cfg(unix)]
pub fn fit_open_files(maxclients: usize) -> Result<(usize, Fitted), String> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let wanted = (maxclients as u64).saturating_add(RESERVED_FDS);
    let current = getrlimit(Resource::Nofile);
    let (Some(soft), hard) = (current.current, current.maximum) else {
        // Unlimited: nothing to raise.
        return Ok((maxclients, Fitted::Enough));
    };
    if soft >= wanted {
        return Ok((maxclients, Fitted::Enough));
    }
    let hard_or_max = hard.unwrap_or(u64::MAX);
    // First as asked (a privileged process may raise the hard limit too), then as far as
    // the hard limit goes.
    let attempts = [
        (wanted, hard_or_max.max(wanted)),
        (wanted.min(hard_or_max), hard_or_max),
    ];
    let mut limit = soft;
    for (cur, max) in attempts {
        if cur <= soft {
            continue;
        }
        let set = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(cur),
                maximum: hard.map(|_| max),
            },
        );
        if set.is_ok() {
            limit = cur;
            break;
        }
    }
    if limit >= wanted {
        return Ok((
            maxclients,
            Fitted::Raised {
                from: soft,
                to: limit,
            },
        ));
    }
    if limit <= RESERVED_FDS {
        return Err(format!(
            "the open-file limit ('ulimit -n') of {limit} is not enough for the server to start: \
             raise it to at least {}",
            RESERVED_FDS + 1
        ));
    }
    let fits = usize::try_from(limit - RESERVED_FDS).unwrap_or(usize::MAX);
    Ok((
        fits,
        Fitted::Lowered {
            requested: maxclients,
            maxclients: fits,
            limit,
        },
    ))
}

/// Elsewhere the limit is not the process's to set: nothing changes.
#[cfg(not(unix))]
pub fn fit_open_files(maxclients: usize) -> Result<(usize, Fitted), String> {
    Ok((maxclients, Fitted::Enough))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_changed() {
        assert_eq!(Fitted::Enough.message(), None);
        let raised = Fitted::Raised {
            from: 256,
            to: 10_032,
        }
        .message()
        .unwrap();
        assert!(
            raised.contains("to 10032 (it was originally set to 256)"),
            "{raised}"
        );
        let lowered = Fitted::Lowered {
            requested: 10_000,
            maxclients: 224,
            limit: 256,
        }
        .message()
        .unwrap();
        assert!(
            lowered.contains("at least 10032") && lowered.contains("reduced to 224"),
            "{lowered}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_limit_already_enough_is_left_alone() {
        let (maxclients, fitted) = fit_open_files(1).unwrap();
        assert_eq!((maxclients, fitted), (1, Fitted::Enough));
    }
}
