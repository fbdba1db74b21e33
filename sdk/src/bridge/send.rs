//! `SendMessage` and `SendStreamingMessage`: new tasks and follow-up messages.

use std::sync::Arc;

use agentlog_wire::a2a::{Message, Role, SendMessageRequest, SendMessageResponse};
use agentlog_wire::fold::submitted_task;
use agentlog_wire::{Record, RecordBody, RecordHeader, ids};
use tokio::sync::broadcast::error::RecvError;

use super::live::{Settled, TurnEvents};
use super::stream::{Close, Start, TaskStream, task_stream};
use super::{Bridge, Topics, not_found, trim_history};
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};
use crate::view::{OwnCommand, TaskInfo};

/// A message accepted onto the log: which task, and whether this call created it.
struct Accepted {
    task_id: String,
    /// The header of the command this call wrote, when it created the task: with the request,
    /// all a returnImmediately answer needs.
    created: Option<RecordHeader>,
    /// Where the view must have applied up to for the acceptance to be visible.
    partition: u32,
    visible_at: u64,
    /// The new task's events from right after its command, when the call follows its turn.
    events: Option<super::live::Events>,
}

impl Bridge {
    /// Catch the view up until `accepted` is visible in it.
    async fn sync_to_accepted(&self, accepted: &Accepted) -> Result<()> {
        let sync = self.inner.view.sync_to(
            accepted.partition,
            accepted.visible_at,
            self.inner.config.sync_timeout,
        );
        super::trace::sync_span(accepted.partition, sync).await
    }

    /// `SendMessage`: start a task, or send a message to an existing one (when the message
    /// names a `taskId`): it resumes an input- or auth-required task, or joins a running one
    /// as a follow-up. Blocking by default: waits for a terminal or interrupted state, at most
    /// [`BridgeConfig::blocking_timeout`](super::BridgeConfig), then answers with the task as
    /// it is; with `returnImmediately` it answers with the task as the log holds it then.
    ///
    /// Idempotent: the same message again (same caller and `messageId`, same content),
    /// sequential or concurrent, through any bridge, answers the same task and runs nothing
    /// again; another message under a used `messageId` is refused (-32602).
    pub async fn send_message(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse> {
        self.send_message_raw(caller, request, None).await
    }

    /// [`send_message`](Self::send_message) carrying the request's params JSON exactly as
    /// received (`raw_params`) into the command record.
    pub(crate) async fn send_message_raw(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
        raw_params: Option<&str>,
    ) -> Result<SendMessageResponse> {
        let configuration = request.configuration.clone().unwrap_or_default();
        let history_length = configuration.history_length;
        check_history_length(history_length)?;
        let follows = !configuration.return_immediately;
        // A place to wait in, taken before anything is written.
        let waiting = follows
            .then(|| self.inner.limits.blocking_send())
            .transpose()?;
        let mut accepted = self
            .accept(
                caller,
                &request,
                raw_params,
                Accepting {
                    fresh: Fresh::No,
                    follows,
                },
            )
            .await?;
        let subscribed = accepted.events.take();
        if configuration.return_immediately {
            if let Some(header) = &accepted.created {
                // Exactly what folding the new command gives, without parsing its params again.
                let task = submitted_task(header, request);
                return Ok(SendMessageResponse::Task(trim_history(
                    task,
                    history_length,
                )));
            }
            self.sync_to_accepted(&accepted).await?;
            let info = self
                .inner
                .view
                .lookup(caller, &accepted.task_id)
                .ok_or_else(|| not_found(&accepted.task_id))?;
            return self.respond(&info, history_length).await;
        }
        let deadline = tokio::time::Instant::now() + self.inner.config.blocking_timeout;
        if let (Some(header), Some(events)) = (&accepted.created, subscribed) {
            // The new task folded from the view's events: nothing read back from the log.
            match super::live::settle(events, header, request, deadline).await {
                Settled::Task(task) => {
                    let task = trim_history(task, history_length);
                    return Ok(SendMessageResponse::Task(task));
                }
                Settled::Answer(answer) => return Ok(SendMessageResponse::Message(answer)),
                Settled::Unknown => {}
            }
        }
        let info = self.wait_settled(caller, &accepted, deadline).await?;
        drop(waiting);
        self.respond(&info, history_length).await
    }

    /// The answer to a send about the task `info` describes: the task, or the reply that
    /// answered in its place (fold rule 15).
    async fn respond(
        &self,
        info: &TaskInfo,
        history_length: Option<i32>,
    ) -> Result<SendMessageResponse> {
        let view = &self.inner.view;
        if let Some(answer) = view.answer(info).await? {
            return Ok(SendMessageResponse::Message(answer));
        }
        let task = view.load(info).await?;
        Ok(SendMessageResponse::Task(trim_history(
            task,
            history_length,
        )))
    }

    /// `SendStreamingMessage`: like [`send_message`](Self::send_message), answered with the
    /// task snapshot and then its events until it is terminal or interrupted. A new task's
    /// stream starts once the task shows itself (a status, an artifact, its end: fold rule
    /// 15), as the official SDKs' servers start on the agent's first event: until then the
    /// agent may still answer with a message instead, and the stream is then that message.
    ///
    /// A client that lost the stream sends the same request again with `resume_after` set to
    /// the last position it saw: the message is idempotent, so no second task starts, and the
    /// stream goes on right after that position.
    pub async fn send_streaming_message(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
        raw_params: Option<&str>,
        resume_after: Option<u64>,
    ) -> Result<TaskStream> {
        let place = self.inner.limits.stream(caller)?;
        let accepted = self
            .accept(
                caller,
                &request,
                raw_params,
                Accepting {
                    fresh: Fresh::No,
                    follows: false,
                },
            )
            .await?;
        let new_task = request.message.task_id.is_none();
        let stream = self
            .stream_accepted(caller, new_task, &accepted, resume_after)
            .await?;
        Ok(super::limits::holding(stream, place))
    }

    /// Start a turn as [`send_streaming_message`](Self::send_streaming_message) does, and
    /// follow it until it ends, without the stream's first snapshot: from the view's events
    /// when the call created the task (nothing read back, see [`super::live`]), else from a
    /// task stream.
    pub(crate) async fn send_turn(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
        raw_params: Option<&str>,
    ) -> Result<TurnEvents> {
        self.send_turn_as(caller, request, raw_params, Fresh::No)
            .await
    }

    /// [`send_turn`](Self::send_turn) of a new task whose `messageId` the caller minted just
    /// now (a v4 uuid: no record of the log can name it yet), so there is no earlier send of
    /// it to find and the view is not caught up with the log first to look for one.
    pub(crate) async fn send_minted_turn(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
        raw_params: Option<&str>,
    ) -> Result<TurnEvents> {
        self.send_turn_as(caller, request, raw_params, Fresh::Minted)
            .await
    }

    async fn send_turn_as(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
        raw_params: Option<&str>,
        fresh: Fresh,
    ) -> Result<TurnEvents> {
        let place = self.inner.limits.stream(caller)?;
        let mut accepted = self
            .accept(
                caller,
                &request,
                raw_params,
                Accepting {
                    fresh,
                    follows: true,
                },
            )
            .await?;
        let new_task = request.message.task_id.is_none();
        if accepted.created.is_some()
            && let Some(events) = accepted.events.take()
        {
            let view = self.inner.view.clone();
            let command = accepted.visible_at.saturating_sub(1);
            let task_id = Arc::from(accepted.task_id);
            return Ok(TurnEvents::live(view, task_id, events, command, place));
        }
        let stream = self
            .stream_accepted(caller, new_task, &accepted, None)
            .await?;
        Ok(TurnEvents::stream(stream, place))
    }

    /// The stream of a send's turn once its message is `accepted` on the log; `new_task`: the
    /// message named no task.
    async fn stream_accepted(
        &self,
        caller: &Caller,
        new_task: bool,
        accepted: &Accepted,
        resume_after: Option<u64>,
    ) -> Result<TaskStream> {
        let view = &self.inner.view;
        self.sync_to_accepted(accepted).await?;
        let (info, events) = view
            .subscribe(Some(caller), &accepted.task_id)
            .ok_or_else(|| not_found(&accepted.task_id))?;
        // A message this call put on the log: show the task from that record on; a new
        // task's (or its retry's) once it shows itself, or its answer.
        let from = match (accepted.visible_at, new_task) {
            (0, true) => Start::Held(None),
            (0, false) => Start::Snapshot,
            (end, true) => Start::Held(Some(end - 1)),
            (end, false) => Start::SnapshotAt(end - 1),
        };
        Ok(task_stream(
            view.clone(),
            info,
            events,
            Start::resuming(resume_after, from),
            Close::AtTurnEnd,
        ))
    }

    /// Validate the message and put it on the log (or find it there already).
    async fn accept(
        &self,
        caller: &Caller,
        request: &SendMessageRequest,
        raw_params: Option<&str>,
        how: Accepting,
    ) -> Result<Accepted> {
        let message = &request.message;
        message.validate().map_err(|e| {
            Error::new(ErrorKind::InvalidParams, format!("invalid message: {e}"))
                .with_detail("field", "message")
        })?;
        if message.role != Role::User {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                "invalid message: a client's message must have role ROLE_USER",
            )
            .with_detail("field", "message.role"));
        }
        let config = &self.inner.config;
        super::media::check_input_modes(&config.card, message)?;
        self.inner.skills.check(&config.card, message)?;
        super::extensions::check_required(&config.card, &config.extension_scope, message)?;
        super::push::check_inline(config, request)?;
        // The hop guard, before anything is written: continue the caller's path or refuse.
        let path =
            crate::hops::extend(crate::hops::path_of(message)?, &config.id, config.max_hops)?;
        let params = match raw_params {
            Some(raw) => raw.to_owned(),
            None => serde_json::to_string(request).map_err(|e| {
                Error::new(ErrorKind::Internal, "cannot encode the request").with_source(e)
            })?,
        };
        match &message.task_id {
            Some(task_id) => {
                self.accept_continue(caller, task_id, message, params, path)
                    .await
            }
            None => {
                let parsed = raw_params.is_some();
                self.accept_new(caller, request, params, parsed, path, how)
                    .await
            }
        }
    }

    /// `params_parsed`: `request` was parsed from exactly `params` (the text as received),
    /// so the view may apply the new command without parsing it again.
    async fn accept_new(
        &self,
        caller: &Caller,
        request: &SendMessageRequest,
        params: String,
        params_parsed: bool,
        path: Vec<String>,
        how: Accepting,
    ) -> Result<Accepted> {
        let message = &request.message;
        let task_id = ids::task_id(&caller.tenant, &caller.principal, &message.message_id);
        let view = &self.inner.view;
        let partition = view.partition_of(&task_id);
        // A message this view knows already is answered as a retry, from the log as of now.
        // One it does not know is appended without asking the log's end first: should another
        // replica have written it already, log order settles it below (that command came
        // first), and syncing to this command's own offset shows everything before it.
        if how.fresh == Fresh::No && view.lookup(caller, &task_id).is_some() {
            let _pinned = self.sync_task(&task_id).await?;
            if let Some(info) = view.lookup(caller, &task_id) {
                return self.accept_retry(&info, message).await;
            }
        }
        let context_id = message.context_id.clone().unwrap_or_else(|| {
            ids::context_id(&caller.tenant, &caller.principal, &message.message_id)
        });
        let record = Record {
            header: self.header(
                caller,
                &task_id,
                &context_id,
                message.message_id.clone(),
                path,
            ),
            body: RecordBody::Command {
                params,
                retention_ms: self.retention_ms(),
            },
        };
        // Held until the view shows the command: a worker of this process handed its copy
        // first waits for that rather than asking the log.
        let _appending = view.appending_command(&task_id);
        let immediately = request
            .configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately);
        // A worker of this process may claim the turn in this append (its claim right after
        // the command), saving the claim its own round trip and the command its copy on the
        // workers' queue; a returnImmediately answer is the task as the command left it
        // either way.
        let reserved = view.reserve_first_turn(&record.header);
        let claim = reserved.as_ref().map(|r| r.claim().1.clone());
        let watch = how.follows.then(|| view.watch_new(&task_id));
        // A command carrying a push config goes through the follower, which marks the task
        // as having one (fold rule 16) for a push sender sharing the view.
        let applies_own = params_parsed && !super::push::carries_config(request);
        let applied_by = applies_own.then(|| view.applier());
        let appended = self
            .commit_with(&record, Topics::Both, claim, applied_by)
            .await?;
        let offset = appended.first_offset;
        let own = if applies_own {
            view.apply_own_command(partition, offset, appended.place, &record, immediately)
        } else {
            OwnCommand::NotApplied
        };
        if let Some(reserved) = reserved {
            // Applied right after the command, or kept until the view reaches it.
            let claim = std::slice::from_ref(reserved.claim().0);
            view.apply_own(partition, offset + 1, appended.place, claim);
            // Done with: the worker takes the turn now.
            drop(reserved);
        }
        let first = match own {
            OwnCommand::Created => true,
            OwnCommand::Duplicate => false,
            OwnCommand::NotApplied => {
                view.sync_to(partition, offset + 1, self.inner.config.sync_timeout)
                    .await?;
                view.command_offset(&task_id) == Some(offset)
            }
        };
        if !first {
            // The same message was sent at the same time through another call, and its
            // command came first: the log holds that one's task, and this command is a
            // duplicate the fold ignores. Answer as for a retry.
            let info = view
                .lookup(caller, &task_id)
                .ok_or_else(|| not_found(&task_id))?;
            return self.accept_retry(&info, message).await;
        }
        // This call's command created the task, so the watch moved to it.
        let events = watch.and_then(crate::view::NewTaskWatch::created);
        if params_parsed && view.hands_off() {
            // Parsed from exactly the command's params: a worker sharing the view folds the
            // first turn from it (a load that comes first reads the log, as always).
            view.hand_off(offset, &record, request);
        }
        Ok(Accepted {
            created: Some(record.header),
            task_id,
            partition,
            visible_at: offset + 1,
            events,
        })
    }

    /// A message whose `messageId` the task already has: the same message again (a retry,
    /// answered from what the log holds, the handler not run again) or another one under a
    /// used id (-32602, nothing written). A retry of a turn no worker has claimed for a
    /// second is queued again, in case the first queueing was lost, at most once a second
    /// ([`requeue`](super::requeue)).
    async fn accept_retry(&self, info: &TaskInfo, message: &Message) -> Result<Accepted> {
        let first = self
            .inner
            .view
            .client_message(info, &message.message_id)
            .await?;
        if first.as_ref() != Some(message) {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!(
                    "messageId {} was already used for another message; a new message needs a new messageId",
                    message.message_id
                ),
            )
            .with_detail("field", "message.messageId"));
        }
        if info.awaits_claim()
            && info.last_message_id.as_deref() == Some(&*message.message_id)
            && self.inner.requeues.allow(
                &info.id,
                info.status_timestamp_ms,
                crate::retention::now_ms(),
            )
            && let Some(record) = self.turn_record(info, &message.message_id).await?
        {
            self.commit(&record, Topics::Commands).await?;
        }
        Ok(Accepted {
            task_id: info.id.to_string(),
            created: None,
            partition: info.partition,
            visible_at: 0,
            events: None,
        })
    }

    /// The command or continue record that brought `message_id` to the task, read back.
    async fn turn_record(&self, info: &TaskInfo, message_id: &str) -> Result<Option<Record>> {
        let records = self.inner.view.task_records(info, true).await?;
        Ok(records.into_iter().map(|(_, r)| r).find(|r| {
            r.header.message_id == message_id
                && matches!(
                    r.body,
                    RecordBody::Command { .. } | RecordBody::Continue { .. }
                )
        }))
    }

    /// A message to an existing task: it resumes an input- or auth-required task, or, sent
    /// while the task is submitted or working, joins its history and waits behind the turn
    /// that runs (the handler may take it, else it starts the next turn).
    async fn accept_continue(
        &self,
        caller: &Caller,
        task_id: &str,
        message: &Message,
        params: String,
        path: Vec<String>,
    ) -> Result<Accepted> {
        let _pinned = self.sync_task(task_id).await?;
        let view = &self.inner.view;
        let info = view
            .lookup(caller, task_id)
            .filter(|info| !info.answered)
            .ok_or_else(|| not_found(task_id))?;
        if let Some(context_id) = message
            .context_id
            .as_deref()
            .filter(|c| *c != &*info.context_id)
        {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!(
                    "message.contextId {context_id} does not match task {task_id}'s context {}",
                    info.context_id
                ),
            )
            .with_detail("field", "message.contextId"));
        }
        let id = message.message_id.as_str();
        if info.last_message_id.as_deref() == Some(id) || view.has_applied(task_id, id) {
            return self.accept_retry(&info, message).await;
        }
        if info.state.is_terminal() {
            return Err(Error::new(
                ErrorKind::UnsupportedOperation,
                format!(
                    "task {task_id} is {} and takes no more messages",
                    info.state
                ),
            )
            .with_detail("taskId", task_id));
        }
        let record = Record {
            header: self.header(
                caller,
                task_id,
                &info.context_id,
                message.message_id.clone(),
                path,
            ),
            body: RecordBody::Continue { params },
        };
        let appended = self.commit(&record, Topics::Both).await?;
        Ok(Accepted {
            task_id: task_id.to_owned(),
            created: None,
            partition: info.partition,
            visible_at: appended.first_offset + 1,
            events: None,
        })
    }

    /// Wait until the task is terminal or interrupted (or `timeout` passes); the task as it
    /// is then.
    async fn wait_settled(
        &self,
        caller: &Caller,
        accepted: &Accepted,
        deadline: tokio::time::Instant,
    ) -> Result<TaskInfo> {
        let view = &self.inner.view;
        self.sync_to_accepted(accepted).await?;
        let (mut info, mut events) = view
            .subscribe(Some(caller), &accepted.task_id)
            .ok_or_else(|| not_found(&accepted.task_id))?;
        while !settled(&info) {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Err(_) => break, // answer with the task as it is
                Ok(Ok(event)) => info.state = event.state,
                Ok(Err(RecvError::Lagged(_))) => {
                    if let Some(fresh) = view.lookup(caller, &accepted.task_id) {
                        info = fresh;
                    }
                }
                Ok(Err(RecvError::Closed)) => {
                    return Err(Error::new(ErrorKind::Unavailable, "the task view stopped"));
                }
            }
        }
        view.lookup(caller, &accepted.task_id)
            .ok_or_else(|| not_found(&accepted.task_id))
    }
}

/// How a send puts its message on the log.
#[derive(Debug, Clone, Copy)]
struct Accepting {
    fresh: Fresh,
    /// The call follows the turn: a new task's events are subscribed to from its command on.
    follows: bool,
}

/// Whether a send's `messageId` may have been sent before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fresh {
    /// It may: a send the view knows is answered as a retry, from the log.
    No,
    /// The caller minted it just now (a v4 uuid): nothing on the log can name it.
    Minted,
}

fn settled(info: &TaskInfo) -> bool {
    info.state.is_terminal() || info.state.is_interrupted()
}

pub(super) fn check_history_length(history_length: Option<i32>) -> Result<()> {
    match history_length {
        Some(n) if n < 0 => Err(Error::new(
            ErrorKind::InvalidParams,
            format!("historyLength must not be negative, got {n}"),
        )
        .with_detail("field", "historyLength")),
        _ => Ok(()),
    }
}
