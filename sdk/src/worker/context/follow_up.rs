//! Follow-ups a handler takes while its turn runs: the claim moves to the client's next
//! message, which this turn then answers instead of a turn of its own.

use agentlog_wire::a2a::Message;
use agentlog_wire::fold::Change;
use tokio::sync::broadcast::error::RecvError;

use super::TaskContext;
use crate::error::{Error, ErrorKind, Result};

impl TaskContext {
    /// Take the oldest follow-up message the client sent while this turn runs, if one waits:
    /// from then on the turn answers it (the claim moves to it), and it does not start a turn
    /// of its own. `None` when none waits, or when the turn is over. A follow-up the handler
    /// does not take starts the next turn once this one ends (if the task is still live).
    pub async fn follow_up(&self) -> Result<Option<Message>> {
        if self.skips() {
            return Ok(None);
        }
        // The reports made so far belong to the turn being left: on the log before the claim.
        self.inner.reports.flush().await?;
        let attempt = &self.inner.attempt;
        let view = &self.inner.view;
        let partition = view.partition_of(&attempt.task.id);
        // Pinned until the task is read below (its partition retired meanwhile keeps it).
        let _pinned = view.pin_synced(partition, self.inner.sync_timeout).await?;
        let Some((info, _)) = view.lookup_any(&attempt.task.id) else {
            return Ok(None);
        };
        let holds = info
            .claim
            .as_ref()
            .is_some_and(|c| c.attempt == attempt.number && *c.holder == attempt.writer.source);
        let Some(next) = info.pending.first().filter(|_| holds).cloned() else {
            return Ok(None);
        };
        let claim = [attempt.claim_record(&next, false)];
        let appended = attempt.writer.append_for(&claim, view).await?;
        if view
            .apply_own(partition, appended.first_offset, appended.place, &claim)
            .is_none()
        {
            view.sync_to(
                partition,
                appended.first_offset + 1,
                self.inner.sync_timeout,
            )
            .await?;
        }
        let Some((info, _)) = view.lookup_any(&attempt.task.id) else {
            return Ok(None);
        };
        if info.last_message_id.as_deref() != Some(&*next) {
            // The turn ended first (canceled, or asked for input): the follow-up went on.
            return Ok(None);
        }
        attempt.set_turn(next.clone());
        let task = view.load(&info).await?;
        let message = task
            .history
            .into_iter()
            .rev()
            .find(|m| *m.message_id == *next)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Corrupt,
                    format!("task {}: follow-up {next} is not in its history", info.id),
                )
            })?;
        Ok(Some(message))
    }

    /// Wait until the client sends a follow-up message while this turn runs, and take it
    /// ([`follow_up`](Self::follow_up)). `None` once the turn is over (the task ended, the
    /// claim moved, the cancellation token fired).
    pub async fn wait_follow_up(&self) -> Result<Option<Message>> {
        let task_id = &self.inner.attempt.task.id;
        loop {
            // Subscribe before looking, so a follow-up between the two is not missed.
            let Some((_, _, mut events)) = self.inner.view.watch(task_id) else {
                return Ok(None);
            };
            if let Some(message) = self.follow_up().await? {
                return Ok(Some(message));
            }
            loop {
                let event = tokio::select! {
                    () = self.inner.cancellation.cancelled() => return Ok(None),
                    event = events.recv() => event,
                };
                match event {
                    Ok(event) if matches!(event.change, Change::FollowedUp(_)) => break,
                    Ok(event) if event.state.is_terminal() => return Ok(None),
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => break,
                    Err(RecvError::Closed) => return Ok(None),
                }
            }
            if self.skips() {
                return Ok(None);
            }
        }
    }
}
