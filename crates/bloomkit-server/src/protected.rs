//! Protected mode: a server listening on a non-loopback address without a password answers
//! clients from other addresses with Redis's `-DENIED` explanation and closes, unless
//! `--protected-mode no`.
//!
//! As in Redis, only `127.0.0.1` and `::1` (and `::ffff:127.0.0.1`) count as the loopback
//! interface. Unlike Redis 7, which protects whatever the bind address, a server bound to a
//! loopback address is not in protected mode: no other machine can reach it.

use std::net::IpAddr;

use crate::config::Config;

/// The reply to a client refused by protected mode, sent before closing: Redis's, with the
/// ways out this server has.
pub const DENIED: &[u8] = b"-DENIED bloomkit is running in protected mode because protected \
mode is enabled, it listens on a non-loopback address, and no password is set for the default \
user. In this mode connections are only accepted from the loopback interface. If you want to \
connect from external computers, you may adopt one of the following solutions: 1) Restart the \
server with the '--protected-mode no' option, however MAKE SURE it is not publicly accessible \
from internet if you do so. 2) Set up a password for the default user with --requirepass-file \
(or --requirepass). 3) Bind it to the loopback interface only (--bind 127.0.0.1). NOTE: You \
only need to do one of the above things in order for the server to start accepting connections \
from the outside.\r\n";

/// Whether `config` puts the server in protected mode: on, no password, and an address to
/// listen on that is not the loopback.
pub fn is_active(config: &Config) -> bool {
    config.protected_mode && config.password().is_none() && !is_loopback_bind(&config.bind)
}

/// Whether a client from `peer` is refused by a server in protected mode.
pub fn refuses(peer: IpAddr) -> bool {
    !is_local(peer)
}

/// Whether `peer` is the loopback interface as Redis counts it: `127.0.0.1`, `::1` (and
/// `::ffff:127.0.0.1`).
pub fn is_local(peer: IpAddr) -> bool {
    match peer {
        IpAddr::V4(v4) => v4.octets() == [127, 0, 0, 1],
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.octets() == [127, 0, 0, 1])
        }
    }
}

fn is_loopback_bind(bind: &str) -> bool {
    bind.eq_ignore_ascii_case("localhost")
        || bind
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(bind: &str, password: Option<&str>, protected_mode: bool) -> Config {
        Config {
            bind: bind.to_string(),
            requirepass: password.map(str::to_string),
            protected_mode,
            ..Config::default()
        }
    }

    #[test]
    fn active_only_on_a_non_loopback_address_without_a_password() {
        assert!(is_active(&config("0.0.0.0", None, true)));
        assert!(is_active(&config("::", None, true)));
        assert!(is_active(&config("192.0.2.7", None, true)));
        assert!(is_active(&config("db.example", None, true)));
        assert!(!is_active(&config("127.0.0.1", None, true)));
        assert!(!is_active(&config("127.0.0.2", None, true)));
        assert!(!is_active(&config("::1", None, true)));
        assert!(!is_active(&config("[::1]", None, true)));
        assert!(!is_active(&config("localhost", None, true)));
        assert!(!is_active(&config("0.0.0.0", Some("pw"), true)));
        assert!(!is_active(&config("0.0.0.0", None, false)));
    }

    #[test]
    fn only_the_loopback_interface_gets_in() {
        for ok in ["127.0.0.1", "::1", "::ffff:127.0.0.1"] {
            assert!(!refuses(ok.parse().unwrap()), "{ok}");
        }
        for refused in [
            "127.0.0.2",
            "192.0.2.7",
            "10.0.0.1",
            "2001:db8::1",
            "::ffff:192.0.2.7",
        ] {
            assert!(refuses(refused.parse().unwrap()), "{refused}");
        }
    }
}
