//! The sender's reading side: one member of the agent's push consumer group, reading its
//! partitions of the events topic in log order, turning each record into its notifications
//! (queued on their lanes), and committing how far every partition is done.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentlog_wire::Record;
use agentlog_wire::trace::TraceContext;
use tokio_util::sync::CancellationToken;

use super::lanes::{Job, Shared, enqueue, parked, resume};
use super::metrics::PushMetrics;
use super::tracked::Tracker;
use crate::log::{Delivery, GroupConsumer};
use crate::security::RecordVerifier;

/// How many records one poll takes, and how long it waits for some.
const POLL_RECORDS: usize = 256;
const POLL_WAIT: Duration = Duration::from_millis(100);
/// After a poll that caught up with its partition (fewer records than it asked for), each
/// partition this member reads is asked again at most about once per `GATHER`: records that
/// come meanwhile are read in one poll instead of one each (a poll per append would wake the
/// sender, and ask the log, for every record written). What a notification may wait beyond
/// its record; a member of many partitions does not wait (its polls go round them anyway).
const GATHER: Duration = Duration::from_millis(4);
/// Tokio's timer tick: a shorter wait would be this long anyway.
const TICK: Duration = Duration::from_millis(1);
/// The pause after a failed poll, or a record that could not be turned into notifications.
const PAUSE: Duration = Duration::from_millis(200);
/// How often progress is committed while records keep coming (a poll that finds none commits
/// at once). A commit is a round trip, or a file's rewrite and sync, and the reading waits for
/// it: one per delivered notification would hold every next record back that long. A restart
/// sends again what was in flight and what was delivered since the last commit.
const COMMIT_EVERY: Duration = Duration::from_millis(100);

/// Read until `reading` is cancelled; then let what was read be sent for up to `grace`
/// (committing as it is), stop the lanes, commit, and leave the group.
pub(super) async fn run(
    shared: Arc<Shared>,
    mut tracker: Tracker,
    mut member: Box<dyn GroupConsumer>,
    verifier: Option<RecordVerifier>,
    max_pending: usize,
    reading: CancellationToken,
    grace: Duration,
) {
    let mut committed_at = Instant::now();
    let mut uncommitted = false;
    // Whether the last poll caught up, and how many partitions this member read then.
    let (mut caught_up, mut reads) = (false, 1u32);
    while !reading.is_cancelled() && !shared.cancel.is_cancelled() {
        wait_for_room(&shared, max_pending).await;
        let gather = GATHER / reads.max(1);
        if caught_up && gather >= TICK {
            tokio::select! {
                () = reading.cancelled() => break,
                () = shared.cancel.cancelled() => break,
                () = tokio::time::sleep(gather) => {}
            }
        }
        let polled = tokio::select! {
            () = reading.cancelled() => break,
            () = shared.cancel.cancelled() => break,
            polled = member.poll(POLL_RECORDS, POLL_WAIT) => polled,
        };
        let idle = matches!(polled, Ok(None));
        caught_up = matches!(&polled, Ok(Some(d)) if d.records.len() < POLL_RECORDS);
        match polled {
            Ok(Some(delivery)) => {
                if !process(
                    &shared,
                    &mut tracker,
                    verifier.as_ref(),
                    delivery,
                    max_pending,
                )
                .await
                {
                    break;
                }
            }
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(error = %error.report(), "push: cannot read the events; trying again");
                pause(&shared).await;
            }
        }
        let owned = member.owned_partitions();
        reads = u32::try_from(owned.len()).unwrap_or(u32::MAX);
        let moved: Vec<u32> = shared
            .progress
            .lock()
            .partitions()
            .into_iter()
            .filter(|p| !owned.contains(p))
            .collect();
        for partition in moved {
            // Another sender owns it now and starts where this one committed.
            shared.progress.lock().drop_partition(partition);
            tracker.drop_partition(partition);
        }
        tracker.keep_share(&owned).await;
        uncommitted |= shared.progress.lock().take_moved();
        if (uncommitted && idle) || committed_at.elapsed() >= COMMIT_EVERY {
            uncommitted = false;
            commit(&shared, member.as_mut()).await;
            committed_at = Instant::now();
        }
        PushMetrics::set(&shared.metrics.pending, shared.progress.lock().pending());
        PushMetrics::set(&shared.metrics.tracked, tracker.len());
    }
    // A graceful stop hands over nothing in flight if it can.
    let deadline = tokio::time::Instant::now() + grace;
    while shared.progress.lock().pending() > 0 && !shared.cancel.is_cancelled() {
        let room = shared.room.notified();
        tokio::select! {
            () = shared.cancel.cancelled() => break,
            () = tokio::time::sleep_until(deadline) => break,
            () = room => {}
            () = tokio::time::sleep(POLL_WAIT) => {}
        }
        commit(&shared, member.as_mut()).await;
    }
    shared.cancel.cancel();
    commit(&shared, member.as_mut()).await;
    if let Err(error) = member.leave().await {
        tracing::warn!(error = %error.report(), "push: leaving the group");
    }
}

/// Turn a delivery's records into notifications; `false` if the sender stopped meanwhile.
async fn process(
    shared: &Arc<Shared>,
    tracker: &mut Tracker,
    verifier: Option<&RecordVerifier>,
    delivery: Delivery,
    max_pending: usize,
) -> bool {
    let partition = delivery.partition;
    while let Err(error) = tracker.hold_share(partition).await {
        tracing::warn!(partition, error = %error.report(), "push: cannot hold a partition given to this sender; trying again");
        if !pause(shared).await {
            return false;
        }
    }
    if let Some(first) = delivery.records.first()
        && !shared.progress.lock().owns(partition)
    {
        // A new assignment of the partition: reading starts where the group committed.
        tracker.assigned(partition, first.offset);
    }
    for stored in delivery.records {
        // Held notifications stay under the bound plus one record's (its task's configs).
        wait_for_room(shared, max_pending).await;
        if shared.cancel.is_cancelled() {
            return false;
        }
        let offset = stored.offset;
        // Most records are of tasks without configs: their kind and task id say so without
        // decoding (or checking) the rest. Unsure (the view could not catch up): read in full,
        // which tries again and says why it cannot.
        if let Ok(true) = tracker
            .passes_over(partition, offset, &stored.payload)
            .await
        {
            shared.progress.lock().read(partition, offset, 0);
            continue;
        }
        let record = match Record::decode(&stored.payload) {
            // What the view does not apply, the sender does not tell either.
            Ok(record) if verifier.is_none_or(|v| v.check(&record).is_ok()) => record,
            _ => {
                shared.progress.lock().read(partition, offset, 0);
                continue;
            }
        };
        let since = Instant::now();
        let notices = loop {
            match tracker.on_record(partition, offset, &record).await {
                Ok(notices) => break notices,
                Err(error) => {
                    tracing::warn!(error = %error.report(), task = %record.header.task_id, offset, "push: cannot read the task back; trying again");
                    // Its state is unsure now: read it back afresh.
                    tracker.forget(partition, offset, &record.header.task_id);
                    if !pause(shared).await {
                        return false;
                    }
                }
            }
        };
        let (resumed, fresh): (Vec<_>, Vec<_>) =
            notices.into_iter().partition(|n| n.resumed.is_some());
        let epoch = {
            let mut progress = shared.progress.lock();
            let epoch = progress.epoch(partition);
            progress.read(partition, offset, fresh.len());
            epoch
        };
        let task: Arc<str> = Arc::from(record.header.task_id.as_str());
        let context: Arc<str> = Arc::from(record.header.context_id.as_str());
        let trace = TraceContext::from_content_type(&record.header.content_type);
        let job = |offset, config, body| Job {
            partition,
            epoch,
            offset,
            task: task.clone(),
            context: context.clone(),
            config,
            body,
            since,
            anchored: false,
            trace: trace.clone(),
        };
        // A resumed config's earlier notices go first, each config's lane held by its anchor.
        let mut lanes: Vec<(u64, Vec<Job>)> = Vec::new();
        for notice in resumed {
            let Some((at, anchor)) = notice.resumed else {
                continue;
            };
            let id = notice.config.id.clone();
            match lanes.iter_mut().find(|(_, jobs)| jobs[0].config.id == id) {
                Some((_, jobs)) => jobs.push(job(at, notice.config, notice.body)),
                None => lanes.push((anchor, vec![job(at, notice.config, notice.body)])),
            }
        }
        for (anchor, jobs) in lanes {
            resume(shared, jobs, anchor);
        }
        if matches!(record.body, agentlog_wire::RecordBody::PushProgress { .. }) {
            parked(shared, partition, epoch, offset, &record);
        }
        for notice in fresh {
            enqueue(shared, job(offset, notice.config, notice.body));
        }
    }
    true
}

/// Commit every partition whose done point moved.
async fn commit(shared: &Shared, member: &mut dyn GroupConsumer) {
    let points = shared.progress.lock().commit_points();
    for (partition, point) in points {
        if let Err(error) = member.commit(partition, point).await {
            tracing::warn!(error = %error.report(), partition, "push: cannot commit; the next commit covers it");
            shared.progress.lock().uncommit(partition);
        }
    }
}

/// Wait while too many notifications are held.
async fn wait_for_room(shared: &Shared, max_pending: usize) {
    while shared.progress.lock().pending() >= max_pending && !shared.cancel.is_cancelled() {
        let room = shared.room.notified();
        tokio::select! {
            () = shared.cancel.cancelled() => return,
            () = room => {}
            () = tokio::time::sleep(POLL_WAIT) => {}
        }
    }
}

/// `false` if the sender stopped during the pause.
async fn pause(shared: &Shared) -> bool {
    tokio::select! {
        () = shared.cancel.cancelled() => false,
        () = tokio::time::sleep(PAUSE) => true,
    }
}
