//! Push notifications in `serve` (`--push on|external|off`) and the sender's flags, which
//! `agentlog pusher` shares.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{CliError, CliResult};
use agentlog::bridge::Bridge;
use agentlog::log::Log;
use agentlog::push::{NotificationSigner, Published, Pusher, PusherConfig, RetryPolicy};
use agentlog::retention::parse_duration;
use agentlog::security::{Destinations, RecordSigner, SigningKey, VerifyingKey};

/// Where push notifications are sent from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum PushMode {
    // The sender runs in this process.
    On,
    // Declared and configured here, sent by `agentlog pusher` elsewhere.
    External,
    // Not served: the config methods answer -32003.
    Off,
}

/// `serve`'s push flags.
#[derive(Debug, Args)]
pub(super) struct PushArgs {
    /// Push notifications: `on` runs the sender in this process (the card declares
    /// pushNotifications, the config methods work); `external` declares and configures them
    /// here while `agentlog pusher` sends (give it the same --push-key); `off` answers every
    /// config method -32003.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = PushMode::On)]
    push: PushMode,

    #[command(flatten)]
    pub(super) sender: SenderArgs,
}

/// The sender's flags (`serve`, `pusher`).
#[derive(Debug, Args)]
pub(super) struct SenderArgs {
    /// Allow webhooks on loopback, private and link-local addresses (tests and local
    /// development). Default: public addresses only.
    #[arg(long)]
    push_allow_private: bool,

    /// A webhook host allowed whatever address it resolves to (a receiver inside the
    /// network). Repeatable.
    #[arg(long = "push-allow", value_name = "HOST")]
    push_allow: Vec<String>,

    /// How many times a notification is sent at most, the first included; then it is given
    /// up as a dead-letter record on its task's log.
    #[arg(long, value_name = "N", default_value_t = RetryPolicy::default().attempts)]
    push_attempts: u32,

    /// The wait after a notification's first failure; it doubles per failure (with jitter)
    /// up to --push-max-delay.
    #[arg(long, value_name = "DURATION", default_value = "500ms", value_parser = parse_duration)]
    push_retry_delay: Duration,

    /// The longest wait between two attempts.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    push_max_delay: Duration,

    /// A notification still failing this long after its update is given up at once.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    push_max_age: Duration,

    /// The ed25519 key (PKCS#8 PEM) that signs the notifications' JWTs, served at
    /// /.well-known/jwks.json. Give every replica and pusher of the agent the same one.
    /// Default: the first --signing-key, else a key made at start (receivers can verify only
    /// through the JWKS of the process that sent).
    #[arg(long, value_name = "FILE")]
    push_key: Option<PathBuf>,

    /// A public key (SPKI PEM or JWK; a private key file gives its public half) published
    /// in /.well-known/jwks.json beside --push-key: a rotation's previous key, which senders
    /// not yet restarted still sign with, or its next one. Repeatable.
    #[arg(long = "push-publish-key", value_name = "FILE")]
    push_publish_key: Vec<PathBuf>,

    /// The notifications' JWT issuer (`iss`). Default: serve's public URL; the agent's name
    /// for `agentlog pusher`.
    #[arg(long, value_name = "URL")]
    push_issuer: Option<String>,
}

impl PushArgs {
    /// Where configs may send when push notifications are served here, else `None`.
    pub(super) fn destinations(&self) -> Option<Destinations> {
        (self.push != PushMode::Off).then(|| self.sender.destinations())
    }
}

impl SenderArgs {
    /// The destinations of `--push-allow-private` and `--push-allow`.
    pub(super) fn destinations(&self) -> Destinations {
        self.push_allow.iter().fold(
            Destinations::new().allow_private(self.push_allow_private),
            |d, host| d.allow_host(host.clone()),
        )
    }

    /// The key of `--push-key`, else `fallback`.
    pub(super) fn key(&self, fallback: Option<&SigningKey>) -> CliResult<Option<SigningKey>> {
        match &self.push_key {
            Some(path) => SigningKey::load(path)
                .map(Some)
                .map_err(|e| CliError::msg(format!("bad --push-key: {}", e.message()))),
            None => Ok(fallback.cloned()),
        }
    }

    /// The keys of `--push-publish-key`.
    pub(super) fn published_keys(&self) -> CliResult<Vec<VerifyingKey>> {
        self.push_publish_key
            .iter()
            .map(|path| {
                VerifyingKey::load(path)
                    .or_else(|e| {
                        SigningKey::load(path)
                            .map(|key| key.verifying_key())
                            .map_err(|_| e)
                    })
                    .map_err(|e| {
                        CliError::msg(format!(
                            "bad --push-publish-key {}: {}",
                            path.display(),
                            e.message()
                        ))
                    })
            })
            .collect()
    }

    /// The sender's configuration for `agent`; `issuer` unless --push-issuer says.
    pub(super) fn config(
        &self,
        agent: &str,
        issuer: &str,
        key: Option<SigningKey>,
        signer: Option<RecordSigner>,
    ) -> CliResult<PusherConfig> {
        let retry = RetryPolicy::new()
            .attempts(self.push_attempts.max(1))
            .first_delay(self.push_retry_delay)
            .max_delay(self.push_max_delay.max(self.push_retry_delay))
            .max_age(self.push_max_age);
        let mut config = PusherConfig::new(agent)
            .destinations(self.destinations())
            .retry(retry)
            .issuer(
                self.push_issuer
                    .clone()
                    .unwrap_or_else(|| issuer.to_owned()),
            );
        config.notification_key = key;
        config.published_keys = self.published_keys()?;
        config.signer = signer;
        Ok(config)
    }
}

/// What `serve` runs and publishes of push notifications: the sender (with `--push on`) and
/// what the router serves (its keys, its counters).
pub(super) struct Served {
    pub(super) pusher: Option<Pusher>,
    pub(super) published: Option<Published>,
}

/// Start what `--push` asks for over `bridge`'s view; `issuer` is the public URL.
pub(super) async fn start(
    args: &PushArgs,
    log: &Log,
    bridge: &Bridge,
    card_key: Option<&SigningKey>,
    signer: Option<RecordSigner>,
    issuer: &str,
) -> CliResult<Served> {
    let key = args.sender.key(card_key)?;
    match args.push {
        PushMode::Off => Ok(Served {
            pusher: None,
            published: None,
        }),
        PushMode::External => {
            let key = key.ok_or_else(|| {
                CliError::msg(
                    "--push external needs --push-key (or --signing-key): the key `agentlog pusher` signs with, published here",
                )
            })?;
            let issuer = args.sender.push_issuer.as_deref().unwrap_or(issuer);
            let signer =
                NotificationSigner::new(key, issuer).publishing(args.sender.published_keys()?);
            Ok(Served {
                pusher: None,
                published: Some(Published::keys(&signer)),
            })
        }
        PushMode::On => {
            let topics = bridge.config().topics.clone();
            let config = args
                .sender
                .config(&topics.agent, issuer, key, signer)?
                .topics(topics);
            // A member sharing the partitions holds its share only; the sender takes the
            // partitions its consumer group gives it, so it follows them in a view of its own
            // that holds those only (its memory is its group share, not every task).
            let pusher = if bridge.config().holding.is_some() {
                Pusher::start(log.clone(), config).await?
            } else {
                Pusher::start_with_view(log.clone(), config, bridge.view().clone()).await?
            };
            let published = Some(pusher.published());
            Ok(Served {
                pusher: Some(pusher),
                published,
            })
        }
    }
}
