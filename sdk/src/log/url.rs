//! One URL picks the backend.

use std::path::PathBuf;
use std::sync::Arc;

use super::Log;
use super::embedded::{EmbeddedLog, EmbeddedOptions};
use super::iggy::{IggyLog, IggyOptions};
use crate::error::{Error, ErrorKind, Result};

const ACCEPTED: &str = "accepted: file:///path/to/dir (embedded, durable), memory:// (embedded, in memory), \
     iggy://user:pass@host:port (Apache Iggy)";

/// A parsed log URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogUrl {
    /// `file:///path`: the embedded log, durable in a directory.
    File(PathBuf),
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
                Ok(LogUrl::File(path))
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
        LogUrl::Memory => Arc::new(EmbeddedLog::in_memory()),
        LogUrl::File(dir) => Arc::new(EmbeddedLog::open(dir, EmbeddedOptions::default())?),
        LogUrl::Iggy {
            address,
            username,
            password,
        } => Arc::new(IggyLog::connect(IggyOptions::new(address, username, password)).await?),
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
            Some(LogUrl::File(PathBuf::from("/var/lib/agentlog")))
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
