//! A turn's reports on their way to the log, in the order the handler made them.
//!
//! A report does not wait for the one before it to be acknowledged: it joins a queue, and
//! the reports that queue until the handler yields, or while one batch is on its way, go out
//! together as the next batch (one append, one round trip to a remote log, for a handler's
//! burst of artifacts and statuses). A handler that waits between reports (a model's tokens)
//! sends each as soon as it waits, so a streaming client sees it no later than before. The
//! handler's future is polled through [`SendsOnYield`], which sends what it queued each time
//! it yields, on its own task; a report queued from elsewhere (a task the handler spawned, a
//! binding's thread) starts a task that sends it. One batch is on its way at a time, so the
//! log holds the reports in their order, and none after one that failed: the failure drops
//! the reports queued behind it and is returned by the next call that writes or waits (as it
//! would have been by the failed report's own call).
//!
//! What must be on the log before the caller goes on waits for it: a turn's end
//! (`complete`, `fail`, an interruption, a reply), a claim of a follow-up, and the worker's
//! own look at the turn once the handler returns ([`Reports::flush`]).

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use agentlog_wire::Record;
use agentlog_wire::fold::Parsed;
use tokio::sync::watch;

use super::attempt::Writer;
use crate::error::{Error, ErrorKind, Result};
use crate::view::TaskView;

thread_local! {
    /// The queue whose handler [`SendsOnYield`] is polling on this thread now, if any.
    static POLLING: Cell<*const Reports> = const { Cell::new(std::ptr::null()) };
}

/// The most reports one batch carries (a handler writing faster than the log takes them
/// waits once this many are queued).
const MAX_BATCH: usize = 256;

/// The queue of one context's reports, and the view they are applied to once written.
#[derive(Debug)]
pub(super) struct Reports {
    writer: Arc<Writer>,
    view: TaskView,
    partition: u32,
    queue: Mutex<Queue>,
    /// How many reports are on the log (or dropped by a failure); waiters watch it.
    settled: watch::Sender<u64>,
    /// One past the offset of the last report written (0: none yet).
    written_end: AtomicU64,
}

#[derive(Debug, Default)]
struct Queue {
    /// The reports queued and not sent yet, and what each changes (when its writer knows).
    waiting: Vec<Record>,
    parsed: Vec<Option<Parsed>>,
    /// How many reports were ever queued: a report's number is the count after it.
    queued: u64,
    /// Whether a batch is on its way (its sender takes the next one when it is done).
    sending: bool,
    /// The failure no caller has been told of yet, with the number of the first report it
    /// dropped.
    failure: Option<(u64, Error)>,
}

impl Reports {
    pub(super) fn new(writer: Arc<Writer>, view: TaskView, partition: u32) -> Arc<Self> {
        Arc::new(Self {
            writer,
            view,
            partition,
            queue: Mutex::new(Queue::default()),
            settled: watch::Sender::new(0),
            written_end: AtomicU64::new(0),
        })
    }

    /// Queue `record` (`parsed`: the change it makes, as its writer knows it). With `wait`,
    /// return once it is on the log; without, once it is queued (and once fewer than
    /// [`MAX_BATCH`] wait before it). An earlier report's failure not yet told is returned
    /// instead, and `record` is not written.
    pub(super) async fn write(
        self: &Arc<Self>,
        record: Record,
        parsed: Option<Parsed>,
        wait: bool,
    ) -> Result<()> {
        let (number, start) = {
            let mut queue = self.lock();
            if let Some((_, failure)) = queue.failure.take() {
                return Err(failure);
            }
            queue.waiting.push(record);
            queue.parsed.push(parsed);
            queue.queued += 1;
            // Queued from the handler's own poll without waiting: sent when it yields.
            let deferred = !wait && self.polled_here();
            let start = !queue.sending && !deferred;
            queue.sending |= start;
            (queue.queued, start)
        };
        if start {
            if wait {
                self.start_sending();
            } else {
                // From elsewhere: on a task of its own, which runs once the writer yields
                // (tokio runs a task just spawned next on this thread), so a burst still goes
                // as one batch. Under the turn's span, whose child the append is.
                let sending = crate::telemetry::current().bind(Arc::clone(self).send_waiting());
                tokio::spawn(sending);
            }
        }
        let until = if wait {
            number
        } else {
            number.saturating_sub(MAX_BATCH as u64)
        };
        self.wait_settled(until).await?;
        if wait {
            self.take_failure(number)
        } else {
            Ok(())
        }
    }

    /// Wait until every report queued so far is on the log; an untold failure is returned.
    pub(super) async fn flush(self: &Arc<Self>) -> Result<()> {
        self.send_queued();
        let queued = self.lock().queued;
        self.wait_settled(queued).await?;
        self.take_failure(queued)
    }

    /// The offset (in the task's partition) of the last report written, if any.
    pub(super) fn last_written(&self) -> Option<u64> {
        self.written_end.load(Ordering::Acquire).checked_sub(1)
    }

    /// Poll `handler` (the turn's handler) so that what it queues without waiting is sent
    /// each time it yields.
    pub(super) fn sends_on_yield<F: Future>(self: &Arc<Self>, handler: F) -> SendsOnYield<F> {
        SendsOnYield {
            handler: Box::pin(handler),
            reports: Arc::clone(self),
        }
    }

    /// Whether this queue's handler is being polled on this thread now.
    fn polled_here(&self) -> bool {
        POLLING.with(|polling| std::ptr::eq(polling.get(), self))
    }

    /// Start sending what is queued, unless nothing is or a batch is on its way.
    fn send_queued(self: &Arc<Self>) {
        let start = {
            let mut queue = self.lock();
            let start = !queue.sending && !queue.waiting.is_empty();
            queue.sending |= start;
            start
        };
        if start {
            self.start_sending();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The untold failure if it dropped report `number` or one before it.
    fn take_failure(&self, number: u64) -> Result<()> {
        let mut queue = self.lock();
        match queue.failure.take() {
            Some((first, failure)) if first <= number => Err(failure),
            later => {
                queue.failure = later;
                Ok(())
            }
        }
    }

    async fn wait_settled(&self, number: u64) -> Result<()> {
        let mut settled = self.settled.subscribe();
        settled
            .wait_for(|&settled| settled >= number)
            .await
            .map(drop)
            .map_err(|_| Error::new(ErrorKind::Internal, "the report queue stopped"))
    }

    /// Send what waits, batch after batch, until nothing does. Run here while the log
    /// answers at once (the embedded log's appends); a task of its own finishes the rest
    /// when one must wait for the log (a remote log's round trip).
    fn start_sending(self: &Arc<Self>) {
        let sending = crate::telemetry::current().bind(Arc::clone(self).send_waiting());
        let mut sending = Box::pin(sending);
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        if sending.as_mut().poll(&mut cx).is_pending() {
            tokio::spawn(sending);
        }
    }

    async fn send_waiting(self: Arc<Self>) {
        loop {
            let (records, parsed, first_number) = {
                let mut queue = self.lock();
                if queue.waiting.is_empty() {
                    queue.sending = false;
                    return;
                }
                let take = queue.waiting.len().min(MAX_BATCH);
                let first_number = queue.queued - queue.waiting.len() as u64 + 1;
                let records: Vec<Record> = queue.waiting.drain(..take).collect();
                let parsed: Vec<Option<Parsed>> = queue.parsed.drain(..take).collect();
                (records, parsed, first_number)
            };
            let count = records.len() as u64;
            match self.writer.append_for(&records, &self.view).await {
                Ok(appended) => {
                    let first = appended.first_offset;
                    self.written_end.fetch_max(first + count, Ordering::AcqRel);
                    self.view.apply_own_batch(
                        self.partition,
                        first,
                        appended.place,
                        &records,
                        parsed,
                    );
                    self.settled.send_modify(|settled| *settled += count);
                }
                Err(error) => {
                    // Nothing after a failed report: what queued behind it is dropped with it.
                    let dropped = {
                        let mut queue = self.lock();
                        let dropped = queue.waiting.len() as u64;
                        queue.waiting.clear();
                        queue.parsed.clear();
                        queue.failure = Some((first_number, error));
                        queue.sending = false;
                        dropped
                    };
                    self.settled
                        .send_modify(|settled| *settled += count + dropped);
                    return;
                }
            }
        }
    }
}

/// A turn's handler, polled so that the reports it queued without waiting go out each time it
/// yields ([`Reports::sends_on_yield`]).
pub(super) struct SendsOnYield<F> {
    handler: Pin<Box<F>>,
    reports: Arc<Reports>,
}

impl<F: Future> Future for SendsOnYield<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let polled = {
            let _polling = Polling::enter(&this.reports);
            this.handler.as_mut().poll(cx)
        };
        this.reports.send_queued();
        polled
    }
}

/// Marks a queue's handler as polled on this thread until dropped (a panicking handler too).
struct Polling(*const Reports);

impl Polling {
    fn enter(reports: &Arc<Reports>) -> Self {
        Self(POLLING.with(|polling| polling.replace(Arc::as_ptr(reports))))
    }
}

impl Drop for Polling {
    fn drop(&mut self) {
        POLLING.with(|polling| polling.set(self.0));
    }
}
