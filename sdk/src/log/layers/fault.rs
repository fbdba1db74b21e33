//! [`FaultLayer`] and its [`Faults`] handle: failures injected at runtime, for tests.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use super::LogOp;
use super::intercept::{Call, Intercepted, Interceptor, Outcome};
use crate::error::{Error, ErrorKind, Result};
use crate::log::raw::{Layer, Layered, LogBackend, Place, read_runs};
use crate::log::{AppendBatch, Appended, StoredRecord, TopicRef};

/// A testing tool: makes the log under it fail the way real ones do, when a test says so.
///
/// Faults are armed at runtime through the [`Faults`] handle given to [`FaultLayer::new`]
/// (clones share the faults) and counted when they fire ([`Faults::counts`]). Nothing is
/// armed at first, and an unarmed layer passes every call through unchanged, native
/// `append_all` and `read_at` included. It wraps any backend (`memory://`, `file://`,
/// `iggy://`); put it innermost, so the layers above see its faults as the backend's.
///
/// ```
/// # async fn demo() -> agentlog::Result<()> {
/// use agentlog::log::{self, layers::{FaultLayer, Faults}};
/// let faults = Faults::new();
/// let log = log::open("memory://").await?.layer(FaultLayer::new(faults.clone()));
/// faults.drop_connection(2); // the next two calls fail with Unavailable
/// # Ok(()) }
/// ```
///
/// Faults apply in this order on every call: a delay, then a crash or a dropped connection
/// (the call fails before reaching the backend), then the operation's own faults.
#[derive(Debug, Clone, Default)]
pub struct FaultLayer {
    faults: Faults,
}

impl FaultLayer {
    /// A layer whose faults `faults` arms.
    pub fn new(faults: Faults) -> Self {
        Self { faults }
    }
}

impl Layer for FaultLayer {
    fn layer(&self, inner: Arc<dyn LogBackend>) -> Arc<dyn LogBackend> {
        // The faults that change a call's arguments under those that fail it or let it
        // through, so every call meets its delay, crash or dropped connection first.
        let under = Arc::new(FaultLog {
            inner,
            faults: self.faults.clone(),
        });
        Arc::new(Intercepted::new(under, self.clone()))
    }
}

impl Interceptor for FaultLayer {
    /// The call's delay, crash or dropped connection, then an armed failure of an append,
    /// a poll or a commit; then the call, unless one of them failed it.
    async fn around<T, F>(&self, call: &Call<'_>, next: F) -> Result<T>
    where
        T: Outcome,
        F: Future<Output = Result<T>> + Send,
    {
        let op = call.op();
        self.faults.before(op).await?;
        if let Some(error) = self.faults.refusal(op) {
            return Err(error);
        }
        next.await
    }
}

/// Arms the faults of a [`FaultLayer`] and counts those that fired; cheap to clone.
///
/// Injected errors carry the kind asked for (`Unavailable` unless said otherwise) and a
/// message starting with "injected fault".
#[derive(Debug, Clone, Default)]
pub struct Faults {
    state: Arc<Mutex<State>>,
}

/// How many times each fault fired.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FaultCounts {
    /// Appends failed by [`Faults::fail_append`].
    pub append: u64,
    /// `append_all` calls cut short by [`Faults::fail_batch`].
    pub batch: u64,
    /// Crashes by [`Faults::crash_between_appends`].
    pub crash: u64,
    /// Calls refused because the handle had crashed.
    pub refused_crashed: u64,
    /// Reads shortened by [`Faults::short_reads`].
    pub short_reads: u64,
    /// Calls delayed by [`Faults::delay`] or [`Faults::delay_all`].
    pub delays: u64,
    /// Calls failed by [`Faults::drop_connection`].
    pub dropped: u64,
    /// Polls failed by [`Faults::fail_poll`].
    pub poll: u64,
    /// Commits failed by [`Faults::fail_commit`].
    pub commit: u64,
}

#[derive(Debug, Default)]
struct State {
    /// Per armed append fault: appends still to let through, and the kind to fail with.
    appends: Vec<(u32, ErrorKind)>,
    batch: Option<(usize, ErrorKind)>,
    crash_armed: bool,
    crashed: bool,
    short_reads: Option<usize>,
    delays: HashMap<LogOp, Duration>,
    delay_all: Option<Duration>,
    dropped: u32,
    polls: VecDeque<ErrorKind>,
    commits: VecDeque<ErrorKind>,
    counts: FaultCounts,
}

fn injected(kind: ErrorKind, what: &str) -> Error {
    Error::new(kind, format!("injected fault: {what}"))
}

impl Faults {
    /// A handle with nothing armed.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock left nothing half-done worth refusing.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Fail the `nth` `append` or `append_to` from now (1 = the next one) with
    /// `Unavailable`, without appending. `append_all` does not count (see
    /// [`fail_batch`](Self::fail_batch)).
    pub fn fail_append(&self, nth: u32) {
        self.fail_append_with(nth, ErrorKind::Unavailable);
    }

    /// [`fail_append`](Self::fail_append) with an error of `kind`.
    pub fn fail_append_with(&self, nth: u32, kind: ErrorKind) {
        self.state().appends.push((nth.max(1), kind));
    }

    /// Fail batch `index` (0-based) of the next `append_all` that has one, with
    /// `Unavailable`: the batches before it are appended, it and the later ones are not, and
    /// the call returns the error (as the trait allows).
    pub fn fail_batch(&self, index: usize) {
        self.fail_batch_with(index, ErrorKind::Unavailable);
    }

    /// [`fail_batch`](Self::fail_batch) with an error of `kind`.
    pub fn fail_batch_with(&self, index: usize, kind: ErrorKind) {
        self.state().batch = Some((index, kind));
    }

    /// Crash between the two appends of the next `append_all` of two or more batches: it
    /// appends batch 0 only, then this handle is crashed: that call and every later one
    /// through this layer (group members included) fail with `Unavailable` until
    /// [`heal`](Self::heal), as if the process had died between its two appends. To look
    /// at what survived, open the storage again (`file://`, `iggy://`), or heal first.
    pub fn crash_between_appends(&self) {
        self.state().crash_armed = true;
    }

    /// Whether a crash happened and was not healed.
    pub fn is_crashed(&self) -> bool {
        self.state().crashed
    }

    /// Make every `read` return at most `max` records (at least 1), which the trait allows;
    /// `read_at` then goes through the trait's default (reads) instead of the backend's own,
    /// so it must cope. Lasts until [`full_reads`](Self::full_reads) or [`heal`](Self::heal).
    pub fn short_reads(&self, max: usize) {
        self.state().short_reads = Some(max.max(1));
    }

    /// End [`short_reads`](Self::short_reads).
    pub fn full_reads(&self) {
        self.state().short_reads = None;
    }

    /// Sleep `delay` before every call of `op` (group members' `poll`, `commit` included),
    /// until [`clear_delays`](Self::clear_delays) or [`heal`](Self::heal).
    pub fn delay(&self, op: LogOp, delay: Duration) {
        self.state().delays.insert(op, delay);
    }

    /// Sleep `delay` before every call of any operation (instead of a per-operation delay).
    pub fn delay_all(&self, delay: Duration) {
        self.state().delay_all = Some(delay);
    }

    /// End every delay.
    pub fn clear_delays(&self) {
        let mut state = self.state();
        state.delays.clear();
        state.delay_all = None;
    }

    /// Fail the next `calls` calls of any operation with `Unavailable` (a dropped
    /// connection), then work again. Adds to calls still to fail.
    pub fn drop_connection(&self, calls: u32) {
        let mut state = self.state();
        state.dropped = state.dropped.saturating_add(calls);
    }

    /// Fail the next `poll` of a group member joined through this layer with `Unavailable`
    /// (each call arms one more failed poll).
    pub fn fail_poll(&self) {
        self.fail_poll_with(ErrorKind::Unavailable);
    }

    /// [`fail_poll`](Self::fail_poll) with an error of `kind`.
    pub fn fail_poll_with(&self, kind: ErrorKind) {
        self.state().polls.push_back(kind);
    }

    /// Fail the next `commit` of a group member joined through this layer with
    /// `Unavailable`, without committing (each call arms one more).
    pub fn fail_commit(&self) {
        self.fail_commit_with(ErrorKind::Unavailable);
    }

    /// [`fail_commit`](Self::fail_commit) with an error of `kind`.
    pub fn fail_commit_with(&self, kind: ErrorKind) {
        self.state().commits.push_back(kind);
    }

    /// Disarm every fault and end a crash: the handle works again (a restarted process).
    /// The counts are kept.
    pub fn heal(&self) {
        let mut state = self.state();
        let counts = state.counts;
        *state = State {
            counts,
            ..State::default()
        };
    }

    /// How many times each fault fired so far.
    pub fn counts(&self) -> FaultCounts {
        self.state().counts
    }

    /// What every call goes through first: its delay, then a crash or a dropped connection.
    async fn before(&self, op: LogOp) -> Result<()> {
        let delay = {
            let mut state = self.state();
            let delay = state.delay_all.or_else(|| state.delays.get(&op).copied());
            if delay.is_some() {
                state.counts.delays += 1;
            }
            delay
        };
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        let mut state = self.state();
        if state.crashed {
            state.counts.refused_crashed += 1;
            return Err(injected(ErrorKind::Unavailable, "the process crashed"));
        }
        if state.dropped > 0 {
            state.dropped -= 1;
            state.counts.dropped += 1;
            return Err(injected(ErrorKind::Unavailable, "connection dropped"));
        }
        Ok(())
    }

    /// The kind an `append` must fail with, if an armed fault says so.
    fn append_fault(&self) -> Option<ErrorKind> {
        let mut state = self.state();
        let mut fired = None;
        state.appends.retain_mut(|(left, kind)| {
            *left -= 1;
            if *left == 0 {
                fired.get_or_insert(*kind);
            }
            *left > 0
        });
        if fired.is_some() {
            state.counts.append += 1;
        }
        fired
    }

    /// The error an armed fault fails a call of `op` with instead of making it (an
    /// `append`, a group member's `poll` or `commit`).
    fn refusal(&self, op: LogOp) -> Option<Error> {
        match op {
            LogOp::Append | LogOp::AppendTo => self
                .append_fault()
                .map(|kind| injected(kind, "append failed")),
            LogOp::Poll => {
                let mut state = self.state();
                let fault = state.polls.pop_front();
                state.counts.poll += u64::from(fault.is_some());
                fault.map(|kind| injected(kind, "poll failed"))
            }
            LogOp::Commit => {
                let mut state = self.state();
                let fault = state.commits.pop_front();
                state.counts.commit += u64::from(fault.is_some());
                fault.map(|kind| injected(kind, "commit failed"))
            }
            _ => None,
        }
    }

    /// The number of records a `read` of up to `max` may return.
    fn read_cap(&self, max: usize) -> usize {
        let mut state = self.state();
        match state.short_reads {
            Some(cap) if cap < max => {
                state.counts.short_reads += 1;
                cap
            }
            _ => max,
        }
    }
}

/// What the next `append_all` of `batches` batches must do.
enum AllFault {
    None,
    Crash,
    Batch(usize, ErrorKind),
}

/// The backend under a [`FaultLayer`]'s interceptor: the faults that change what a call
/// asks (an `append_all` cut short, capped reads); every other call forwards.
#[derive(Debug)]
struct FaultLog {
    inner: Arc<dyn LogBackend>,
    faults: Faults,
}

impl FaultLog {
    fn all_fault(&self, batches: usize) -> AllFault {
        let mut state = self.faults.state();
        if state.crash_armed && batches >= 2 {
            state.crash_armed = false;
            return AllFault::Crash;
        }
        match state.batch {
            Some((index, kind)) if index < batches => {
                state.batch = None;
                state.counts.batch += 1;
                AllFault::Batch(index, kind)
            }
            _ => AllFault::None,
        }
    }
}

#[async_trait]
impl Layered for FaultLog {
    fn inner(&self) -> &Arc<dyn LogBackend> {
        &self.inner
    }

    async fn append_all(&self, mut batches: Vec<AppendBatch<'_>>) -> Result<Vec<Appended>> {
        match self.all_fault(batches.len()) {
            AllFault::None => self.inner.append_all(batches).await,
            AllFault::Crash => {
                batches.truncate(1);
                let first = self.inner.append_all(batches).await;
                {
                    let mut state = self.faults.state();
                    state.crashed = true;
                    state.counts.crash += 1;
                }
                first?;
                Err(injected(
                    ErrorKind::Unavailable,
                    "the process crashed between two appends",
                ))
            }
            AllFault::Batch(index, kind) => {
                batches.truncate(index);
                if !batches.is_empty() {
                    self.inner.append_all(batches).await?;
                }
                Err(injected(
                    kind,
                    &format!("batch {index} of append_all failed"),
                ))
            }
        }
    }

    async fn read(
        &self,
        topic: &TopicRef,
        partition: u32,
        from: u64,
        max: usize,
    ) -> Result<Vec<StoredRecord>> {
        let max = self.faults.read_cap(max);
        self.inner.read(topic, partition, from, max).await
    }

    async fn read_at(
        &self,
        topic: &TopicRef,
        partition: u32,
        offsets: &[u64],
        places: &[Place],
    ) -> Result<Vec<StoredRecord>> {
        if self.faults.state().short_reads.is_none() {
            return self.inner.read_at(topic, partition, offsets, places).await;
        }
        // The trait's default over short reads: what a backend without its own `read_at`
        // does when its reads come back short.
        read_runs(topic, partition, offsets, |from, max| {
            let max = self.faults.read_cap(max);
            self.inner.read(topic, partition, from, max)
        })
        .await
    }
}

#[cfg(test)]
mod tests;
