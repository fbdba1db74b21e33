//! Layers: cross-cutting concerns written once for every backend, stacked on a [`Log`].
//!
//! Each layer wraps the backend (or the stack) under it and writes only what it changes:
//! it implements [`Layered`], whose defaults forward every other method to the layer below,
//! `append_all` and `read_at` included, so a backend's native forms (the embedded log's
//! one-round `append_all`, its one-pass `read_at`) survive any stack. A layer that does the
//! same thing around every call (tracing, metrics, the fault layer's delays and failures) is
//! an interceptor (`intercept.rs`): one hook gets a description of the call and the call on
//! the layer below, and one wrapper builds both for every method of [`LogBackend`]
//! (`segments` and `delete_segments` included) and of the [`GroupConsumer`]s that
//! `join_group` returns, so it sees polls and commits too. What changes a call's arguments
//! (the fault layer's cut batches and capped reads) or repeats it (the retries) overrides
//! those methods of [`Layered`].
//!
//! | layer | what | handle |
//! | --- | --- | --- |
//! | [`RetryLayer`] | retries calls that fail with a retryable error ([`Error::is_retryable`]), backing off exponentially with jitter | |
//! | [`TracingLayer`] | one `tracing` span and event per call (debug), a warning per failed one | |
//! | [`MetricsLayer`] | calls, outcomes by [`ErrorKind`], records and bytes, a latency histogram per operation | [`LogMetrics`] |
//! | [`FaultLayer`] | for tests: failures, crashes, short reads, delays and dropped connections armed at runtime | [`Faults`] |
//!
//! # Order
//!
//! `Log::new(backend).layer(a).layer(b)` puts `b` outermost: a call goes through `b`, then
//! `a`, then the backend. The recommended order, innermost first:
//!
//! ```text
//! backend  <-  FaultLayer (tests only)  <-  TracingLayer  <-  MetricsLayer  <-  RetryLayer
//! ```
//!
//! ```
//! # async fn demo() -> agentlog::Result<()> {
//! use agentlog::log::{self, layers::{LogMetrics, MetricsLayer, RetryLayer, TracingLayer}};
//! let metrics = LogMetrics::new();
//! let log = log::open("memory://")
//!     .await?
//!     .layer(TracingLayer::new())
//!     .layer(MetricsLayer::new(metrics.clone()))
//!     .layer(RetryLayer::new());
//! # Ok(()) }
//! ```
//!
//! - `FaultLayer` innermost: every other layer sees an injected fault exactly as it would see
//!   the backend failing.
//! - `TracingLayer` and `MetricsLayer` inside `RetryLayer`: each attempt is traced and counted,
//!   so a backend that needs retries shows up (`outcome="unavailable"`) even when the retry
//!   hides it from the caller. Put them outside instead to count what callers saw.
//!
//! [`log::open`](super::open) returns the bare backend; callers stack what they need
//! (`agentlog serve` and `agentlog worker` add a `MetricsLayer` for `/metrics`).
//!
//! # The rule
//!
//! A concern that is the same for every backend (retrying, timing, counting, tracing, injecting
//! faults) is a layer, never code repeated in each backend. A backend keeps only what needs
//! its internals: how it reconnects, how it maps its own errors, how it waits.
//!
//! [`Error::is_retryable`]: crate::error::Error::is_retryable
//! [`ErrorKind`]: crate::error::ErrorKind

use std::fmt;

mod fault;
mod intercept;
mod metrics;
mod otel;
mod retry;
mod trace;

pub use fault::{FaultCounts, FaultLayer, Faults};
pub use metrics::{LatencySnapshot, LogMetrics, MetricsLayer};
pub use otel::SpanLayer;
pub use retry::RetryLayer;
pub use trace::TracingLayer;

#[cfg(doc)]
use super::{
    GroupConsumer, Log,
    raw::{Layered, LogBackend},
};

/// One operation of [`LogBackend`] or [`GroupConsumer`], as layers name it (the metrics' `op`
/// label, the tracing `op` field, the fault layer's delays).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LogOp {
    /// [`LogBackend::ensure_topic`].
    EnsureTopic,
    /// [`LogBackend::partitions`].
    Partitions,
    /// [`LogBackend::append`].
    Append,
    /// [`LogBackend::append_all`].
    AppendAll,
    /// [`LogBackend::append_to`].
    AppendTo,
    /// [`LogBackend::read`].
    Read,
    /// [`LogBackend::read_at`].
    ReadAt,
    /// [`LogBackend::end_offsets`].
    EndOffsets,
    /// [`LogBackend::end_offset`].
    EndOffset,
    /// [`LogBackend::watch_end`].
    WatchEnd,
    /// [`LogBackend::segments`].
    Segments,
    /// [`LogBackend::delete_segments`].
    DeleteSegments,
    /// [`LogBackend::join_group`].
    JoinGroup,
    /// [`GroupConsumer::poll`].
    Poll,
    /// [`GroupConsumer::commit`].
    Commit,
    /// [`GroupConsumer::leave`].
    Leave,
    /// [`LogBackend::ready`].
    Ready,
    /// [`LogBackend::close`].
    Close,
}

impl LogOp {
    /// Every operation, in declaration order.
    pub const ALL: [LogOp; 18] = [
        LogOp::EnsureTopic,
        LogOp::Partitions,
        LogOp::Append,
        LogOp::AppendAll,
        LogOp::AppendTo,
        LogOp::Read,
        LogOp::ReadAt,
        LogOp::EndOffsets,
        LogOp::EndOffset,
        LogOp::WatchEnd,
        LogOp::Segments,
        LogOp::DeleteSegments,
        LogOp::JoinGroup,
        LogOp::Poll,
        LogOp::Commit,
        LogOp::Leave,
        LogOp::Ready,
        LogOp::Close,
    ];

    /// The method's name (`append_all`, `poll`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            LogOp::EnsureTopic => "ensure_topic",
            LogOp::Partitions => "partitions",
            LogOp::Append => "append",
            LogOp::AppendAll => "append_all",
            LogOp::AppendTo => "append_to",
            LogOp::Read => "read",
            LogOp::ReadAt => "read_at",
            LogOp::EndOffsets => "end_offsets",
            LogOp::EndOffset => "end_offset",
            LogOp::WatchEnd => "watch_end",
            LogOp::Segments => "segments",
            LogOp::DeleteSegments => "delete_segments",
            LogOp::JoinGroup => "join_group",
            LogOp::Poll => "poll",
            LogOp::Commit => "commit",
            LogOp::Leave => "leave",
            LogOp::Ready => "ready",
            LogOp::Close => "close",
        }
    }

    /// The position of this operation in [`LogOp::ALL`], for per-operation tables.
    const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for LogOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_has_its_index_and_a_unique_name() {
        for (i, op) in LogOp::ALL.iter().enumerate() {
            assert_eq!(op.index(), i);
        }
        let mut names: Vec<_> = LogOp::ALL.iter().map(|op| op.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), LogOp::ALL.len());
    }
}
