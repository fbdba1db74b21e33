//! A new task followed from the view's events alone, by the send that created it: nothing
//! read back from the log, no task of its own.
//!
//! A send that has just written a task's command holds what that record makes of the task
//! (its header and the params it parsed: [`ChangeFold::new`]). It registers for the task's
//! events before it appends the command ([`TaskView::watch_new`]); the view moves that
//! registration to the task when it applies the creating command, whoever applies it (the
//! append itself, or the follower with the records after it in one go). So the events it
//! receives are every change the view's machine applies after the command, in log order:
//! folded onto the command, they give the same task as a fold of the task's records
//! ([`ChangeFold`], tested against [`TaskFold`] in the wire crate). A blocking send answers
//! from them, and a tool call reads its progress and answer from them, instead of reading the
//! task's records back and folding them again.
//!
//! Whenever that does not hold (the subscriber fell behind the view's buffer, or the task
//! left the view) the callers go the way that reads from the log.
//!
//! [`TaskFold`]: agentlog_wire::fold::TaskFold

use std::sync::Arc;

use agentlog_wire::a2a::{Message, SendMessageRequest, Task};
use agentlog_wire::fold::ChangeFold;
use agentlog_wire::{RecordHeader, TaskState};
use futures::StreamExt;
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::time::Instant;

use super::limits::Permit;
use super::stream::{Close, Start, StreamEvent, TaskStream, task_stream, to_response};
use crate::error::{Error, ErrorKind, Result};
use crate::view::{TaskEvent, TaskView};

/// A task's events as the view tells them.
pub(super) type Events = broadcast::Receiver<Arc<TaskEvent>>;

/// How a blocking send's wait on its new task ended.
pub(super) enum Settled {
    /// The task as the fold of its records gives it now (terminal or interrupted, or as it
    /// was when the wait timed out).
    Task(Task),
    /// A reply answered in the task's place (fold rule 15).
    Answer(Message),
    /// The events alone cannot tell (the subscriber fell behind, or the task started over):
    /// answer from the log.
    Unknown,
}

/// Fold the events of the new task whose command is `header` (its params parsed into
/// `request`) until the task is terminal or interrupted, or until `deadline`: then the task
/// as the view has applied it so far.
pub(super) async fn settle(
    mut events: Events,
    header: &RecordHeader,
    request: SendMessageRequest,
    deadline: Instant,
) -> Settled {
    let mut fold = ChangeFold::new(header, request);
    let mut state = TaskState::Submitted;
    while !settled(state) {
        let event = match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(event)) => event,
            Ok(Err(RecvError::Lagged(_))) => return Settled::Unknown,
            // Nothing more will come (the task left the view): what the log says then.
            Ok(Err(RecvError::Closed)) => return Settled::Unknown,
            Err(_) => {
                // Out of time: the task as the view holds it now, which is every event it has
                // sent so far.
                loop {
                    match events.try_recv() {
                        Ok(event) => {
                            if !fold.apply(&event.change, event.timestamp_ms) {
                                return Settled::Unknown;
                            }
                        }
                        Err(TryRecvError::Empty | TryRecvError::Closed) => break,
                        Err(TryRecvError::Lagged(_)) => return Settled::Unknown,
                    }
                }
                break;
            }
        };
        if !fold.apply(&event.change, event.timestamp_ms) {
            return Settled::Unknown;
        }
        state = event.state;
    }
    match fold.into_parts() {
        (_, Some(answer)) => Settled::Answer(answer),
        (task, None) => Settled::Task(task),
    }
}

fn settled(state: TaskState) -> bool {
    state.is_terminal() || state.is_interrupted()
}

/// The events of a turn a send of this bridge started, until the turn ends (the task is
/// terminal or interrupted), each with its log position, without the snapshot a
/// `SendStreamingMessage` stream starts with: what a caller that only wants the turn's
/// progress and its end needs (a tool call answered on its request).
pub(crate) struct TurnEvents {
    source: Source,
    /// The stream's place among the bridge's open streams, held while it is read.
    _place: Permit,
}

enum Source {
    /// Straight from the view, in the reader's task.
    Live {
        view: TaskView,
        task_id: Arc<str>,
        events: Events,
        /// The last position sent (or the command's).
        position: u64,
        done: bool,
    },
    /// A task stream, which reads from the log what it has to.
    Stream(TaskStream),
}

impl TurnEvents {
    /// From the view's events of `task_id`, subscribed to right after its command at `command`.
    pub(super) fn live(
        view: TaskView,
        task_id: Arc<str>,
        events: Events,
        command: u64,
        place: Permit,
    ) -> Self {
        Self {
            source: Source::Live {
                view,
                task_id,
                events,
                position: command,
                done: false,
            },
            _place: place,
        }
    }

    /// From a task stream (its first event may be a snapshot of the task).
    pub(super) fn stream(stream: TaskStream, place: Permit) -> Self {
        Self {
            source: Source::Stream(stream),
            _place: place,
        }
    }

    /// The next event; `None` after the last one (or if the task left the view first).
    pub(crate) async fn next(&mut self) -> Option<Result<StreamEvent>> {
        loop {
            let (view, task_id, events, position, done) = match &mut self.source {
                Source::Stream(stream) => return stream.next().await,
                Source::Live {
                    view,
                    task_id,
                    events,
                    position,
                    done,
                } => (view, task_id, events, position, done),
            };
            if *done {
                return None;
            }
            match events.recv().await {
                Ok(event) => {
                    if event.offset <= *position {
                        continue;
                    }
                    *position = event.offset;
                    let last = Close::AtTurnEnd.ends(event.state);
                    *done = last;
                    if let Some(response) = to_response(&event) {
                        return Some(Ok(StreamEvent {
                            position: event.offset,
                            response,
                            last,
                        }));
                    }
                }
                Err(RecvError::Lagged(_)) => {
                    // Fell behind the view's buffer: go on from the log, after what was sent.
                    let Some((info, events)) = view.subscribe(None, task_id) else {
                        return Some(Err(gone(task_id)));
                    };
                    let start = Start::After(*position);
                    let stream = task_stream(view.clone(), info, events, start, Close::AtTurnEnd);
                    self.source = Source::Stream(stream);
                }
                Err(RecvError::Closed) => return None,
            }
        }
    }
}

fn gone(task_id: &str) -> Error {
    Error::new(
        ErrorKind::Internal,
        format!("task {task_id} left the view before its turn ended"),
    )
}

#[cfg(test)]
mod tests;
