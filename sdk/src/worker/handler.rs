//! The agent's code: the [`Handler`] trait, and [`handler_fn`] to build one from a closure.

use std::future::Future;

use super::TaskContext;

/// What a handler returns when it fails: any error. The worker fails the task with the
/// error's message (`Display`) as an agent message.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// The agent's code, run by a [`Worker`](super::Worker) once per turn of a task: for the
/// command that created the task, and again for each follow-up message after the task asked
/// for input.
///
/// A handler reports progress and results through the [`TaskContext`]. Returning `Ok` without
/// having ended the turn completes the task; returning `Err` fails it; a panic fails it too.
/// Delivery is at least once: after a worker crash the same turn may run again, so a handler
/// should tolerate being re-run (the log drops the repeated task's later terminal records).
#[async_trait::async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Handle one turn of a task.
    async fn handle(&self, task: TaskContext) -> Result<(), HandlerError>;
}

/// Build a [`Handler`] from an async closure:
/// `handler_fn(|task: TaskContext| async move { task.complete(Some("done")).await?; Ok(()) })`.
pub fn handler_fn<F, Fut>(f: F) -> impl Handler
where
    F: Fn(TaskContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HandlerError>> + Send,
{
    FnHandler(f)
}

/// The handler behind [`handler_fn`].
struct FnHandler<F>(F);

#[async_trait::async_trait]
impl<F, Fut> Handler for FnHandler<F>
where
    F: Fn(TaskContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HandlerError>> + Send,
{
    async fn handle(&self, task: TaskContext) -> Result<(), HandlerError> {
        (self.0)(task).await
    }
}
