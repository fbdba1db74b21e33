//! One URL picks the backend.

use std::path::PathBuf;

use super::Log;
use super::embedded::{EmbeddedLog, EmbeddedOptions, FsyncPolicy};
use super::iggy::{IggyLog, IggyOptions};
use crate::error::{Error, ErrorKind, Result};

const ACCEPTED: &str = "accepted: file:///path/to/dir[?fsync=always|never|<N>ms][&truncate_corrupt=true] \
     (embedded, durable), memory:// (embedded, in memory), iggy://user:pass@host:port (Apache Iggy)";

/// A parsed log URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogUrl {
    /// `file:///path[?fsync=always|never|<N>ms][&truncate_corrupt=true]`: the embedded log,
    /// durable in a directory.
    File(PathBuf, FileOptions),
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

/// The options of a `file://` URL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileOptions {
    /// `fsync=always|never|<N>ms`: overrides the default policy ([`FsyncPolicy::default`]).
    pub fsync: Option<FsyncPolicy>,
    /// `truncate_corrupt=true`: on open, cut every partition at its first damaged batch (what
    /// a power loss can leave behind) instead of refusing to open; what was after it is lost.
    /// See [`EmbeddedOptions::truncate_corrupt`].
    pub truncate_corrupt: bool,
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
                let mut options = FileOptions::default();
                for (key, value) in url.query_pairs() {
                    match (key.as_ref(), value.as_ref()) {
                        ("fsync", "always") => options.fsync = Some(FsyncPolicy::Always),
                        ("fsync", "never") => options.fsync = Some(FsyncPolicy::Never),
                        ("fsync", ms) => {
                            let millis = ms
                                .strip_suffix("ms")
                                .and_then(|n| n.parse::<u64>().ok())
                                .ok_or_else(|| bad("fsync must be always, never or <N>ms"))?;
                            options.fsync = Some(FsyncPolicy::Interval(
                                std::time::Duration::from_millis(millis),
                            ));
                        }
                        ("truncate_corrupt", "true") => options.truncate_corrupt = true,
                        ("truncate_corrupt", "false") => options.truncate_corrupt = false,
                        ("truncate_corrupt", _) => {
                            return Err(bad("truncate_corrupt must be true or false"));
                        }
                        (other, _) => return Err(bad(&format!("unknown option {other:?}"))),
                    }
                }
                Ok(LogUrl::File(path, options))
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
        LogUrl::File(dir, file) => {
            let mut options = EmbeddedOptions::default().truncate_corrupt(file.truncate_corrupt);
            if let Some(fsync) = file.fsync {
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
        let file = |fsync, truncate_corrupt| FileOptions {
            fsync,
            truncate_corrupt,
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
            "file:///d?truncate_corrupt=yes",
            "file:///d?repair=true",
        ] {
            let err = bad.parse::<LogUrl>().expect_err(bad);
            assert_eq!(err.kind(), ErrorKind::Config);
            assert!(err.to_string().contains("accepted: file://"), "{err}");
            assert!(!err.to_string().contains('\n'));
        }
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
}
