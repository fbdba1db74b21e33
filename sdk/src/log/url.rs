//! One URL picks the backend.

use std::path::PathBuf;

use super::Log;
use super::embedded::{EmbeddedLog, EmbeddedOptions, FsyncPolicy};
use super::iggy::{IggyLog, IggyOptions};
use crate::error::{Error, ErrorKind, Result};

const ACCEPTED: &str = "accepted: file:///path/to/dir[?fsync=always|never|<N>ms] (embedded, durable), \
     memory:// (embedded, in memory), iggy://user:pass@host:port (Apache Iggy)";

/// A parsed log URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogUrl {
    /// `file:///path[?fsync=always|never|<N>ms]`: the embedded log, durable in a directory;
    /// `fsync` overrides the default policy ([`FsyncPolicy::default`]).
    File(PathBuf, Option<FsyncPolicy>),
    /// `memory://`: the embedded log, in memory only.
    Memory,
    /// `iggy://user:pass@host:port`: an Apache Iggy server over TCP.
    Iggy {
        /// `host:port` of the server's TCP listener.
        address: String,
        /// User name.
        username: String,
        /// Password.
        password: String,
    },
}

impl std::str::FromStr for LogUrl {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| {
            Error::new(
                ErrorKind::Config,
                format!("bad log URL {s:?}: {why}; {ACCEPTED}"),
            )
        };
        let url = ::url::Url::parse(s).map_err(|e| bad(&e.to_string()))?;
        match url.scheme() {
            "memory" => Ok(LogUrl::Memory),
            "file" => {
                let path = url
                    .to_file_path()
                    .map_err(|()| bad("not an absolute local path"))?;
                let mut fsync = None;
                for (key, value) in url.query_pairs() {
                    match (key.as_ref(), value.as_ref()) {
                        ("fsync", "always") => fsync = Some(FsyncPolicy::Always),
                        ("fsync", "never") => fsync = Some(FsyncPolicy::Never),
                        ("fsync", ms) => {
                            let millis = ms
                                .strip_suffix("ms")
                                .and_then(|n| n.parse::<u64>().ok())
                                .ok_or_else(|| bad("fsync must be always, never or <N>ms"))?;
                            fsync = Some(FsyncPolicy::Interval(std::time::Duration::from_millis(
                                millis,
                            )));
                        }
                        (other, _) => return Err(bad(&format!("unknown option {other:?}"))),
                    }
                }
                Ok(LogUrl::File(path, fsync))
            }
            "iggy" => {
                let host = url.host_str().ok_or_else(|| bad("no host"))?;
                let port = url.port().unwrap_or(8090);
                let username = percent_decode(url.username());
                let password = url.password().map(percent_decode).unwrap_or_default();
                if username.is_empty() {
                    return Err(bad("no user name (iggy://user:pass@host:port)"));
                }
                Ok(LogUrl::Iggy {
                    address: format!("{host}:{port}"),
                    username,
                    password,
                })
            }
            other => Err(bad(&format!("unknown scheme {other:?}"))),
        }
    }
}

fn percent_decode(s: &str) -> String {
    ::url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Open the backend a URL names, with default options.
pub async fn open(url: &str) -> Result<Log> {
    Ok(match url.parse::<LogUrl>()? {
        LogUrl::Memory => Log::new(EmbeddedLog::in_memory()),
        LogUrl::File(dir, fsync) => {
            let mut options = EmbeddedOptions::default();
            if let Some(fsync) = fsync {
                options = options.fsync(fsync);
            }
            Log::new(EmbeddedLog::open(dir, options)?)
        }
        LogUrl::Iggy {
            address,
            username,
            password,
        } => Log::new(IggyLog::connect(IggyOptions::new(address, username, password)).await?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_scheme() {
        assert_eq!("memory://".parse::<LogUrl>().ok(), Some(LogUrl::Memory));
        assert_eq!(
            "file:///var/lib/agentlog".parse::<LogUrl>().ok(),
            Some(LogUrl::File(PathBuf::from("/var/lib/agentlog"), None))
        );
        assert_eq!(
            "file:///d?fsync=5ms".parse::<LogUrl>().ok(),
            Some(LogUrl::File(
                PathBuf::from("/d"),
                Some(FsyncPolicy::Interval(std::time::Duration::from_millis(5)))
            ))
        );
        assert_eq!(
            "file:///d?fsync=never".parse::<LogUrl>().ok(),
            Some(LogUrl::File(PathBuf::from("/d"), Some(FsyncPolicy::Never)))
        );
        assert_eq!(
            "iggy://iggy:secret@127.0.0.1:8090".parse::<LogUrl>().ok(),
            Some(LogUrl::Iggy {
                address: "127.0.0.1:8090".into(),
                username: "iggy".into(),
                password: "secret".into()
            })
        );
    }

    #[test]
    fn bad_urls_say_what_is_accepted() {
        for bad in [
            "kafka://x",
            "not a url",
            "iggy://127.0.0.1:1",
            "file://host/x",
        ] {
            let err = bad.parse::<LogUrl>().expect_err(bad);
            assert_eq!(err.kind(), ErrorKind::Config);
            assert!(err.to_string().contains("accepted: file://"), "{err}");
            assert!(!err.to_string().contains('\n'));
        }
    }
}
