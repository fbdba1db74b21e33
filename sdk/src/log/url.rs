//! One URL picks the backend, its options and the handle's retention.

use std::path::PathBuf;
use std::time::Duration;

use super::Log;
use super::embedded::{EmbeddedLog, EmbeddedOptions, FsyncPolicy};
#[cfg(feature = "iggy")]
use super::iggy::{IggyLog, IggyOptions};
use super::tls::IggyTls;
use crate::error::{Error, ErrorKind, Result};
use crate::retention::parse_duration;

const ACCEPTED: &str = "accepted: \
     file:///path/to/dir[?fsync=always|never|<N>ms][&truncate_corrupt=true][&segment_bytes=<N>]\
     [&retention=<duration>] (embedded, durable), memory://[?retention=<duration>] (embedded, \
     in memory), iggy://user[:pass]@host:port[?password_file=<path>][&retention=<duration>] \
     (Apache Iggy; without a password in the URL or a file, $AGENTLOG_IGGY_PASSWORD), \
     iggys://...[&tls_ca_file=<pem>][&tls_domain=<name>] (Apache Iggy over TLS); every scheme \
     also takes partitions=<N> (1 to 1000); a duration is <N>ms, <N>s, <N>m, <N>h or <N>d, or \
     0 (keep forever)";

/// The most partitions `partitions=` asks for: Apache Iggy's limit for one topic, kept on
/// every backend so that a count chosen on one works on the other.
pub const MAX_PARTITIONS: u32 = 1000;

/// The environment variable an Iggy password is read from when the URL has none (and no
/// `password_file`): a password kept out of the process's arguments.
pub const IGGY_PASSWORD_ENV: &str = "AGENTLOG_IGGY_PASSWORD";

/// A parsed log URL: which backend, with which options. The handle's own options (its
/// retention) are in [`LogSpec`]; parsing a `LogUrl` accepts and drops them. Its `Debug`
/// shows no password.
#[derive(Clone, PartialEq, Eq)]
pub enum LogUrl {
    /// `file:///path[?fsync=always|never|<N>ms][&truncate_corrupt=true][&segment_bytes=<N>]`:
    /// the embedded log, durable in a directory.
    File(PathBuf, FileOptions),
    /// `memory://`: the embedded log, in memory only.
    Memory,
    /// `iggy://user:pass@host:port`: an Apache Iggy server over TCP.
    Iggy {
        /// `host:port` of the server's TCP listener.
        address: String,
        /// User name.
        username: String,
        /// Password: the URL's, else the `password_file`'s first line, else
        /// [`IGGY_PASSWORD_ENV`]'s.
        password: String,
        /// `iggys://`: TLS to the server, with these settings.
        tls: Option<IggyTls>,
        /// `connections=<N>`: the handle's connections ([`IggyOptions::connections`]).
        connections: Option<usize>,
    },
}

impl std::fmt::Debug for LogUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File(path, options) => f.debug_tuple("File").field(path).field(options).finish(),
            Self::Memory => f.write_str("Memory"),
            Self::Iggy {
                address,
                username,
                tls,
                ..
            } => f
                .debug_struct("Iggy")
                .field("address", address)
                .field("username", username)
                .field("tls", tls)
                .finish_non_exhaustive(),
        }
    }
}

/// `url` as shown to people (in errors, logs, banners): a password in it masked.
pub fn redacted(url: &str) -> String {
    match ::url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(_) => url.to_owned(),
        // Unparsable: whatever follows the scheme's `//` up to an `@` may be credentials.
        Err(_) => match (url.find("://"), url.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                format!("{}***{}", &url[..scheme + 3], &url[at..])
            }
            _ => url.to_owned(),
        },
    }
}

/// The options of a `file://` URL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileOptions {
    /// `fsync=always|never|<N>ms`: overrides the default policy ([`FsyncPolicy::default`]).
    pub fsync: Option<FsyncPolicy>,
    /// `truncate_corrupt=true`: on open, cut every partition at its first damaged batch (what
    /// a power loss can leave behind) instead of refusing to open; what was after it is lost.
    /// See [`EmbeddedOptions::truncate_corrupt`].
    pub truncate_corrupt: bool,
    /// `segment_bytes=<N>`: roll segments at N bytes instead of 64 MiB
    /// ([`EmbeddedOptions::segment_bytes`]); small segments let tests and soaks delete them.
    pub segment_bytes: Option<u64>,
}

/// Everything a log URL says: the backend ([`LogUrl`]) and the handle's own options, which
/// every scheme takes: `retention=<duration>` (see [`Log::retention`]; for Iggy it also sets
/// the topics' message expiry, see [`IggyOptions::retention`]) and `partitions=<N>` (see
/// [`Log::partition_count`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogSpec {
    /// The backend and its options.
    pub backend: LogUrl,
    /// `retention=<duration>`, parsed by [`parse_duration`]; `None` when absent.
    pub retention: Option<Duration>,
    /// `partitions=<N>`, 1 to [`MAX_PARTITIONS`]; `None` when absent.
    pub partitions: Option<u32>,
}

impl std::str::FromStr for LogUrl {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        s.parse::<LogSpec>().map(|spec| spec.backend)
    }
}

impl std::str::FromStr for LogSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::parse_with_env(s, |name| std::env::var(name).ok())
    }
}

impl LogSpec {
    /// Parse `s`, reading environment variables through `env` (the Iggy password's).
    pub fn parse_with_env(s: &str, env: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let bad = |why: &str| {
            Error::new(
                ErrorKind::Config,
                format!("bad log URL {:?}: {why}; {ACCEPTED}", redacted(s)),
            )
        };
        let url = ::url::Url::parse(s).map_err(|e| bad(&e.to_string()))?;
        if !matches!(url.scheme(), "memory" | "file" | "iggy" | "iggys") {
            return Err(bad(&format!("unknown scheme {:?}", url.scheme())));
        }
        let mut retention = None;
        let mut partitions = None;
        let mut file = FileOptions::default();
        let mut password_file = None;
        let mut tls = IggyTls::default();
        let mut connections = None;
        let is_file = url.scheme() == "file";
        let is_iggy = matches!(url.scheme(), "iggy" | "iggys");
        let is_tls = url.scheme() == "iggys";
        for (key, value) in url.query_pairs() {
            match (key.as_ref(), value.as_ref()) {
                ("retention", value) => {
                    retention = Some(
                        parse_duration(value).map_err(|why| bad(&format!("retention: {why}")))?,
                    );
                }
                ("partitions", n) => {
                    let n = n
                        .parse::<u32>()
                        .ok()
                        .filter(|n| (1..=MAX_PARTITIONS).contains(n))
                        .ok_or_else(|| {
                            bad(&format!(
                                "partitions must be a number from 1 to {MAX_PARTITIONS}"
                            ))
                        })?;
                    partitions = Some(n);
                }
                ("password_file", path) if is_iggy => password_file = Some(PathBuf::from(path)),
                ("connections", n) if is_iggy => {
                    let n = n
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=64).contains(n))
                        .ok_or_else(|| bad("connections must be a number from 1 to 64"))?;
                    connections = Some(n);
                }
                ("tls_ca_file", path) if is_tls => tls.ca_file = Some(PathBuf::from(path)),
                ("tls_domain", name) if is_tls => tls.domain = Some(name.to_owned()),
                (key, value) if is_file => {
                    parse_file_option(&mut file, key, value).map_err(|why| bad(&why))?;
                }
                (other, _) => return Err(bad(&format!("unknown option {other:?}"))),
            }
        }
        let backend = match url.scheme() {
            "memory" => LogUrl::Memory,
            "file" => {
                let path = url
                    .to_file_path()
                    .map_err(|()| bad("not an absolute local path"))?;
                LogUrl::File(path, file)
            }
            "iggy" | "iggys" => {
                let host = url.host_str().ok_or_else(|| bad("no host"))?;
                let port = url.port().unwrap_or(8090);
                let username = percent_decode(url.username());
                if username.is_empty() {
                    return Err(bad("no user name (iggy://user:pass@host:port)"));
                }
                let password = match (url.password(), password_file) {
                    (Some(_), Some(_)) => {
                        return Err(bad("a password in the URL and a password_file"));
                    }
                    (Some(password), None) => percent_decode(password),
                    (None, Some(path)) => read_password(&path).map_err(|why| bad(&why))?,
                    (None, None) => env(IGGY_PASSWORD_ENV).unwrap_or_default(),
                };
                LogUrl::Iggy {
                    address: format!("{host}:{port}"),
                    username,
                    password,
                    tls: is_tls.then_some(tls),
                    connections,
                }
            }
            other => return Err(bad(&format!("unknown scheme {other:?}"))),
        };
        Ok(LogSpec {
            backend,
            retention,
            partitions,
        })
    }
}

/// The first line of the password file at `path`.
fn read_password(path: &std::path::Path) -> std::result::Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the password_file {}: {e}", path.display()))?;
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

/// Take one `key=value` of a `file://` URL into `options`; `Err` says what is wrong.
fn parse_file_option(
    options: &mut FileOptions,
    key: &str,
    value: &str,
) -> std::result::Result<(), String> {
    match (key, value) {
        ("fsync", "always") => options.fsync = Some(FsyncPolicy::Always),
        ("fsync", "never") => options.fsync = Some(FsyncPolicy::Never),
        ("fsync", ms) => {
            let millis = ms
                .strip_suffix("ms")
                .and_then(|n| n.parse::<u64>().ok())
                .ok_or("fsync must be always, never or <N>ms")?;
            options.fsync = Some(FsyncPolicy::Interval(Duration::from_millis(millis)));
        }
        ("truncate_corrupt", "true") => options.truncate_corrupt = true,
        ("truncate_corrupt", "false") => options.truncate_corrupt = false,
        ("truncate_corrupt", _) => return Err("truncate_corrupt must be true or false".into()),
        ("segment_bytes", n) => {
            let bytes = n
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or("segment_bytes must be a number of bytes above 0")?;
            options.segment_bytes = Some(bytes);
        }
        (other, _) => return Err(format!("unknown option {other:?}")),
    }
    Ok(())
}

fn percent_decode(s: &str) -> String {
    ::url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Open the backend a URL names, with its options, retention and partition count.
pub async fn open(url: &str) -> Result<Log> {
    let LogSpec {
        backend,
        retention,
        partitions,
    } = url.parse::<LogSpec>()?;
    let log = match backend {
        LogUrl::Memory => Log::new(EmbeddedLog::in_memory()),
        LogUrl::File(dir, file) => {
            let mut options = EmbeddedOptions::default().truncate_corrupt(file.truncate_corrupt);
            if let Some(fsync) = file.fsync {
                options = options.fsync(fsync);
            }
            if let Some(bytes) = file.segment_bytes {
                options = options.segment_bytes(bytes);
            }
            Log::new(EmbeddedLog::open(dir, options)?)
        }
        #[cfg(feature = "iggy")]
        LogUrl::Iggy {
            address,
            username,
            password,
            tls,
            connections,
        } => {
            let mut options = IggyOptions::new(address, username, password);
            if let Some(tls) = tls {
                options = options.tls(tls);
            }
            if let Some(connections) = connections {
                options = options.connections(connections);
            }
            if let Some(retention) = retention {
                options = options.retention(retention);
            }
            Log::new(IggyLog::connect(options).await?)
        }
        #[cfg(not(feature = "iggy"))]
        LogUrl::Iggy { .. } => {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "{}: this build has no Iggy backend (the `iggy` feature of the agentlog crate)",
                    redacted(url)
                ),
            ));
        }
    };
    let log = match retention {
        Some(retention) => log.with_retention(retention),
        None => log,
    };
    Ok(match partitions {
        Some(partitions) => log.with_partition_count(partitions),
        None => log,
    })
}

#[cfg(test)]
mod tests;
