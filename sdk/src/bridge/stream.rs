//! Task event streams: a snapshot, then the task's events in log order, each with its log
//! position, until the task is terminal or interrupted.

use std::pin::Pin;
use std::sync::Arc;

use agentlog_wire::TaskState;
use agentlog_wire::a2a::{
    Message, StreamResponse, Task, TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent,
};
use agentlog_wire::fold::{Change, TaskFold, TaskMachine, answering};
use agentlog_wire::timestamp::format_millis;
use futures::Stream;
use tokio::sync::{broadcast, mpsc};

use crate::error::Result;
use crate::view::{TaskEvent, TaskInfo, TaskView};

/// One event of a task stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEvent {
    /// The log position (offset in the task's partition of the events topic) of the last
    /// record this event reflects. A client resumes after it with no gap and no duplicate.
    pub position: u64,
    /// The A2A event.
    pub response: StreamResponse,
    /// Whether this is the stream's last event (the task is terminal or interrupted).
    pub last: bool,
}

/// A stream of task events.
pub type TaskStream = Pin<Box<dyn Stream<Item = Result<StreamEvent>> + Send>>;

/// Where a task stream starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// With the task as it is now.
    Snapshot,
    /// With the task as it was at this position, then every event after it (a new task's
    /// stream shows its whole life, however fast the worker was).
    SnapshotAt(u64),
    /// With the events after this position, and no snapshot (a client resuming).
    After(u64),
    /// As [`SnapshotAt`](Start::SnapshotAt) at this position (or, with none, as the task is
    /// then), held until the task shows itself (fold rule 15: a status, an artifact, its
    /// end): a reply before that answers in the task's place, and the stream is then that one
    /// message (A2A §3.1.2). A new task's stream, or its retry's.
    Held(Option<u64>),
}

impl Start {
    /// [`Start::After`] when resuming, else `otherwise`.
    pub(crate) fn resuming(resume_after: Option<u64>, otherwise: Start) -> Start {
        resume_after.map_or(otherwise, Start::After)
    }
}

/// When a task stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Close {
    /// When the task is terminal or interrupted: a send's stream, whose client must answer
    /// an interruption (A2A §3.1.2, §11.7).
    AtTurnEnd,
    /// When the task is terminal: `SubscribeToTask` watches the task through its
    /// interruptions (A2A §3.1.6: the stream terminates when the task reaches a terminal
    /// state).
    AtTaskEnd,
}

impl Close {
    pub(crate) fn ends(self, state: TaskState) -> bool {
        state.is_terminal() || (self == Close::AtTurnEnd && state.is_interrupted())
    }
}

/// Build a task stream from `info` (taken together with `events`, so nothing falls between).
pub(crate) fn task_stream(
    view: TaskView,
    info: TaskInfo,
    events: broadcast::Receiver<Arc<TaskEvent>>,
    start: Start,
    close: Close,
) -> TaskStream {
    let (tx, mut rx) = mpsc::channel(64);
    let out = Out { tx, close };
    tokio::spawn(async move {
        tokio::select! {
            () = out.tx.closed() => {}
            () = produce(view, info, events, start, &out) => {}
        }
    });
    Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
}

type Sink = mpsc::Sender<Result<StreamEvent>>;

/// Where a stream's events go, and when it ends.
struct Out {
    tx: Sink,
    close: Close,
}

async fn produce(
    view: TaskView,
    mut info: TaskInfo,
    mut events: broadcast::Receiver<Arc<TaskEvent>>,
    start: Start,
    out: &Out,
) {
    let tx = &out.tx;
    let (snapshot_at, replay_after) = match start {
        Start::Snapshot => (Some(info.position()), None),
        Start::SnapshotAt(at) => (Some(at), Some(at)),
        Start::Held(at) => {
            // What happened while held is read back from the log with the task as it is now.
            let Some(fresh) = hold(&view, &info, &mut events, tx).await else {
                return;
            };
            info = fresh;
            let at = at.unwrap_or_else(|| info.position());
            (Some(at), Some(at))
        }
        Start::After(after) => (None, Some(after)),
    };
    let mut position = info.position();
    if let Some(at) = snapshot_at {
        let snapshot = match snapshot(&view, &info, at).await {
            Ok(snapshot) => snapshot,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        };
        let (Some(task), state) = snapshot else {
            return;
        };
        let last = out.close.ends(state);
        let event = StreamEvent {
            position: at,
            response: StreamResponse::Task(task),
            last,
        };
        if tx.send(Ok(event)).await.is_err() || last {
            return;
        }
        position = at;
    }
    if let Some(after) = replay_after {
        match replay(&view, &info, after, out).await {
            Replay::Done => return,
            Replay::At(p) => position = p.max(position),
        }
    }
    loop {
        match events.recv().await {
            Ok(event) => {
                if event.offset <= position {
                    continue;
                }
                position = event.offset;
                if emit(&event, out).await == Flow::Stop {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Lagged(_)) => {
                // Fell behind the live buffer: catch up from the log itself.
                let Some((fresh, _)) = view.lookup_any(&info.id) else {
                    return;
                };
                match replay(&view, &fresh, position, out).await {
                    Replay::Done => return,
                    Replay::At(p) => position = p,
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Wait until the task shows itself to the client (fold rule 15) or a reply answers in its
/// place. Once it shows: the task as it is then, for the caller to stream from where it
/// starts (what happened meanwhile is read back). `None` once the answer was sent as the
/// stream's one event, or the task is gone.
async fn hold(
    view: &TaskView,
    info: &TaskInfo,
    events: &mut broadcast::Receiver<Arc<TaskEvent>>,
    tx: &Sink,
) -> Option<TaskInfo> {
    // Held only for a send's stream: its turn's end shows the task too.
    let ends = |state| Close::AtTurnEnd.ends(state);
    let fresh = || view.lookup_any(&info.id).map(|(fresh, _)| fresh);
    let mut now = info.clone();
    loop {
        if now.answered {
            match view.answer(&now).await {
                Ok(Some(answer)) => send_answer(now.position(), answer, tx).await,
                Ok(None) => {} // an answered task has its reply: cannot be
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                }
            }
            return None;
        }
        if now.shown || ends(now.state) {
            return fresh();
        }
        match events.recv().await {
            Ok(event) => match &event.change {
                Change::Replied {
                    message,
                    answered: true,
                } => {
                    let answer = answering((**message).clone(), &event.context_id);
                    send_answer(event.offset, answer, tx).await;
                    return None;
                }
                // A claim shows nothing: the handler has not answered yet.
                Change::Claimed(_) if !ends(event.state) => {}
                _ => return fresh(),
            },
            Err(broadcast::error::RecvError::Lagged(_)) => now = fresh()?,
            Err(broadcast::error::RecvError::Closed) => return fresh(),
        }
    }
}

async fn send_answer(position: u64, answer: Message, tx: &Sink) {
    let event = StreamEvent {
        position,
        response: StreamResponse::Message(answer),
        last: true,
    };
    let _ = tx.send(Ok(event)).await;
}

/// The task as it was at position `at`, and its state then (`None` before its command).
async fn snapshot(view: &TaskView, info: &TaskInfo, at: u64) -> Result<(Option<Task>, TaskState)> {
    if at >= info.position() {
        // The task as the view holds it: only its content records are read back.
        return Ok((Some(view.load(info).await?), info.state));
    }
    // An earlier state is not the view's: fold every record up to it.
    let records = view.task_records(info, false).await?;
    let mut fold = TaskFold::new();
    for (_, record) in records.iter().filter(|(offset, _)| *offset <= at) {
        fold.apply(record);
    }
    let state = fold.state().unwrap_or(TaskState::Unspecified);
    Ok((fold.into_task(), state))
}

enum Replay {
    Done,
    At(u64),
}

/// Send the task's events after `after`, read back from the log.
async fn replay(view: &TaskView, info: &TaskInfo, after: u64, out: &Out) -> Replay {
    let records = match view.task_records(info, false).await {
        Ok(records) => records,
        Err(e) => {
            let _ = out.tx.send(Err(e)).await;
            return Replay::Done;
        }
    };
    let mut machine = TaskMachine::new();
    let mut position = after;
    for (offset, record) in records {
        let Ok(change) = machine.apply(&record) else {
            continue;
        };
        if offset <= after {
            continue;
        }
        position = offset;
        let state = machine.state().unwrap_or(TaskState::Unspecified);
        let event = TaskEvent {
            offset,
            task_id: info.id.clone(),
            context_id: info.context_id.clone(),
            timestamp_ms: record.header.timestamp_ms,
            state,
            change,
        };
        if emit(&event, out).await == Flow::Stop {
            return Replay::Done;
        }
    }
    Replay::At(position)
}

#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Stop,
}

/// Send the stream event for an applied change; stop after the last one or when the client
/// is gone.
async fn emit(event: &TaskEvent, out: &Out) -> Flow {
    let last = out.close.ends(event.state);
    if let Some(response) = to_response(event) {
        let sent = StreamEvent {
            position: event.offset,
            response,
            last,
        };
        if out.tx.send(Ok(sent)).await.is_err() {
            return Flow::Stop;
        }
    }
    if last { Flow::Stop } else { Flow::Continue }
}

/// An agent message as part of the event's task (its ids filled in, as the fold does).
fn in_task(event: &TaskEvent, message: &Message) -> Message {
    Message {
        task_id: Some(event.task_id.to_string()),
        context_id: Some(event.context_id.to_string()),
        ..message.clone()
    }
}

fn status_event(event: &TaskEvent, state: TaskState, message: Option<Message>) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: event.task_id.to_string(),
        context_id: event.context_id.to_string(),
        status: TaskStatus {
            state,
            message,
            timestamp: Some(format_millis(event.timestamp_ms)),
        },
        metadata: None,
    })
}

/// The A2A event for an applied change (a new task has no event: it is the snapshot).
///
/// A follow-up queued behind the running turn changes no A2A state, nor does a claim except
/// the one that starts a submitted turn (reported as `working`), nor a push record: no event
/// for them. A status that went on at once to a waiting follow-up (fold rule 13) is reported
/// as the `submitted` state it led to, carrying the status message the agent wrote.
pub(crate) fn to_response(event: &TaskEvent) -> Option<StreamResponse> {
    Some(match &event.change {
        Change::Created(_) | Change::FollowedUp(_) | Change::Push(_) => return None,
        Change::Claimed(claimed) if claimed.started => {
            status_event(event, TaskState::Working, None)
        }
        Change::Claimed(_) => return None,
        Change::Continued(_) => status_event(event, TaskState::Submitted, None),
        Change::Replied {
            message,
            answered: true,
        } => StreamResponse::Message(answering((**message).clone(), &event.context_id)),
        Change::Replied { message, .. } => {
            status_event(event, TaskState::Completed, Some(in_task(event, message)))
        }
        Change::Canceled => status_event(event, TaskState::Canceled, None),
        Change::Status {
            state,
            message,
            resumed,
        } => {
            let message = message.as_deref().map(|m| in_task(event, m));
            let state = if *resumed {
                TaskState::Submitted
            } else {
                *state
            };
            status_event(event, state, message)
        }
        Change::Artifact {
            artifact,
            append,
            last_chunk,
        } => StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: event.task_id.to_string(),
            context_id: event.context_id.to_string(),
            artifact: (**artifact).clone(),
            append: *append,
            last_chunk: *last_chunk,
            metadata: None,
        }),
    })
}
