//! One client's state: the protocol it negotiated, whether it authenticated, its name,
//! its copy of the filter defaults, and its transaction.

use bloomkit_commands::Protocol;
use bytes::Bytes;

use crate::config::DefaultsCache;
use crate::shared::Shared;
use crate::transaction::Transaction;

/// One client's state: what it negotiated and who it is.
#[derive(Clone, Debug)]
pub struct Session {
    /// `CLIENT ID`: unique for the server's lifetime.
    pub id: u64,
    /// RESP2 until `HELLO 3`.
    pub protocol: Protocol,
    /// Whether the client may run commands: true from the start without
    /// `--requirepass`, after a successful `AUTH` or `HELLO ... AUTH` with it.
    pub authenticated: bool,
    /// Whether the client connected from the loopback interface (`--enable-debug-command
    /// local` lets such clients run `DEBUG`).
    pub local: bool,
    /// `CLIENT SETNAME`.
    pub name: Option<Bytes>,
    /// `CLIENT SETINFO LIB-NAME`.
    pub lib_name: Option<Bytes>,
    /// `CLIENT SETINFO LIB-VER`.
    pub lib_ver: Option<Bytes>,
    /// This connection's copy of the filter defaults.
    pub defaults: DefaultsCache,
    /// `MULTI`'s queue and `WATCH`'s keys.
    pub transaction: Transaction,
}

impl Session {
    /// A new client's session: RESP2, authenticated unless the server requires a password.
    pub fn new(shared: &Shared) -> Session {
        Session {
            id: shared.next_client_id(),
            protocol: Protocol::Resp2,
            authenticated: shared.config().password().is_none(),
            local: false,
            name: None,
            lib_name: None,
            lib_ver: None,
            defaults: DefaultsCache::default(),
            transaction: Transaction::default(),
        }
    }
}
