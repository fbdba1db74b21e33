//! How to reach the server and how topics are created.

use std::fmt;
use std::time::Duration;

use iggy::prelude::{AutoLogin, Client, Credentials, IggyClient, IggyClientBuilder, IggyDuration};

use super::errors::map_err;
use crate::error::Result;

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
    pub(super) reconnect_interval: Duration,
    pub(super) reconnect_for: Duration,
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
            reconnect_interval: Duration::from_millis(200),
            reconnect_for: Duration::from_secs(10),
        }
    }

    /// Whether topics created by this handle fsync every saved batch (default `false`).
    ///
    /// Topics are always created with `messages_required_to_save = 1`, so an acknowledged
    /// append is in the server's files before the acknowledgement and survives a crash or
    /// SIGKILL of the server. With `fsync` it also survives a power loss of the server's
    /// machine, at the price of one fsync per batch. Like every Iggy topic setting, it only
    /// applies when the topic is created.
    pub fn fsync(mut self, fsync: bool) -> Self {
        self.fsync = fsync;
        self
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
        let client = IggyClientBuilder::new()
            .with_tcp()
            .with_server_address(self.address.clone())
            .with_no_delay()
            .with_auto_sign_in(AutoLogin::Enabled(Credentials::UsernamePassword(
                self.username.clone(),
                self.password.clone().into(),
            )))
            .with_reestablish_after(IggyDuration::new(Duration::from_millis(100)))
            .with_reconnection_interval(IggyDuration::new(interval))
            .with_reconnection_max_retries(Some(retries))
            .build()
            .map_err(|e| map_err(e, format_args!("bad server address {:?}", self.address)))?;
        client
            .connect()
            .await
            .map_err(|e| map_err(e, format_args!("connecting to {}", self.address)))?;
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
            .field("reconnect_interval", &self.reconnect_interval)
            .field("reconnect_for", &self.reconnect_for)
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
}
