//! Push notifications that survive restarts: a sender that consumes the agent's events topic
//! and POSTs every update of a task to each of the task's webhooks (its push configs, fold
//! rule 16), in log order per config, retried with backoff, given up only with a dead-letter
//! record on the log, and signed.
//!
//! The sender is a member of the agent's push consumer group (`<agent>.pusher`): every
//! partition's updates are sent by one member at a time, however many senders run (in each
//! `serve`, or apart as `agentlog pusher`), and a partition's progress is its committed
//! offset: a restarted or replacing sender starts where the last one stopped, sending again
//! only what was in flight. How it decides what to send is in [`tracked`]'s module doc, how
//! it sends in [`lanes`]', what it commits in [`progress`]'; the rules in
//! `skills/push/SKILL.md`.
//!
//! ```no_run
//! # async fn run() -> agentlog::Result<()> {
//! use agentlog::push::{Pusher, PusherConfig};
//! let log = agentlog::log::open("file:///var/lib/agentlog").await?;
//! let pusher = Pusher::start(log, PusherConfig::new("echo")).await?;
//! // ... until shutdown:
//! pusher.stop().await;
//! # Ok(()) }
//! ```

mod client;
mod config;
mod consume;
mod endpoint;
mod gate;
mod lanes;
mod metrics;
mod park;
mod progress;
mod sign;
mod tracked;
pub mod verify;

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::log::Log;
use crate::security::SigningKey;
use crate::view::{TaskView, ViewOptions};

pub use config::{PusherConfig, RetryPolicy};
pub use lanes::SIGNATURE_HEADER;
pub use metrics::{PushCounts, PushMetrics};
pub use sign::{JWT_LIFETIME, NotificationSigner, body_sha256};

/// What a server publishes of push notifications: the keys that sign them (served at
/// `/.well-known/jwks.json`) and, when the sender runs in the process, its counters (on
/// `/metrics`). Equal when the same keys and the same sender's counters.
#[derive(Debug, Clone)]
pub struct Published {
    jwks: Arc<serde_json::Value>,
    metrics: Option<Arc<PushMetrics>>,
}

impl Published {
    /// The keys of `signer`, for a server whose sender runs apart (`agentlog pusher` with the
    /// same key).
    pub fn keys(signer: &NotificationSigner) -> Self {
        Self {
            jwks: Arc::new(signer.jwks()),
            metrics: None,
        }
    }

    /// The JWKS document.
    pub fn jwks(&self) -> &serde_json::Value {
        &self.jwks
    }

    /// The sender's counters, when it runs in this process.
    pub fn metrics(&self) -> Option<&PushMetrics> {
        self.metrics.as_deref()
    }
}

impl PartialEq for Published {
    fn eq(&self, other: &Self) -> bool {
        let same_sender = match (&self.metrics, &other.metrics) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        same_sender && self.jwks == other.jwks
    }
}

impl Eq for Published {}

/// A running push sender. Stops when [`stop`](Self::stop)ped or dropped.
#[derive(Debug)]
pub struct Pusher {
    /// Stops the reading; the lanes finish what was read (for a grace), then stop.
    reading: CancellationToken,
    /// Stops everything at once.
    cancel: CancellationToken,
    reader: Mutex<Option<JoinHandle<()>>>,
    signer: NotificationSigner,
    metrics: Arc<PushMetrics>,
    view: TaskView,
}

impl Pusher {
    /// Start a sender over `log` with a view of its own, holding only the partitions the
    /// push group gives it (each from the agent's checkpoint of it, if any): what `agentlog
    /// pusher` runs, and `serve` when its bridge holds a share of the partitions.
    pub async fn start(log: Log, config: PusherConfig) -> Result<Self> {
        config.topics.ensure(&log).await?;
        let mut options = ViewOptions::restore_only(config.topics.checkpoints.clone());
        options.verifier = config.trust.clone();
        options.holding = Some(Vec::new());
        let view = TaskView::start_with(log.clone(), config.topics.events.clone(), options).await?;
        Self::start_over(log, config, view, true).await
    }

    /// Start a sender over `log` sharing `view` (a bridge's holding every partition, in the
    /// same process: what `serve` runs).
    pub async fn start_with_view(log: Log, config: PusherConfig, view: TaskView) -> Result<Self> {
        Self::start_over(log, config, view, false).await
    }

    /// Start a sender over `view`, the sender's own (`own_view`: it holds the group's
    /// partitions only) or a bridge's.
    async fn start_over(
        log: Log,
        config: PusherConfig,
        view: TaskView,
        own_view: bool,
    ) -> Result<Self> {
        config.topics.ensure(&log).await?;
        let key = match config.notification_key.clone() {
            Some(key) => key,
            None => SigningKey::generate()?,
        };
        let issuer = config
            .issuer
            .clone()
            .unwrap_or_else(|| config.topics.agent.clone());
        let signer = NotificationSigner::new(key, issuer).publishing(config.published_keys.clone());
        let client = client::Client::new(
            config.destinations.clone(),
            config.connect_timeout,
            config.timeout,
            config.max_response_bytes,
        )?;
        let member = log.join_group(&config.topics.events, &config.group).await?;
        let cancel = CancellationToken::new();
        let metrics = Arc::new(PushMetrics::default());
        let verifier = view.verifier().cloned();
        let shared = Arc::new(lanes::Shared::new(
            client,
            config.retry,
            config.per_endpoint,
            config.breaker_failures,
            log.clone(),
            config.topics.events.clone(),
            config.source.clone(),
            config.signer.clone(),
            signer.clone(),
            metrics.clone(),
            cancel.clone(),
        ));
        let tracker = tracked::Tracker::new(
            view.clone(),
            own_view,
            log.clone(),
            config.topics.events.clone(),
            config.max_tracked,
            config.sync_timeout,
        );
        let reading = CancellationToken::new();
        let reader = tokio::spawn(consume::run(
            shared,
            tracker,
            member,
            verifier,
            config.max_pending.max(1),
            reading.clone(),
            config.stop_grace,
        ));
        Ok(Self {
            reading,
            cancel,
            reader: Mutex::new(Some(reader)),
            signer,
            metrics,
            view,
        })
    }

    /// The partitions the sender's view holds: of its own view ([`start`](Self::start)),
    /// those the push group gave it and it has read; of a bridge's, the bridge's.
    pub fn partitions_held(&self) -> Vec<u32> {
        self.view.held_partitions()
    }

    /// The sender's counters.
    pub fn metrics(&self) -> Arc<PushMetrics> {
        self.metrics.clone()
    }

    /// What a server publishes of this sender: its keys and its counters
    /// (`HttpConfig::push`).
    pub fn published(&self) -> Published {
        Published {
            jwks: Arc::new(self.signer.jwks()),
            metrics: Some(self.metrics.clone()),
        }
    }

    /// What signs the notifications: its JWKS is what `/.well-known/jwks.json` serves.
    pub fn signer(&self) -> &NotificationSigner {
        &self.signer
    }

    /// Stop: nothing more is read; what was read is sent for up to
    /// [`PusherConfig::stop_grace`], the progress is committed and the group left (what was
    /// still not done then is sent again by the next sender).
    pub async fn stop(&self) {
        self.reading.cancel();
        let reader = self.reader.lock().take();
        if let Some(reader) = reader {
            let _ = reader.await;
        }
    }
}

impl Drop for Pusher {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

#[cfg(test)]
mod tests;
