//! What `bloomkit copy`'s SOURCE and DEST name: a server or one of its keys (a `redis://`
//! URL), a filter file, or (as a source) a stopped `bloomkit serve` data directory or one of
//! its keys.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use bloomkit_server::persist::{LOCK_FILE, MANIFEST_FILE, SNAPSHOT_FILE};

/// The port a URL without one means: Redis's.
const DEFAULT_PORT: u16 = 6379;

/// Which side of the copy an endpoint is: a missing file is an error for a source, the file
/// to create for a destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// SOURCE.
    Source,
    /// DEST.
    Dest,
}

/// A server's address and credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerAddr {
    /// Host name or address (an IPv6 address without its brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// The ACL user, if the URL names one.
    pub user: Option<String>,
    /// The password, if the URL has one.
    pub password: Option<String>,
}

impl ServerAddr {
    /// `host:port` (`[::1]:6379` for IPv6), without the credentials: for messages.
    pub fn display(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// One side of a copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A server: all its filter keys, or the one `key`.
    Server {
        /// Where it listens.
        addr: ServerAddr,
        /// The key the URL names, percent-decoded.
        key: Option<Vec<u8>>,
    },
    /// A filter file; `-` is standard input (source) or output (destination).
    File(PathBuf),
    /// A stopped `bloomkit serve`'s data directory: all its filter keys, or the one `key`.
    DataDir {
        /// The directory.
        dir: PathBuf,
        /// The key named after the directory (`./data/KEY`).
        key: Option<Vec<u8>>,
    },
}

impl Endpoint {
    /// Reads SOURCE or DEST as given on the command line.
    ///
    /// # Errors
    ///
    /// A message saying what is wrong with `text` and what is expected instead.
    pub fn parse(text: &OsStr, role: Role) -> Result<Endpoint, String> {
        if let Some(s) = text.to_str() {
            if let Some(rest) = s.strip_prefix("redis://") {
                return parse_url(rest).map_err(|why| format!("'{s}': {why}"));
            }
            if s.starts_with("rediss://") {
                return Err(format!(
                    "'{s}': TLS (rediss://) is not supported; reach the server through a TLS \
                     tunnel (stunnel, or an SSH tunnel) and give its local end as redis://"
                ));
            }
            if let Some((scheme, _)) = s.split_once("://") {
                if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric()) {
                    return Err(format!(
                        "'{s}': unknown scheme '{scheme}://'; give redis://host:port[/KEY], a \
                         filter file, or a data directory"
                    ));
                }
            }
        }
        let path = PathBuf::from(text);
        if path.as_os_str() == "-" {
            return Ok(Endpoint::File(path));
        }
        if path.is_dir() {
            if role == Role::Dest {
                return Err(format!(
                    "'{}' is a directory: a destination is a server (redis://host:port[/KEY]) \
                     or a filter file; to fill a data directory, start `bloomkit serve --dir` \
                     on it and copy to its URL",
                    path.display()
                ));
            }
            if !is_data_dir(&path) {
                return Err(format!(
                    "'{}' is a directory but not a bloomkit serve data directory (it has no \
                     {LOCK_FILE}, {MANIFEST_FILE} or {SNAPSHOT_FILE}); give a data directory, \
                     a filter file, or redis://host:port[/KEY]",
                    path.display()
                ));
            }
            return Ok(Endpoint::DataDir {
                dir: path,
                key: None,
            });
        }
        // `./data/KEY`: a key of a data directory, when no file of that name exists.
        if role == Role::Source && !path.exists() {
            if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
                if !dir.as_os_str().is_empty() && is_data_dir(dir) {
                    return Ok(Endpoint::DataDir {
                        dir: dir.to_path_buf(),
                        key: Some(name.as_encoded_bytes().to_vec()),
                    });
                }
            }
            return Err(format!(
                "'{}' does not exist: give a filter file, a data directory (or a key in one, \
                 dir/KEY), or redis://host:port[/KEY]",
                path.display()
            ));
        }
        Ok(Endpoint::File(path))
    }

    /// The key this endpoint names, if it names one.
    pub fn key(&self) -> Option<&[u8]> {
        match self {
            Endpoint::Server { key, .. } | Endpoint::DataDir { key, .. } => key.as_deref(),
            Endpoint::File(_) => None,
        }
    }

    /// How to name it in a message.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Server { addr, .. } => addr.display(),
            Endpoint::File(path) => crate::files::describe_filter(path),
            Endpoint::DataDir { dir, .. } => format!("data directory '{}'", dir.display()),
        }
    }
}

/// Whether `dir` holds what `bloomkit serve` writes in its data directory.
fn is_data_dir(dir: &Path) -> bool {
    [LOCK_FILE, MANIFEST_FILE, SNAPSHOT_FILE]
        .iter()
        .any(|name| dir.join(name).exists())
}

/// Reads what follows `redis://`: `[user[:password]@]host[:port][/KEY]`.
fn parse_url(rest: &str) -> Result<Endpoint, String> {
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    if path.is_some_and(|p| p.contains('?')) || authority.contains('?') {
        return Err("URL options (?...) are not supported; give redis://host:port/KEY".into());
    }
    // The last `@`: a password may hold one, percent-encoded or not.
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let (user, password) = match userinfo {
        None => (None, None),
        Some(info) => {
            let (user, password) = match info.split_once(':') {
                Some((u, p)) => (u, Some(p)),
                // `redis://secret@host`: a password alone, as Redis's own clients read it.
                None => ("", Some(info)),
            };
            let user = decode_text(user, "the user name")?;
            let password = password
                .map(|p| decode_text(p, "the password"))
                .transpose()?;
            ((!user.is_empty()).then_some(user), password)
        }
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (host, after) = v6
            .split_once(']')
            .ok_or("an IPv6 address without its closing ']'")?;
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or("something other than :PORT after the IPv6 address")?,
            ),
        };
        (host, port)
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    if host.is_empty() {
        return Err("no host; give redis://host:port[/KEY]".into());
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| format!("'{p}' is not a port (1 to 65535)"))?,
    };
    let key = match path {
        None | Some("") => None,
        Some(p) => Some(percent_decode(p)?),
    };
    Ok(Endpoint::Server {
        addr: ServerAddr {
            host: host.to_string(),
            port,
            user,
            password,
        },
        key,
    })
}

/// Decodes `%XX` escapes; anything else is taken as it is.
fn percent_decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    format!("'%' at byte {i} is not followed by two hex digits (write % as %25)")
                })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// [`percent_decode`] for what must be text (a user name, a password).
fn decode_text(text: &str, what: &str) -> Result<String, String> {
    String::from_utf8(percent_decode(text)?).map_err(|_| format!("{what} is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(text: &str) -> (ServerAddr, Option<Vec<u8>>) {
        match Endpoint::parse(OsStr::new(text), Role::Source) {
            Ok(Endpoint::Server { addr, key }) => (addr, key),
            other => panic!("{text}: {other:?}"),
        }
    }

    fn addr(host: &str, port: u16, user: Option<&str>, password: Option<&str>) -> ServerAddr {
        ServerAddr {
            host: host.into(),
            port,
            user: user.map(Into::into),
            password: password.map(Into::into),
        }
    }

    #[test]
    fn server_urls() {
        assert_eq!(
            server("redis://localhost:7000"),
            (addr("localhost", 7000, None, None), None)
        );
        assert_eq!(
            server("redis://10.0.0.1/"),
            (addr("10.0.0.1", 6379, None, None), None)
        );
        assert_eq!(
            server("redis://u:p%40ss@h:1/users"),
            (
                addr("h", 1, Some("u"), Some("p@ss")),
                Some(b"users".to_vec())
            )
        );
        assert_eq!(
            server("redis://:secret@h:2"),
            (addr("h", 2, None, Some("secret")), None)
        );
        assert_eq!(
            server("redis://secret@h:2"),
            (addr("h", 2, None, Some("secret")), None)
        );
        assert_eq!(
            server("redis://[::1]:7000/a%2Fb%20c%00"),
            (addr("::1", 7000, None, None), Some(b"a/b c\0".to_vec()))
        );
        assert_eq!(server("redis://[::1]").0, addr("::1", 6379, None, None));
        // Everything after the first '/' is the key, slashes included.
        assert_eq!(server("redis://h:1/a/b").1, Some(b"a/b".to_vec()));
        assert_eq!(server("redis://h:1/a/b").0.display(), "h:1");
        assert_eq!(server("redis://[::1]:5").0.display(), "[::1]:5");
    }

    #[test]
    fn bad_urls_say_why() {
        for (text, expected) in [
            ("redis://", "no host"),
            ("redis://:7000", "no host"),
            ("redis://h:0", "not a port"),
            ("redis://h:70000", "not a port"),
            ("redis://h:x", "not a port"),
            ("redis://h:1/k%4", "two hex digits"),
            ("redis://h:1/k%zz", "two hex digits"),
            ("redis://h:1/k?db=1", "not supported"),
            ("redis://[::1:7000", "closing ']'"),
            ("redis://[::1]x", "after the IPv6"),
            ("rediss://h:1", "TLS"),
            ("http://h:1", "unknown scheme"),
            ("redis://u:%ff@h", "not UTF-8"),
        ] {
            let e = Endpoint::parse(OsStr::new(text), Role::Source).unwrap_err();
            assert!(e.contains(expected), "{text}: {e}");
        }
    }

    #[test]
    fn files_and_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f.bkf");
        std::fs::write(&file, b"x").unwrap();
        assert_eq!(
            Endpoint::parse(file.as_os_str(), Role::Source),
            Ok(Endpoint::File(file.clone()))
        );
        assert_eq!(
            Endpoint::parse(OsStr::new("-"), Role::Source),
            Ok(Endpoint::File("-".into()))
        );
        let missing = tmp.path().join("new.bkf");
        assert_eq!(
            Endpoint::parse(missing.as_os_str(), Role::Dest),
            Ok(Endpoint::File(missing.clone()))
        );
        let e = Endpoint::parse(missing.as_os_str(), Role::Source).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        // A plain directory is neither.
        let e = Endpoint::parse(tmp.path().as_os_str(), Role::Source).unwrap_err();
        assert!(e.contains("not a bloomkit serve data directory"), "{e}");
        // A data directory, and a key in it.
        let data = tmp.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join(LOCK_FILE), b"").unwrap();
        assert_eq!(
            Endpoint::parse(data.as_os_str(), Role::Source),
            Ok(Endpoint::DataDir {
                dir: data.clone(),
                key: None
            })
        );
        assert_eq!(
            Endpoint::parse(data.join("users").as_os_str(), Role::Source),
            Ok(Endpoint::DataDir {
                dir: data.clone(),
                key: Some(b"users".to_vec())
            })
        );
        let e = Endpoint::parse(data.as_os_str(), Role::Dest).unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
    }
}
