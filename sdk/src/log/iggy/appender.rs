//! Group commit: the appends to one partition that wait at the same moment go out as one
//! `send_messages`, persisted and acknowledged together.
//!
//! Each partition an append reaches gets one task that takes the waiting appends in their
//! order of arrival, sends their records as one batch (up to [`MAX_BATCH_RECORDS`] records
//! and [`MAX_BATCH_BYTES`] bytes), and answers each with its own first offset (the batch's
//! base plus the records before it). One batch is in flight per partition: the next forms
//! while it is, so under load a batch carries every append that arrived during the last
//! round trip, and a lone append waits for nothing. Each append's records stay contiguous,
//! and an append acknowledged before another was made lands before it.

use std::sync::{Arc, OnceLock, Weak};

use bytes::Bytes;
use iggy::prelude::{IggyMessage, MessageClient};
use tokio::sync::{mpsc, oneshot};

use super::errors::map_err;
use super::pool::Pool;
use super::topic::{TopicHandle, message};
use crate::error::{Error, ErrorKind, Result};

/// The most records one batch carries.
const MAX_BATCH_RECORDS: usize = 1024;
/// The most payload bytes one batch carries (a single larger append still goes alone).
const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;

/// One waiting append: its records and where to answer.
struct Job {
    payloads: Vec<Bytes>,
    bytes: usize,
    done: oneshot::Sender<Result<u64>>,
}

/// The senders of a topic's partitions, each started on first use.
#[derive(Debug)]
pub(super) struct Appenders {
    slots: Vec<OnceLock<Appender>>,
}

impl Appenders {
    pub(super) fn new(partitions: u32) -> Appenders {
        Appenders {
            slots: (0..partitions).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The sender of `partition` of `handle`, over `pool`.
    pub(super) fn get(
        &self,
        pool: &Arc<Pool>,
        handle: &Arc<TopicHandle>,
        partition: u32,
    ) -> Result<&Appender> {
        handle.route(partition)?;
        let slot = self
            .slots
            .get(partition as usize)
            .ok_or_else(|| Error::new(ErrorKind::Internal, "appender slot missing"))?;
        Ok(slot
            .get_or_init(|| Appender::start(Arc::clone(pool), Arc::downgrade(handle), partition)))
    }
}

/// The sender of one partition's appends.
#[derive(Debug, Clone)]
pub(super) struct Appender {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Appender {
    /// Start the task sending `partition` of `handle`'s appends over `pool`. The task ends
    /// once the appender is dropped (with the log's topic cache) or the handle is gone.
    fn start(pool: Arc<Pool>, handle: Weak<TopicHandle>, partition: u32) -> Appender {
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(run(pool, handle, partition, queue));
        Appender { jobs }
    }

    /// Append `payloads` (not empty) and return the offset of the first, once persisted.
    pub(super) async fn append(&self, payloads: Vec<Bytes>) -> Result<u64> {
        let (done, answer) = oneshot::channel();
        let bytes = payloads.iter().map(Bytes::len).sum();
        let job = Job {
            payloads,
            bytes,
            done,
        };
        self.jobs
            .send(job)
            .map_err(|_| crate::log::closed_error())?;
        answer.await.map_err(|_| crate::log::closed_error())?
    }
}

/// Until every sender is gone: take what waits, send it as one batch, answer each.
async fn run(
    pool: Arc<Pool>,
    handle: Weak<TopicHandle>,
    partition: u32,
    mut queue: mpsc::UnboundedReceiver<Job>,
) {
    let mut held: Option<Job> = None;
    loop {
        let first = match held.take() {
            Some(job) => job,
            None => match queue.recv().await {
                Some(job) => job,
                None => return,
            },
        };
        let (mut records, mut bytes) = (first.payloads.len(), first.bytes);
        let mut batch = vec![first];
        while let Ok(job) = queue.try_recv() {
            if records + job.payloads.len() > MAX_BATCH_RECORDS
                || bytes + job.bytes > MAX_BATCH_BYTES
            {
                held = Some(job);
                break;
            }
            records += job.payloads.len();
            bytes += job.bytes;
            batch.push(job);
        }
        let Some(handle) = handle.upgrade() else {
            return;
        };
        send(&pool, &handle, partition, batch).await;
    }
}

/// Send `batch` as one `send_messages` and answer each of its appends.
async fn send(pool: &Pool, handle: &TopicHandle, partition: u32, batch: Vec<Job>) {
    let mut messages = Vec::with_capacity(batch.iter().map(|job| job.payloads.len()).sum());
    let mut built = Ok(());
    for job in &batch {
        for payload in &job.payloads {
            match message(payload.clone()) {
                Ok(message) => messages.push(message),
                Err(e) => built = Err(e),
            }
        }
    }
    let sent = match built {
        Ok(()) => {
            handle.set_in_flight(partition, messages.len() as u64);
            send_messages(pool, handle, partition, &mut messages).await
        }
        Err(e) => Err(e),
    };
    match sent {
        Ok(base) => {
            // Kept and announced before any append returns: an append's own records are
            // readable here, and its end seen, by the time its caller goes on.
            let end = base + messages.len() as u64;
            handle.keep(
                partition,
                base,
                batch.iter().flat_map(|job| job.payloads.iter().cloned()),
            );
            handle.bump(partition, end);
            handle.set_in_flight(partition, 0);
            let mut first = base;
            for job in batch {
                let count = job.payloads.len() as u64;
                let _ = job.done.send(Ok(first));
                first += count;
            }
        }
        Err(error) => {
            handle.set_in_flight(partition, 0);
            // Every append of the batch failed together: each gets the error (the first
            // keeps its cause).
            let (kind, text) = (error.kind(), error.message().to_owned());
            let mut error = Some(error);
            for job in batch {
                let own = error
                    .take()
                    .unwrap_or_else(|| Error::new(kind, text.clone()));
                let _ = job.done.send(Err(own));
            }
        }
    }
}

/// One `send_messages` to `partition`; the base offset the server confirmed.
async fn send_messages(
    pool: &Pool,
    handle: &TopicHandle,
    partition: u32,
    messages: &mut [IggyMessage],
) -> Result<u64> {
    let topic = &handle.name;
    let route = handle.route(partition)?;
    let client = pool.get();
    let sent = client
        .send_messages(&handle.stream_id, &handle.topic_id, route, messages)
        .await
        .map_err(|e| map_err(e, format_args!("appending to {topic}")))?;
    sent.confirmations
        .iter()
        .find(|c| c.partition_id == partition)
        .map(|c| c.base_offset)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                format!("iggy: appending to {topic}: the server confirmed no offset"),
            )
        })
}
