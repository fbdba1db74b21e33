//! How to reach the server and how topics are created.

use std::fmt;
use std::time::Duration;

use iggy::prelude::{
    AutoLogin, Client, Credentials, IggyClient, IggyClientBuilder, IggyDuration, IggyExpiry,
};

use super::errors::map_err;
use crate::error::Result;
use crate::log::tls::IggyTls;
use crate::retention::DEFAULT_RETENTION;

/// The longest message expiry given to a topic: what the `iggy` crate parses at most
/// (`u32::MAX` seconds, ~136 years), far from `u64::MAX` microseconds, which means "never".
const MAX_EXPIRY: Duration = Duration::from_secs(u32::MAX as u64);

/// Options of the Iggy backend.
///
/// Only the address and the credentials are required; the rest have defaults chosen for a
/// bridge on the same network as the server (see each setter).
#[derive(Clone)]
pub struct IggyOptions {
    pub(super) address: String,
    pub(super) username: String,
    password: String,
    pub(super) fsync: bool,
    pub(super) retention: Duration,
    pub(super) reconnect_interval: Duration,
    pub(super) reconnect_for: Duration,
    pub(super) connections: usize,
    pub(super) tail_bytes: usize,
    tls: Option<IggyTls>,
}

impl IggyOptions {
    /// Options for the server's TCP listener at `address` (`host:port`), signing in as
    /// `username`.
    pub fn new(address: String, username: String, password: String) -> Self {
        Self {
            address,
            username,
            password,
            fsync: false,
            retention: DEFAULT_RETENTION,
            reconnect_interval: Duration::from_millis(200),
            reconnect_for: Duration::from_secs(10),
            connections: 4,
            tail_bytes: 4 * 1024 * 1024,
            tls: None,
        }
    }

    /// How many connections a handle opens for its appends, reads and probes (default 4,
    /// at least 1; `connections=` in an `iggy://` URL). The `iggy` client answers one call
    /// per connection at a time, so more connections let more calls overlap; group members
    /// and the end-offset pollers have connections of their own besides.
    pub fn connections(mut self, connections: usize) -> Self {
        self.connections = connections.max(1);
        self
    }

    /// How many bytes of each partition's newest records a handle keeps in memory (default
    /// 4 MiB; 0 keeps none): the records it appended or read last, so that a read of a
    /// recent task needs no round trip to the server.
    pub fn tail_bytes(mut self, bytes: usize) -> Self {
        self.tail_bytes = bytes;
        self
    }

    /// Connect over TLS (what an `iggys://` URL asks for): the server's certificate is checked
    /// against `tls.ca_file` (else the web's roots) for `tls.domain` (else the address's host).
    pub fn tls(mut self, tls: IggyTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Whether topics created by this handle fsync every saved batch (default `false`).
    ///
    /// Topics are always created with `messages_required_to_save = 1`, so an acknowledged
    /// append is in the server's files before the acknowledgement and survives a crash or
    /// SIGKILL of the server. With `fsync` it also survives a power loss of the server's
    /// machine, at the price of one fsync per batch. Like `messages_required_to_save`, it
    /// only applies when the topic is created (the server takes no update of either).
    pub fn fsync(mut self, fsync: bool) -> Self {
        self.fsync = fsync;
        self
    }

    /// The retention of finished tasks on this log (default
    /// [`DEFAULT_RETENTION`](crate::retention::DEFAULT_RETENTION); `Duration::ZERO`: keep
    /// forever), which sets the message expiry of its topics: twice the retention, so a
    /// task's earlier records outlive its finished state by the retention, or never with
    /// `ZERO`. [`ensure_topic`](crate::log::raw::LogBackend::ensure_topic) creates topics with
    /// it and updates an existing topic whose expiry differs (every other setting stays).
    /// `retention=` in an `iggy://` URL sets it.
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// The message expiry topics get (see [`retention`](Self::retention)), in whole
    /// microseconds as the server keeps it, so it compares equal to what the server reports.
    pub(super) fn message_expiry(&self) -> IggyExpiry {
        if self.retention.is_zero() {
            return IggyExpiry::NeverExpire;
        }
        let expiry = self.retention.saturating_mul(2).min(MAX_EXPIRY);
        let micros = u64::try_from(expiry.as_micros()).unwrap_or(u64::MAX).max(1);
        IggyExpiry::ExpireDuration(IggyDuration::from(micros))
    }

    /// How long to wait between attempts to reconnect to a server that went away (default
    /// 200 ms).
    pub fn reconnect_interval(mut self, interval: Duration) -> Self {
        self.reconnect_interval = interval;
        self
    }

    /// For how long one call keeps trying to reconnect before it fails with
    /// [`ErrorKind::Unavailable`](crate::error::ErrorKind::Unavailable) (default 10 s). The
    /// next call tries again.
    pub fn reconnect_for(mut self, duration: Duration) -> Self {
        self.reconnect_for = duration;
        self
    }

    /// A new signed-in TCP connection (one session on the server).
    ///
    /// No-delay matters: without it a batch waits for Nagle and delayed ACK (~40 ms). The
    /// reconnect settings replace the client's defaults (wait 5 s after a drop, then retry
    /// every second) so a restarted server is back in use within a few hundred milliseconds.
    pub(super) async fn connect(&self) -> Result<IggyClient> {
        let interval = self.reconnect_interval.max(Duration::from_millis(1));
        let retries = u32::try_from(self.reconnect_for.as_millis() / interval.as_millis())
            .unwrap_or(u32::MAX)
            .max(1);
        let mut builder = IggyClientBuilder::new()
            .with_tcp()
            .with_server_address(self.address.clone())
            .with_no_delay();
        if let Some(tls) = &self.tls {
            let host = self
                .address
                .rsplit_once(':')
                .map_or(&*self.address, |(h, _)| h);
            let domain = tls.domain.clone().unwrap_or_else(|| host.to_owned());
            builder = builder.with_tls_enabled(true).with_tls_domain(domain);
            if let Some(ca) = &tls.ca_file {
                builder = builder.with_tls_ca_file(ca.display().to_string());
            }
        }
        let client = builder
            .with_auto_sign_in(AutoLogin::Enabled(Credentials::UsernamePassword(
                self.username.clone(),
                self.password.clone().into(),
            )))
            .with_reestablish_after(IggyDuration::new(Duration::from_millis(100)))
            .with_reconnection_interval(IggyDuration::new(interval))
            .with_reconnection_max_retries(Some(retries))
            .build()
            .map_err(|e| map_err(e, format_args!("bad server address {:?}", self.address)))?;
        client.connect().await.map_err(|e| match &self.tls {
            None => map_err(e, format_args!("connecting to {}", self.address)),
            Some(tls) => map_err(
                e,
                format_args!(
                    "connecting over TLS to {} (is it a TLS listener whose certificate names {} \
                     and is signed by {}?)",
                    self.address,
                    tls.domain.as_deref().unwrap_or("its host"),
                    tls.ca_file
                        .as_ref()
                        .map_or("a web root".to_owned(), |ca| ca.display().to_string())
                ),
            ),
        })?;
        Ok(client)
    }
}

impl fmt::Debug for IggyOptions {
    // Written by hand so the password never reaches a log line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IggyOptions")
            .field("address", &self.address)
            .field("username", &self.username)
            .field("fsync", &self.fsync)
            .field("retention", &self.retention)
            .field("reconnect_interval", &self.reconnect_interval)
            .field("reconnect_for", &self.reconnect_for)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_password() {
        let options = IggyOptions::new("127.0.0.1:8090".into(), "iggy".into(), "s3cret".into());
        let shown = format!("{options:?}");
        assert!(shown.contains("127.0.0.1:8090"));
        assert!(!shown.contains("s3cret"));
    }

    #[test]
    fn topics_expire_messages_after_twice_the_retention() {
        let options = || IggyOptions::new("h:1".into(), "u".into(), "p".into());
        let hours =
            |h: u64| IggyExpiry::ExpireDuration(IggyDuration::new(Duration::from_secs(h * 3600)));
        assert_eq!(options().message_expiry(), hours(2 * 7 * 24));
        assert_eq!(
            options()
                .retention(Duration::from_secs(3600))
                .message_expiry(),
            hours(2)
        );
        assert_eq!(
            options().retention(Duration::ZERO).message_expiry(),
            IggyExpiry::NeverExpire
        );
        // Below a microsecond's precision, and beyond what the server takes: still an expiry.
        let nanos = options()
            .retention(Duration::from_nanos(1))
            .message_expiry();
        assert_eq!(u64::from(nanos), 1);
        let huge = options().retention(Duration::MAX).message_expiry();
        assert_eq!(u64::from(huge), MAX_EXPIRY.as_secs() * 1_000_000);
    }
}
