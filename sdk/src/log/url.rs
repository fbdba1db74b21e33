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
     iggys://...[&tls_ca_file=<pem>][&tls_domain=<name>] (Apache Iggy over TLS); a duration is \
     <N>ms, <N>s, <N>m, <N>h or <N>d, or 0 (keep forever)";

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

/// Everything a log URL says: the backend ([`LogUrl`]) and `retention=<duration>`, which
/// every scheme takes (see [`Log::retention`]; for Iggy it also sets the topics' message
/// expiry, see [`IggyOptions::retention`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSpec {
    /// The backend and its options.
    pub backend: LogUrl,
    /// `retention=<duration>`, parsed by [`parse_duration`]; `None` when absent.
    pub retention: Option<Duration>,
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
        Ok(LogSpec { backend, retention })
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

/// Open the backend a URL names, with its options and retention.
pub async fn open(url: &str) -> Result<Log> {
    let LogSpec { backend, retention } = url.parse::<LogSpec>()?;
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
    Ok(match retention {
        Some(retention) => log.with_retention(retention),
        None => log,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_scheme() {
        assert_eq!("memory://".parse::<LogUrl>().ok(), Some(LogUrl::Memory));
        let file = |fsync, truncate_corrupt| FileOptions {
            fsync,
            truncate_corrupt,
            segment_bytes: None,
        };
        assert_eq!(
            "file:///var/lib/agentlog".parse::<LogUrl>().ok(),
            Some(LogUrl::File(
                PathBuf::from("/var/lib/agentlog"),
                file(None, false)
            ))
        );
        assert_eq!(
            "file:///d?fsync=5ms".parse::<LogUrl>().ok(),
            Some(LogUrl::File(
                PathBuf::from("/d"),
                file(
                    Some(FsyncPolicy::Interval(std::time::Duration::from_millis(5))),
                    false
                )
            ))
        );
        assert_eq!(
            "file:///d?fsync=never&truncate_corrupt=true"
                .parse::<LogUrl>()
                .ok(),
            Some(LogUrl::File(
                PathBuf::from("/d"),
                file(Some(FsyncPolicy::Never), true)
            ))
        );
        assert_eq!(
            "iggy://iggy:secret@127.0.0.1:8090?connections=8"
                .parse::<LogUrl>()
                .ok(),
            Some(LogUrl::Iggy {
                address: "127.0.0.1:8090".into(),
                username: "iggy".into(),
                password: "secret".into(),
                tls: None,
                connections: Some(8),
            })
        );
        for bad in ["0", "65", "many"] {
            let url = format!("iggy://u:p@h:1?connections={bad}");
            assert!(url.parse::<LogUrl>().is_err(), "{url}");
        }
        assert_eq!(
            "iggys://iggy:secret@db.example:9000?tls_ca_file=/ca.pem&tls_domain=iggy.internal"
                .parse::<LogUrl>()
                .ok(),
            Some(LogUrl::Iggy {
                address: "db.example:9000".into(),
                username: "iggy".into(),
                password: "secret".into(),
                tls: Some(IggyTls {
                    ca_file: Some(PathBuf::from("/ca.pem")),
                    domain: Some("iggy.internal".into()),
                }),
                connections: None,
            })
        );
        assert!(matches!(
            "iggys://u:p@h:1".parse::<LogUrl>(),
            Ok(LogUrl::Iggy { tls: Some(tls), .. }) if tls == IggyTls::default()
        ));
    }

    #[test]
    fn segment_bytes_and_retention_are_options() {
        let spec = |url: &str| url.parse::<LogSpec>().ok();
        assert_eq!(
            spec("file:///d?segment_bytes=4096&retention=10s"),
            Some(LogSpec {
                backend: LogUrl::File(
                    PathBuf::from("/d"),
                    FileOptions {
                        segment_bytes: Some(4096),
                        ..FileOptions::default()
                    }
                ),
                retention: Some(Duration::from_secs(10)),
            })
        );
        assert_eq!(
            spec("memory://?retention=0"),
            Some(LogSpec {
                backend: LogUrl::Memory,
                retention: Some(Duration::ZERO),
            })
        );
        assert_eq!(
            spec("iggy://u:p@h:1?retention=12h").map(|s| s.retention),
            Some(Some(Duration::from_secs(12 * 3600)))
        );
        assert_eq!(spec("memory://").map(|s| s.retention), Some(None));
        // A `LogUrl` is the backend alone: the retention is parsed and dropped.
        assert_eq!(
            "memory://?retention=7d".parse::<LogUrl>().ok(),
            Some(LogUrl::Memory)
        );
    }

    #[tokio::test]
    async fn open_puts_the_retention_on_the_handle() {
        let log = open("memory://?retention=2m")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(log.retention(), Some(Duration::from_secs(120)));
        // Layers keep it.
        let layered = log.layer(crate::log::layers::TracingLayer::new());
        assert_eq!(layered.retention(), Some(Duration::from_secs(120)));
        let plain = open("memory://").await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plain.retention(), None);
        let set = plain.with_retention(Duration::ZERO);
        assert_eq!(set.retention(), Some(Duration::ZERO));
    }

    #[test]
    fn bad_urls_say_what_is_accepted() {
        for bad in [
            "kafka://x",
            "not a url",
            "iggy://127.0.0.1:1",
            "file://host/x",
            "file:///d?truncate_corrupt=yes",
            "file:///d?repair=true",
            "file:///d?segment_bytes=0",
            "file:///d?segment_bytes=1k",
            "file:///d?retention=1w",
            "memory://?retention=",
            "memory://?fsync=always",
            "iggy://u:p@h:1?segment_bytes=10",
            "iggy://u:p@h:1?retention=10",
            "iggy://u:p@h:1?tls_ca_file=/ca.pem",
            "memory://?tls_domain=x",
        ] {
            let err = bad.parse::<LogUrl>().expect_err(bad);
            assert_eq!(err.kind(), ErrorKind::Config);
            assert!(err.to_string().contains("accepted: file://"), "{err}");
            assert!(!err.to_string().contains('\n'));
        }
    }

    #[test]
    fn an_iggy_password_shows_nowhere() {
        let secret = "s3cr%65t-Pw";
        // A refused URL's error, a parsed URL's `Debug`, a redacted URL.
        for bad in [
            format!("iggy://u:{secret}@h:1?retention=10"),
            format!("iggy://u:{secret}@h:1?bogus=1"),
            format!("iggy://u:{secret}@h:1?password_file=/x"),
            format!("iggy://u:{secret}@[::1:1"),
        ] {
            let err = bad.parse::<LogUrl>().expect_err(&bad);
            assert!(!err.to_string().contains("s3cr"), "{err}");
            assert!(!format!("{err:?}").contains("s3cr"), "{err:?}");
            assert!(!redacted(&bad).contains("s3cr"), "{}", redacted(&bad));
        }
        let url = format!("iggy://u:{secret}@h:1");
        let parsed: LogSpec = url.parse().unwrap();
        assert!(
            matches!(&parsed.backend, LogUrl::Iggy { password, .. } if password == "s3cret-Pw")
        );
        assert!(!format!("{parsed:?}").contains("s3cr"), "{parsed:?}");
        assert_eq!(redacted(&url), "iggy://u:***@h:1");
        assert_eq!(redacted("memory://"), "memory://");
    }

    #[test]
    fn an_iggy_password_comes_from_the_url_a_file_or_the_environment() {
        let password = |url: &str, env: Option<&str>| {
            let spec = LogSpec::parse_with_env(url, |name| {
                assert_eq!(name, IGGY_PASSWORD_ENV);
                env.map(str::to_owned)
            });
            spec.map(|spec| match spec.backend {
                LogUrl::Iggy { password, .. } => password,
                other => panic!("{other:?}"),
            })
        };
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "from-file\nignored\n").unwrap();
        let with_file = format!("iggy://u@h:1?password_file={}", file.display());
        assert_eq!(
            password("iggy://u:in-url@h:1", Some("env")).unwrap(),
            "in-url"
        );
        assert_eq!(password(&with_file, Some("env")).unwrap(), "from-file");
        assert_eq!(
            password("iggy://u@h:1", Some("from-env")).unwrap(),
            "from-env"
        );
        assert_eq!(password("iggy://u@h:1", None).unwrap(), "");
        let both = format!("iggy://u:x@h:1?password_file={}", file.display());
        assert!(password(&both, None).is_err());
        let missing = password("iggy://u@h:1?password_file=/no/such/file", None).unwrap_err();
        assert!(missing.to_string().contains("password_file"), "{missing}");
        // Only Iggy URLs take one.
        assert!("memory://?password_file=/x".parse::<LogSpec>().is_err());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod repair_tests {
    use bytes::Bytes;

    use super::*;
    use crate::log::TopicRef;

    /// A log damaged in the middle of a segment (not a torn tail, which every open cuts) is
    /// refused, and opens from the URL with `truncate_corrupt=true`, cut at the damage.
    #[tokio::test]
    async fn truncate_corrupt_in_the_url_opens_a_damaged_log() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let topic = TopicRef::new("s", "t");
        let log = open(&url).await.unwrap();
        log.ensure_topic(&topic, 1).await.unwrap();
        for i in 0..10u8 {
            log.append(&topic, b"k", vec![Bytes::from(vec![i; 100])])
                .await
                .unwrap();
        }
        log.close().await.unwrap();
        let segment = std::fs::read_dir(dir.path().join("topics/s/t/0"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "seg"))
            .unwrap();
        let mut bytes = std::fs::read(&segment).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&segment, &bytes).unwrap();

        let refused = open(&url).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Corrupt);
        let repaired = open(&format!("{url}?truncate_corrupt=true")).await.unwrap();
        let kept = repaired.read(&topic, 0, 0, 100).await.unwrap();
        assert!(!kept.is_empty() && kept.len() < 10, "{} kept", kept.len());
        for (i, record) in kept.iter().enumerate() {
            assert_eq!(record.payload, Bytes::from(vec![i as u8; 100]));
        }
        repaired.close().await.unwrap();
        // Repaired for good: a plain open works now.
        open(&url).await.unwrap().close().await.unwrap();
    }

    /// `segment_bytes=` reaches the embedded log: small segments roll, and can be deleted.
    #[tokio::test]
    async fn segment_bytes_in_the_url_rolls_small_segments() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!(
            "file://{}?segment_bytes=256&fsync=never",
            dir.path().display()
        );
        let topic = TopicRef::new("s", "t");
        let log = open(&url).await.unwrap();
        log.ensure_topic(&topic, 1).await.unwrap();
        for i in 0..40u8 {
            log.append(&topic, b"k", vec![Bytes::from(vec![i; 40])])
                .await
                .unwrap();
        }
        let files = std::fs::read_dir(dir.path().join("topics/s/t/0"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "seg")
            })
            .count();
        assert!(files > 5, "{files} segment files");
        let sealed = log.segments(&topic, 0).await.unwrap();
        assert_eq!(sealed.len(), files - 1);
        log.close().await.unwrap();
    }
}
