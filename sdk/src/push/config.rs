//! How a push sender behaves: [`PusherConfig`] and its [`RetryPolicy`].

use std::time::Duration;

use crate::agent::AgentTopics;
use crate::security::{Destinations, RecordSigner, RecordVerifier, SigningKey, VerifyingKey};

/// How often, and for how long, one notification is tried before it is given up (a dead
/// letter on the task's log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// How many times a notification is sent at most, the first included. Default 8.
    pub attempts: u32,
    /// The wait after the first failure; each next one doubles, up to `max_delay`, each
    /// drawn between half and all of it (jitter). Default 500 ms.
    pub first_delay: Duration,
    /// The longest wait between two attempts. Default 30 s.
    pub max_delay: Duration,
    /// A notification not delivered this long after its update reached the sender is given
    /// up at its next failure, attempts left or not: a dead endpoint's backlog drains in this
    /// time rather than one full schedule after another. Default 10 min.
    pub max_age: Duration,
}

setters!(RetryPolicy {
    attempts: u32,
    first_delay: Duration,
    max_delay: Duration,
    max_age: Duration,
});

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 8,
            first_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_age: Duration::from_secs(600),
        }
    }
}

impl RetryPolicy {
    /// The policy's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// The wait after the `failures`-th failure, before jitter: `first_delay` doubled
    /// `failures - 1` times, at most `max_delay`.
    pub fn delay(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(30);
        self.first_delay
            .saturating_mul(1 << doublings)
            .min(self.max_delay)
    }
}

/// How a [`Pusher`](super::Pusher) behaves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PusherConfig {
    /// The agent whose tasks' updates are sent (its events topic is consumed).
    pub topics: AgentTopics,
    /// The consumer group every sender of the agent joins: each partition's updates are
    /// sent by one member at a time. Default `<agent>.pusher`.
    pub group: String,
    /// Where notifications may go (checked again for every address a name resolves to).
    /// Default: public addresses only.
    pub destinations: Destinations,
    /// Retries and when to give up.
    pub retry: RetryPolicy,
    /// The longest a connection may take to open. Default 5 s.
    pub connect_timeout: Duration,
    /// The longest one request may take, response included. Default 10 s.
    pub timeout: Duration,
    /// How much of a response body is read (the rest is dropped with the connection).
    /// Default 64 KiB.
    pub max_response_bytes: usize,
    /// How many requests go to one endpoint (scheme, host and port) at once. Default 8.
    pub per_endpoint: usize,
    /// After this many failures in a row an endpoint's circuit opens: nothing is sent to it
    /// until a cool-down passes (1 s, doubling per reopening up to 60 s), then one probe.
    /// Default 5.
    pub breaker_failures: u32,
    /// The most notifications held in memory (queued or being sent), give or take one
    /// record's (one per config of its task); past it the sender reads no further until some
    /// are done. Default 100,000.
    pub max_pending: usize,
    /// The most tasks whose state the sender keeps; past it the least recently updated are
    /// dropped (read back from the log when they next change). Default 100,000.
    pub max_tracked: usize,
    /// The `source` of the dead-letter records the sender writes.
    pub source: String,
    /// Signs the dead-letter records (the bridge's key: `skills/security/records.md`).
    pub signer: Option<RecordSigner>,
    /// Signs every notification (an EdDSA JWT beside the config's own credentials); `None`:
    /// a key is made when the sender starts (so receivers can only verify through its JWKS).
    /// Every sender of an agent (replicas, `agentlog pusher`s) needs the same key, or a
    /// receiver that fetched one replica's JWKS cannot verify another's notifications.
    pub notification_key: Option<SigningKey>,
    /// Public keys published beside `notification_key` in the JWKS: a rotation's previous
    /// key (senders not yet moved still sign with it) or next one (published before any
    /// sender signs with it). Default none.
    pub published_keys: Vec<VerifyingKey>,
    /// The `iss` of the notifications' JWTs: the agent's URL. Default the agent's name.
    pub issuer: Option<String>,
    /// How long the sender waits for the view to catch up with a record. Default 10 s.
    pub sync_timeout: Duration,
    /// How long [`Pusher::stop`](super::Pusher::stop) lets what was read be sent before it
    /// commits and leaves (what is not sent by then, its successor sends). Default 5 s.
    pub stop_grace: Duration,
    /// With a trust, a sender with a view of its own ([`Pusher::start`](super::Pusher::start))
    /// tells only of the records it admits, as the bridge's view applies only those (a
    /// sender sharing a view takes that view's).
    pub trust: Option<RecordVerifier>,
}

setters!(PusherConfig {
    topics: AgentTopics,
    group: String,
    destinations: Destinations,
    retry: RetryPolicy,
    connect_timeout: Duration,
    timeout: Duration,
    max_response_bytes: usize,
    per_endpoint: usize,
    breaker_failures: u32,
    max_pending: usize,
    max_tracked: usize,
    source: String,
    sync_timeout: Duration,
    stop_grace: Duration,
    published_keys: Vec<VerifyingKey>,
} optional {
    signer: RecordSigner,
    notification_key: SigningKey,
    issuer: String,
    trust: RecordVerifier,
});

impl PusherConfig {
    /// Defaults for `agent`: its topics in the default stream, public destinations only.
    pub fn new(agent: &str) -> Self {
        let topics = AgentTopics::of(agent);
        Self {
            group: format!("{}.pusher", topics.agent),
            topics,
            destinations: Destinations::new(),
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(10),
            max_response_bytes: 64 * 1024,
            per_endpoint: 8,
            breaker_failures: 5,
            max_pending: 100_000,
            max_tracked: 100_000,
            source: format!("pusher-{}", uuid::Uuid::new_v4().simple()),
            signer: None,
            notification_key: None,
            published_keys: Vec::new(),
            issuer: None,
            sync_timeout: Duration::from_secs(10),
            stop_grace: Duration::from_secs(5),
            trust: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_from_the_first_up_to_the_most() {
        let policy = RetryPolicy::new()
            .first_delay(Duration::from_millis(100))
            .max_delay(Duration::from_secs(1));
        let delays: Vec<u128> = (1..=6).map(|n| policy.delay(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(policy.delay(u32::MAX), Duration::from_secs(1));
    }
}
