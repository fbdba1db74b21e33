//! One member's runner: its records written, the topic followed and folded, leases watched.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentlog_wire::members::{MemberBody, MemberFold, MemberRecord};
use bytes::Bytes;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{MemberView, MemberWatch, MembershipConfig, NO_MOVE, ReadyMark, Seen, members_topic};
use crate::error::{Error, ErrorKind, Result};
use crate::log::{Follower, Log, StoredRecord, TopicRef};

/// A running member of an agent's bridges (the module's documentation says what it does).
/// Dropping it stops it as a crash would: no leave is written, and the others evict it once
/// its lease is over.
#[derive(Debug)]
pub struct Membership {
    writer: Arc<Writer>,
    view: MemberWatch,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
    replayed_from: u64,
}

/// What writes this member's records.
#[derive(Debug)]
struct Writer {
    log: Log,
    topic: TopicRef,
    config: MembershipConfig,
    leaving: AtomicBool,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Writer {
    /// Append a record about `member`; the offset it landed at.
    async fn write(&self, member: &str, body: MemberBody) -> Result<u64> {
        let mut record = MemberRecord::new(now_ms(), member, &self.config.name, body);
        if let Some(signer) = &self.config.signer {
            signer.sign_member(&mut record)?;
        }
        let bytes = record.encode().map_err(|e| {
            Error::new(
                ErrorKind::InvalidParams,
                "a membership record cannot be encoded",
            )
            .with_source(e)
        })?;
        let appended = self
            .log
            .append_to(&self.topic, 0, vec![Bytes::from(bytes)])
            .await?;
        Ok(appended.first_offset)
    }

    async fn join(&self) -> Result<u64> {
        let lease_ms = u64::try_from(self.config.lease.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let body = MemberBody::Join {
            url: self.config.url.clone(),
            lease_ms,
        };
        self.write(&self.config.name, body).await
    }
}

/// The fold of the topic as this member reads it.
struct Reader {
    follower: Follower,
    fold: MemberFold,
    name: String,
    topic: TopicRef,
    verifier: Option<crate::security::RecordVerifier>,
    /// The offset of the last record read (folded or passed over).
    last: Option<u64>,
    /// Records folded since the newest snapshot read.
    since_snapshot: u64,
    /// Per partition, the newest `ready` by its owner ([`MemberView::ready`]).
    marks: Vec<Option<ReadyMark>>,
    /// Per member, where its own records are ([`MemberView::seen`]).
    seen: HashMap<String, Seen>,
}

impl Reader {
    /// Fold `records`: those that do not decode, or that the trust turns away, are passed
    /// over (every member with the same trust passes over the same ones).
    fn fold(&mut self, records: &[StoredRecord]) {
        for stored in records {
            let record = match MemberRecord::decode(&stored.payload) {
                Ok(record) => record,
                Err(error) => {
                    tracing::warn!(
                        topic = %self.topic, offset = stored.offset, %error,
                        "passing over a membership record that does not decode"
                    );
                    continue;
                }
            };
            let admitted = self.verifier.as_ref().is_none_or(|v| {
                v.admit_member(&record, &self.topic, stored.partition, stored.offset)
            });
            self.last = Some(stored.offset);
            if !admitted {
                continue;
            }
            if record.source == record.member {
                let seen = self.seen.entry(record.member.clone()).or_insert(Seen {
                    joined: 0,
                    latest: stored.offset,
                });
                seen.latest = stored.offset;
                if let MemberBody::Join { .. } = record.body {
                    seen.joined = stored.offset;
                }
            }
            if let MemberBody::Snapshot { .. } = record.body {
                self.since_snapshot = 0;
            } else {
                self.fold.apply(&record);
                self.since_snapshot += 1;
                if let MemberBody::Ready { partition, .. } = record.body {
                    self.mark(partition, &record, stored.offset);
                }
            }
        }
    }

    /// Keep a `ready` about `partition` if its writer owns the partition once it is folded
    /// (whether it ended a move or named none).
    fn mark(&mut self, partition: u32, record: &MemberRecord, offset: u64) {
        let a = self.fold.assignment();
        let owns = a.owner(partition).is_some() && a.owner(partition) == a.slot_of(&record.member);
        if let (true, Some(mark)) = (owns, self.marks.get_mut(partition as usize)) {
            *mark = Some(ReadyMark {
                member: record.member.clone(),
                at_ms: record.timestamp_ms,
                offset,
            });
        }
    }

    fn view(&self) -> MemberView {
        let assignment = self.fold.assignment().clone();
        let me = assignment.slot_of(&self.name);
        let seen = assignment
            .members
            .iter()
            .filter_map(|m| Some((m.name.clone(), *self.seen.get(&m.name)?)))
            .collect();
        MemberView {
            assignment,
            me,
            ready: self.marks.clone(),
            seen,
            read_to: self.last.map_or(0, |last| last + 1),
        }
    }
}

impl Membership {
    /// Join `config.agent`'s members over `log` (its events topic has `partitions`
    /// partitions): write the join, read the topic up to it, and run from there. The
    /// assignment it returns with includes this member.
    pub async fn join(log: Log, config: MembershipConfig, partitions: u32) -> Result<Self> {
        let topic = members_topic(&config.stream, &config.agent);
        log.ensure_topic(&topic, 1).await?;
        let verifier = config.verifier.clone();
        let name = config.name.clone();
        let writer = Arc::new(Writer {
            log: log.clone(),
            topic: topic.clone(),
            config,
            leaving: AtomicBool::new(false),
        });
        let joined_at = writer.join().await?;
        let snapshot =
            newest_snapshot(&log, &topic, joined_at, partitions, verifier.as_ref()).await?;
        let (replayed_from, fold) = match snapshot {
            Some((after, fold)) => (after + 1, fold),
            None => (0, MemberFold::new(partitions)),
        };
        let mut reader = Reader {
            follower: Follower::new(log, topic.clone(), 0, replayed_from).await?,
            fold,
            name,
            topic,
            verifier,
            last: replayed_from.checked_sub(1),
            since_snapshot: 0,
            marks: vec![None; partitions as usize],
            seen: HashMap::new(),
        };
        while reader.follower.position() <= joined_at {
            let records = reader.follower.next_batch().await?;
            let upto = records.partition_point(|r| r.offset <= joined_at);
            reader.fold(&records[..upto]);
            if reader.follower.position() > joined_at && reader.view().me.is_none() {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "member {:?}: its own join was not admitted (does the trust let its key write membership records?)",
                        reader.name
                    ),
                ));
            }
            reader.fold(&records[upto..]);
        }
        let (publish, view) = watch::channel(Arc::new(reader.view()));
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run(Arc::clone(&writer), reader, publish, stopped));
        Ok(Self {
            writer,
            view,
            stop,
            task: Some(task),
            replayed_from,
        })
    }

    /// The offset of `<agent>.members` this member's fold started reading at: after the
    /// newest snapshot before its join, or 0.
    pub fn replayed_from(&self) -> u64 {
        self.replayed_from
    }

    /// This member's name.
    pub fn name(&self) -> &str {
        &self.writer.config.name
    }

    /// The assignment now.
    pub fn view(&self) -> Arc<MemberView> {
        Arc::clone(&self.view.borrow())
    }

    /// A receiver of every new assignment.
    pub fn watch(&self) -> MemberWatch {
        self.view.clone()
    }

    /// Say that `partition`, moved to this member by the move that began at `since`
    /// ([`MemberView::incoming`]), is caught up: the map switches to this member, and the
    /// member it moved from releases it.
    pub async fn ready(&self, partition: u32, since: u64) -> Result<()> {
        self.reporter().ready(partition, since).await
    }

    /// What says partitions are ready from another task (the one holding them).
    pub fn reporter(&self) -> ReadyReporter {
        ReadyReporter(Arc::clone(&self.writer))
    }

    /// Leave: the others take this member's partitions, each warmed up while this member
    /// goes on serving it; once none is left (or `within` passes) it stops. Whether every
    /// partition was handed over in time (if not, the others evict it after its lease and
    /// serve the rest from then on).
    pub async fn leave(mut self, within: Duration) -> Result<bool> {
        self.writer.leaving.store(true, Ordering::SeqCst);
        self.writer
            .write(&self.writer.config.name, MemberBody::Leave)
            .await?;
        let mut view = self.view.clone();
        let gone = tokio::time::timeout(within, view.wait_for(|v| v.me.is_none()))
            .await
            .is_ok_and(|changed| changed.is_ok());
        self.shut().await;
        Ok(gone)
    }

    /// Stop without leaving, as a crash would (the others evict it after its lease).
    pub async fn stop(mut self) {
        self.shut().await;
    }

    async fn shut(&mut self) {
        self.stop.send_replace(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// Says that partitions moved to a member are caught up ([`Membership::ready`]); cheap to
/// clone, usable after the member stopped (a late ready is stale and changes nothing).
#[derive(Debug, Clone)]
pub struct ReadyReporter(Arc<Writer>);

impl ReadyReporter {
    /// [`Membership::ready`].
    pub async fn ready(&self, partition: u32, since: u64) -> Result<()> {
        let body = MemberBody::Ready { partition, since };
        self.0.write(&self.0.config.name, body).await?;
        Ok(())
    }

    /// Say that `partition`, which this member owns without a move (it started holding it,
    /// or took it over at an eviction), is caught up: a `ready` naming [`NO_MOVE`]. The fold
    /// passes over it; a bridge holding a copy of the partition on demand releases it.
    pub async fn holding(&self, partition: u32) -> Result<()> {
        self.ready(partition, NO_MOVE).await
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

/// Follow, fold and publish; heartbeat, evict and rejoin on each tick.
async fn run(
    writer: Arc<Writer>,
    mut reader: Reader,
    publish: watch::Sender<Arc<MemberView>>,
    mut stopped: watch::Receiver<bool>,
) {
    let every = writer.config.heartbeat_every();
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The lease end each eviction was written for: one record per missed lease.
    let mut evicted: HashMap<String, u64> = HashMap::new();
    let mut rejoining = false;
    // Since when this member's writes have kept working (`None`: one failed or was slow).
    let mut writing_since = Some(now_ms());
    loop {
        tokio::select! {
            changed = stopped.changed() => {
                if changed.is_err() || *stopped.borrow() {
                    return;
                }
            }
            batch = reader.follower.next_batch() => match batch {
                Ok(records) => {
                    reader.fold(&records);
                    snapshot_if_due(&writer, &mut reader).await;
                    let view = reader.view();
                    let present = view.me.is_some();
                    publish.send_if_modified(|current| {
                        let changed = **current != view;
                        if changed {
                            *current = Arc::new(view);
                        }
                        changed
                    });
                    rejoining &= !present;
                    if !present && !rejoining && !writer.leaving.load(Ordering::SeqCst) {
                        // Evicted while alive (a pause longer than the lease): join again.
                        rejoining = true;
                        tracing::warn!(member = %writer.config.name, "evicted from the members: joining again");
                        if let Err(error) = writer.join().await {
                            rejoining = false;
                            tracing::warn!(error = %error.report(), "cannot join the members again");
                        }
                    }
                }
                Err(error) if error.kind() == ErrorKind::Internal => {
                    tracing::warn!(error = %error.report(), "membership stops: the log is closed");
                    return;
                }
                Err(error) => {
                    tracing::warn!(error = %error.report(), "cannot read the members topic; retrying");
                    tokio::time::sleep(every.min(Duration::from_secs(1))).await;
                }
            },
            _ = tick.tick() => {
                let present = publish.borrow().me.is_some();
                if present {
                    let started = tokio::time::Instant::now();
                    let wrote = writer.write(&writer.config.name, MemberBody::Heartbeat).await;
                    if let Err(error) = &wrote {
                        tracing::warn!(error = %error.report(), "cannot write a heartbeat");
                    }
                    // A failed or slow write: the log was out of reach, for the others too
                    // (their heartbeats could not land either, or carry times from before).
                    if wrote.is_err() || started.elapsed() > every {
                        writing_since = None;
                    } else if writing_since.is_none() {
                        writing_since = Some(now_ms());
                    }
                }
                // Only once this member's own writes have worked for a whole lease: after an
                // outage the others get a lease to show they are alive.
                let lease_ms = u64::try_from(writer.config.lease.as_millis()).unwrap_or(u64::MAX);
                if writing_since.is_some_and(|since| now_ms() >= since.saturating_add(lease_ms)) {
                    evict_overdue(&writer, &reader.fold, &mut evicted).await;
                }
            }
        }
    }
}

/// Write an eviction of each other member whose lease this member's clock sees over, once
/// per lease end. The fold judges it by the record's time alone; the caller only writes one
/// once its own writes have worked for a whole lease.
async fn evict_overdue(writer: &Writer, fold: &MemberFold, evicted: &mut HashMap<String, u64>) {
    let now = now_ms();
    let members = &fold.assignment().members;
    evicted.retain(|name, _| members.iter().any(|m| &m.name == name));
    for member in members {
        if member.name == writer.config.name {
            continue;
        }
        let Some(end) = fold.lease_end(&member.name) else {
            continue;
        };
        if now < end || evicted.get(&member.name) == Some(&end) {
            continue;
        }
        tracing::info!(member = %member.name, lease_end_ms = end, "evicting a member whose lease is over");
        match writer.write(&member.name, MemberBody::Evict).await {
            Ok(_) => {
                evicted.insert(member.name.clone(), end);
            }
            Err(error) => tracing::warn!(error = %error.report(), "cannot write an eviction"),
        }
    }
}

/// Write a snapshot of the fold if this member is in the lowest slot and enough records
/// came since the newest one.
async fn snapshot_if_due(writer: &Writer, reader: &mut Reader) {
    let a = reader.fold.assignment();
    let lowest = a.members.first().map(|m| m.name.as_str());
    let (Some(after), true) = (reader.last, lowest == Some(writer.config.name.as_str())) else {
        return;
    };
    if reader.since_snapshot < writer.config.snapshot_every.max(1) {
        return;
    }
    reader.since_snapshot = 0;
    let state = reader.fold.state();
    let body = MemberBody::Snapshot { after, state };
    if let Err(error) = writer.write(&writer.config.name, body).await {
        tracing::warn!(error = %error.report(), "cannot write a membership snapshot");
    }
}

/// How far back a join looks for a snapshot at a time.
const SNAPSHOT_WINDOW: u64 = 4096;

/// The newest snapshot before offset `end` that the trust admits and that restores over
/// `partitions` partitions: the offset of the last record it folds, and the fold.
async fn newest_snapshot(
    log: &Log,
    topic: &TopicRef,
    end: u64,
    partitions: u32,
    verifier: Option<&crate::security::RecordVerifier>,
) -> Result<Option<(u64, MemberFold)>> {
    let mut hi = end;
    while hi > 0 {
        let lo = hi.saturating_sub(SNAPSHOT_WINDOW);
        let mut records = Vec::new();
        let mut from = lo;
        while from < hi {
            let want = usize::try_from(hi - from).unwrap_or(usize::MAX);
            let batch = log.read(topic, 0, from, want).await?;
            let Some(last) = batch.last() else { break };
            from = last.offset + 1;
            records.extend(batch.into_iter().filter(|r| r.offset < hi));
        }
        for stored in records.iter().rev() {
            let Ok(record) = MemberRecord::decode(&stored.payload) else {
                continue;
            };
            let MemberBody::Snapshot { after, state } = &record.body else {
                continue;
            };
            let admitted =
                verifier.is_none_or(|v| v.admit_member(&record, topic, 0, stored.offset));
            if *after >= stored.offset || !admitted {
                continue;
            }
            match MemberFold::restore(partitions, state) {
                Ok(fold) => return Ok(Some((*after, fold))),
                Err(error) => tracing::warn!(
                    topic = %topic, offset = stored.offset, %error,
                    "passing over a membership snapshot that does not restore"
                ),
            }
        }
        hi = lo;
    }
    Ok(None)
}
