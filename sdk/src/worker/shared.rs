//! What the run loop and every turn's supervisor share ([`Shared`]), how a supervisor ends
//! ([`Outcome`]), and the pieces both use: a turn's key, the retry backoff.

use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::trace::TraceContext;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::attempt::Writer;
use super::handler::Handler;
use super::reserve::Reservations;
use crate::security::RecordVerifier;
use crate::view::TaskView;

/// What the loop and every supervisor share.
pub(super) struct Shared {
    pub(super) view: TaskView,
    pub(super) handler: Arc<dyn Handler>,
    pub(super) writer: Arc<Writer>,
    /// Commands and continues run only if this admits them (`None`: all).
    pub(super) trust: Option<RecordVerifier>,
    /// One permit per handler allowed to run at once.
    pub(super) permits: Arc<Semaphore>,
    /// The most turns supervised at once (running, or waiting for a lease or a permit).
    pub(super) max_supervised: usize,
    pub(super) lease: Duration,
    pub(super) sync_timeout: Duration,
    pub(super) requeue_after: Duration,
    pub(super) shutdown_timeout: Duration,
    /// Stop taking work (shutdown requested): waiting supervisors give up at once.
    pub(super) stop: CancellationToken,
    /// The grace period is over: handlers' tokens fire, their turns are released.
    pub(super) force: CancellationToken,
    /// First turns claimed in this process's bridge's appends, until adopted.
    pub(super) reservations: Reservations,
}

/// How a supervisor ended, as far as its command's offset is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The turn is settled in the log (or never needed this worker): commit past it.
    Done,
    /// The worker gave up on it (shutdown): leave it uncommitted so it is delivered again.
    Abandoned,
}

/// Exponential backoff from 10 ms to 1 s.
#[derive(Debug)]
pub(super) struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Self {
        Self(Duration::from_millis(10))
    }
}

impl Backoff {
    pub(super) fn reset(&mut self) {
        *self = Self::default();
    }

    /// Sleep the current delay and double it; `false` (at once) if `stop` fires.
    pub(super) async fn sleep(&mut self, stop: &CancellationToken) -> bool {
        let delay = self.0;
        self.0 = (self.0 * 2).min(Duration::from_secs(1));
        tokio::select! {
            () = stop.cancelled() => false,
            () = tokio::time::sleep(delay) => true,
        }
    }
}

/// What a record on the workers' queue says of the turn it names, beside the turn.
#[derive(Debug, Default)]
pub(super) struct Queued {
    /// When its bridge wrote it.
    pub written_ms: u64,
    /// A command's task retention (0: kept forever, or not a command).
    pub retention_ms: u64,
    /// The trace context it carries.
    pub trace: Option<TraceContext>,
}
