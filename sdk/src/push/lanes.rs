//! Sending: one lane per (task, config), which sends its notifications one after another in
//! log order, each retried with backoff until delivered or given up (a dead-letter record on
//! the task's log); lanes run side by side, so a slow or dead receiver holds only its own.
//! Requests to one endpoint (scheme, host, port) are limited in number, and an endpoint that
//! keeps failing has its circuit opened ([`super::endpoint`]). A lane that keeps failing is
//! parked (`progress`' module doc), so that it does not hold its partition's progress back.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentlog_wire::a2a::TaskPushNotificationConfig;
use agentlog_wire::trace::TraceContext;
use agentlog_wire::{Record, RecordBody, RecordHeader};
use bytes::Bytes;
use foldhash::HashMap;
use parking_lot::Mutex;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::client::{Checked, Client, Sent};
use super::config::RetryPolicy;
use super::endpoint::{Endpoint, Endpoints};
use super::metrics::PushMetrics;
use super::park::{PARK_CHECK, Park};
use super::progress::Progress;
use super::sign::NotificationSigner;
use crate::log::{Log, TopicRef};
use crate::security::RecordSigner;
use crate::telemetry::{self, Kind, Parent, Span};

/// The header carrying a config's `token` (what most receivers read; the spec names none).
pub(super) const TOKEN_HEADER: &str = "x-a2a-notification-token";
/// The header carrying the notification's signed JWT.
pub const SIGNATURE_HEADER: &str = "agentlog-notification-signature";

/// The W3C trace context headers a notification carries.
const TRACEPARENT: HeaderName = HeaderName::from_static(agentlog_wire::trace::TRACEPARENT);
const TRACESTATE: HeaderName = HeaderName::from_static(agentlog_wire::trace::TRACESTATE);

/// One notification to send.
#[derive(Debug, Clone)]
pub(super) struct Job {
    pub(super) partition: u32,
    pub(super) epoch: u64,
    /// The offset of the record it tells of.
    pub(super) offset: u64,
    pub(super) task: Arc<str>,
    pub(super) context: Arc<str>,
    pub(super) config: Arc<TaskPushNotificationConfig>,
    pub(super) body: Bytes,
    /// When the sender read its record.
    pub(super) since: Instant,
    /// Held by its lane's anchor (a progress record) rather than by its offset.
    pub(super) anchored: bool,
    /// The W3C trace context of the record it tells of: the delivery's parent, carried on in
    /// the POST's `traceparent`.
    pub(super) trace: Option<TraceContext>,
}

impl Job {
    fn config_id(&self) -> &str {
        self.config.id.as_deref().unwrap_or_default()
    }
}

/// What the lanes share.
pub(super) struct Shared {
    pub(super) client: Client,
    pub(super) policy: RetryPolicy,
    pub(super) breaker_failures: u32,
    pub(super) log: Log,
    pub(super) events: TopicRef,
    pub(super) source: String,
    pub(super) record_signer: Option<RecordSigner>,
    pub(super) signer: NotificationSigner,
    pub(super) progress: Mutex<Progress>,
    pub(super) metrics: Arc<PushMetrics>,
    /// Told when notifications are done: the consumer waits on it while too many are held.
    pub(super) room: Notify,
    pub(super) cancel: CancellationToken,
    lanes: Mutex<HashMap<LaneKey, Arc<Lane>>>,
    endpoints: Endpoints,
}

/// A lane's task and config id.
type LaneKey = (Arc<str>, Arc<str>);

/// A lane. Locks are taken in the order `Shared::lanes`, `park`, `queue`, `Shared::progress`.
#[derive(Default)]
struct Lane {
    park: Mutex<Park>,
    queue: Mutex<VecDeque<Job>>,
}

impl Shared {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        client: Client,
        policy: RetryPolicy,
        per_endpoint: usize,
        breaker_failures: u32,
        log: Log,
        events: TopicRef,
        source: String,
        record_signer: Option<RecordSigner>,
        signer: NotificationSigner,
        metrics: Arc<PushMetrics>,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            client,
            policy,
            breaker_failures: breaker_failures.max(1),
            log,
            events,
            source,
            record_signer,
            signer,
            progress: Mutex::new(Progress::default()),
            metrics,
            room: Notify::new(),
            cancel,
            lanes: Mutex::new(HashMap::default()),
            endpoints: Endpoints::new(per_endpoint),
        }
    }
}

/// Queue `job` on its lane, starting the lane if it was idle.
pub(super) fn enqueue(shared: &Arc<Shared>, job: Job) {
    let key = (job.task.clone(), Arc::from(job.config_id()));
    let mut lanes = shared.lanes.lock();
    let mut start = false;
    let lane = lanes
        .entry(key.clone())
        .or_insert_with(|| {
            start = true;
            Arc::new(Lane::default())
        })
        .clone();
    lane.queue.lock().push_back(job);
    drop(lanes);
    if start {
        tokio::spawn(run(shared.clone(), key, lane));
    }
}

/// Queue `jobs`, notices of one config made again (resumed) and held by the progress record
/// at `anchor`, ahead of anything else of their lane.
pub(super) fn resume(shared: &Arc<Shared>, jobs: Vec<Job>, anchor: u64) {
    let Some(first) = jobs.first() else {
        return;
    };
    let (partition, epoch) = (first.partition, first.epoch);
    let key = (first.task.clone(), Arc::from(first.config_id()));
    let mut lanes = shared.lanes.lock();
    let mut start = false;
    let lane = lanes
        .entry(key.clone())
        .or_insert_with(|| {
            start = true;
            Arc::new(Lane::default())
        })
        .clone();
    {
        let mut park = lane.park.lock();
        let mut queue = lane.queue.lock();
        let mut progress = shared.progress.lock();
        progress.add_anchored(partition, epoch, jobs.len());
        progress.anchor(partition, epoch, anchor);
        if let Some((epoch, old)) = park.anchor.replace((epoch, anchor)) {
            progress.release(partition, epoch, old);
        }
        queue.extend(jobs.into_iter().map(|job| Job {
            anchored: true,
            ..job
        }));
    }
    drop(lanes);
    if start {
        tokio::spawn(run(shared.clone(), key, lane));
    }
}

/// The progress record at `offset` of `partition` was read: if its lane wrote it, the
/// lane's notices before it are held by it from now on (and no more by their offsets, nor by
/// the lane's previous record).
pub(super) fn parked(shared: &Shared, partition: u32, epoch: u64, offset: u64, record: &Record) {
    let RecordBody::PushProgress { config_id, .. } = &record.body else {
        return;
    };
    let key: LaneKey = (
        Arc::from(record.header.task_id.as_str()),
        Arc::from(config_id.as_str()),
    );
    let lanes = shared.lanes.lock();
    let Some(lane) = lanes.get(&key) else {
        return;
    };
    let mut park = lane.park.lock();
    if park.writing.as_deref() != Some(record.header.message_id.as_str()) {
        // Another sender's (before this one took the partition: the tracker resumed it).
        return;
    }
    park.writing = None;
    let mut queue = lane.queue.lock();
    let mut progress = shared.progress.lock();
    if !progress.is_current(partition, epoch) {
        return;
    }
    progress.anchor(partition, epoch, offset);
    for job in queue
        .iter_mut()
        .filter(|j| !j.anchored && j.epoch == epoch && j.offset < offset)
    {
        progress.release(partition, epoch, job.offset);
        job.anchored = true;
    }
    if let Some((epoch, old)) = park.anchor.replace((epoch, offset)) {
        progress.release(partition, epoch, old);
    }
}

/// A lane: its notifications one after another until it is empty.
async fn run(shared: Arc<Shared>, key: LaneKey, lane: Arc<Lane>) {
    loop {
        let job = {
            // Under the lanes' lock: an enqueue either sees this lane or starts a new one.
            let mut lanes = shared.lanes.lock();
            let next = lane.queue.lock().front().cloned();
            match next {
                Some(job) => job,
                None => {
                    lanes.remove(&key);
                    break;
                }
            }
        };
        let done = delivery(&shared, &lane, &job).await;
        let popped = lane.queue.lock().pop_front();
        if done {
            let anchored = popped.is_some_and(|j| j.anchored);
            let mut park = lane.park.lock();
            let queue = lane.queue.lock();
            let mut progress = shared.progress.lock();
            progress.done(job.partition, job.epoch, job.offset, anchored);
            // The anchor holds until the notices before it are done.
            if let Some((epoch, at)) = park.anchor
                && !queue.iter().any(|j| j.offset < at)
            {
                progress.release(job.partition, epoch, at);
                park.anchor = None;
            }
            drop((park, queue, progress));
            shared.room.notify_waiters();
        }
    }
    shared.endpoints.forget_idle();
}

/// [`send`] under a `push delivery` span (a child of the record's context): the task, the
/// config, and whether it ended (`done`: delivered, or given up with a dead letter, which
/// marks the span failed) or the sender stopped first (`stopped`).
async fn delivery(shared: &Shared, lane: &Lane, job: &Job) -> bool {
    let span = Span::start(
        "push delivery",
        Kind::Client,
        Parent::Remote(job.trace.as_ref()),
    );
    if !span.is_some() {
        return send(shared, lane, job).await;
    }
    span.set("a2a.task.id", &*job.task);
    span.set("agentlog.push.config_id", job.config_id());
    if let Ok(url) = url::Url::parse(&job.config.url)
        && let Some(host) = url.host_str()
    {
        span.set("server.address", host);
    }
    let done = span.in_scope(send(shared, lane, job)).await;
    span.set("agentlog.outcome", if done { "done" } else { "stopped" });
    done
}

/// Send `job` until delivered or given up (`true`), or until the sender stops or loses the
/// job's partition (`false`: it is not done; its next sender sends it).
async fn send(shared: &Shared, lane: &Lane, job: &Job) -> bool {
    let target = shared
        .client
        .check(&job.config.url)
        .map(|url| (shared.endpoints.get(&url.endpoint), url));
    let mut failures = 0;
    let mut failing_since = None;
    loop {
        if shared.cancel.is_cancelled() || !current(shared, job) {
            return false;
        }
        let sent = match &target {
            Ok((endpoint, url)) => attempt(shared, job, endpoint, url).await,
            Err(reason) => Sent::Refused(reason.clone()),
        };
        let reason = match sent {
            Sent::Delivered => {
                PushMetrics::add(&shared.metrics.delivered);
                return true;
            }
            Sent::Refused(reason) => {
                PushMetrics::add(&shared.metrics.refused);
                return dead_letter(shared, job, failures + 1, &reason).await;
            }
            Sent::Failed(reason) => reason,
        };
        failures += 1;
        PushMetrics::add(&shared.metrics.failed_attempts);
        if failures >= shared.policy.attempts || job.since.elapsed() >= shared.policy.max_age {
            return dead_letter(shared, job, failures, &reason).await;
        }
        tracing::debug!(task = %job.task, config = job.config_id(), failures, %reason, "push: will retry");
        let failing_since = *failing_since.get_or_insert_with(Instant::now);
        let until = tokio::time::Instant::now() + jitter(shared.policy.delay(failures));
        loop {
            park(shared, lane, job, failing_since).await;
            let now = tokio::time::Instant::now();
            if now >= until {
                break;
            }
            tokio::select! {
                () = shared.cancel.cancelled() => return false,
                () = tokio::time::sleep_until(until.min(now + PARK_CHECK)) => {}
            }
        }
    }
}

/// One POST of `job` to `url`, unless its endpoint's circuit is open; the endpoint told how
/// it went.
async fn attempt(shared: &Shared, job: &Job, endpoint: &Endpoint, url: &Checked) -> Sent {
    if endpoint.is_open() {
        return Sent::Failed("the endpoint's circuit is open (it kept failing)".into());
    }
    let _permit = endpoint.permits.acquire(job.since).await;
    let sent = match headers(shared, job) {
        Ok(headers) => shared.client.post(url, headers, job.body.clone()).await,
        Err(reason) => Sent::Refused(reason),
    };
    match &sent {
        Sent::Delivered => endpoint.succeeded(),
        Sent::Failed(_) => {
            if endpoint.failed(shared.breaker_failures) {
                PushMetrics::add(&shared.metrics.circuit_opens);
            }
        }
        Sent::Refused(_) => {}
    }
    sent
}

/// Park the lane of `job`, failing since `failing_since`, if it is due and holds its
/// partition's progress back: write a progress record saying its notices from `job`'s on
/// are not done (`parked` takes them off the partition's progress once it is read back).
async fn park(shared: &Shared, lane: &Lane, job: &Job, failing_since: Instant) {
    let message_id = {
        let mut park = lane.park.lock();
        // What the lane holds back: its anchor, else this, its oldest notice.
        let holds = park.anchor.map_or(job.offset, |(_, at)| at);
        if !park.due(failing_since) || !shared.progress.lock().read_past(job.partition, holds) {
            return;
        }
        let message_id = format!("push-progress-{}", uuid::Uuid::new_v4());
        park.writing = Some(message_id.clone());
        park.last = Some(Instant::now());
        message_id
    };
    let record = super::park::record(header(shared, job, message_id), job.config_id(), job.offset);
    if !append(shared, job, &record, false).await {
        lane.park.lock().writing = None;
    }
}

/// The header of a record the sender writes on `job`'s task.
fn header(shared: &Shared, job: &Job, message_id: String) -> RecordHeader {
    RecordHeader {
        task_id: job.task.to_string(),
        context_id: job.context.to_string(),
        message_id,
        source: shared.source.clone(),
        timestamp_ms: crate::retention::now_ms(),
        content_type: "application/json".into(),
        ..RecordHeader::default()
    }
}

/// Append `record` on `job`'s task, signed with the record signer if any: `true` once
/// written. With `insist`, failed appends are tried again (backing off) until the sender
/// stops; without, once.
async fn append(shared: &Shared, job: &Job, record: &Record, insist: bool) -> bool {
    let bytes = match &shared.record_signer {
        Some(signer) => signer.encode(record),
        None => record.encode().map_err(|e| {
            crate::error::Error::new(crate::error::ErrorKind::Internal, "a push record")
                .with_source(e)
        }),
    };
    let bytes = match bytes {
        Ok(bytes) => Bytes::from(bytes),
        Err(error) => {
            tracing::error!(error = %error.report(), "push: cannot encode a record");
            return false;
        }
    };
    let mut wait = Duration::from_millis(100);
    loop {
        match shared
            .log
            .append(&shared.events, job.task.as_bytes(), vec![bytes.clone()])
            .await
        {
            Ok(_) => return true,
            Err(error) => {
                tracing::warn!(error = %error.report(), kind = ?record.body.kind(), "push: cannot write a record");
                if !insist {
                    return false;
                }
                tokio::select! {
                    () = shared.cancel.cancelled() => return false,
                    () = tokio::time::sleep(wait) => {}
                }
                wait = (wait * 2).min(Duration::from_secs(5));
            }
        }
    }
}

fn current(shared: &Shared, job: &Job) -> bool {
    shared.progress.lock().is_current(job.partition, job.epoch)
}

/// The request's headers: the body's type, the config's credentials and token, the signed
/// JWT and the trace context.
fn headers(shared: &Shared, job: &Job) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::with_capacity(8);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let value = |text: &str, what: &str| {
        HeaderValue::from_str(text)
            .map_err(|_| format!("the config's {what} is not a header value"))
    };
    let jwt = shared
        .signer
        .sign(&job.config.url, &job.task, &job.body)
        .map_err(|e| e.to_string())?;
    match &job.config.authentication {
        Some(auth) => {
            let mut credentials = match &auth.credentials {
                Some(credentials) => {
                    value(&format!("{} {credentials}", auth.scheme), "credentials")?
                }
                None => value(&auth.scheme, "scheme")?,
            };
            credentials.set_sensitive(true);
            headers.insert(AUTHORIZATION, credentials);
        }
        // No credentials of its own: the JWT is the bearer token, as the spec's example sends it.
        None => {
            headers.insert(AUTHORIZATION, value(&format!("Bearer {jwt}"), "signature")?);
        }
    }
    headers.insert(
        HeaderName::from_static(SIGNATURE_HEADER),
        value(&jwt, "signature")?,
    );
    if let Some(token) = &job.config.token {
        let mut token = value(token, "token")?;
        token.set_sensitive(true);
        headers.insert(HeaderName::from_static(TOKEN_HEADER), token);
    }
    // The delivery's span when spans are made, else the record's own context.
    let trace = telemetry::current()
        .trace_context(job.trace.as_ref())
        .or_else(|| job.trace.clone());
    if let Some(trace) = trace {
        headers.insert(TRACEPARENT, value(trace.traceparent(), "trace context")?);
        if !trace.tracestate().is_empty() {
            headers.insert(TRACESTATE, value(trace.tracestate(), "trace context")?);
        }
    }
    Ok(headers)
}

/// Give `job` up: a dead-letter record on its task's log, written before the job counts as
/// done (a sender stopped first sends it again). `false` if the sender stopped meanwhile.
async fn dead_letter(shared: &Shared, job: &Job, attempts: u32, reason: &str) -> bool {
    let span = telemetry::current();
    span.set("agentlog.push.attempts", attempts);
    span.fail("dead_letter");
    tracing::warn!(task = %job.task, config = job.config_id(), attempts, reason, "push: notification given up");
    let record = Record {
        header: header(shared, job, format!("push-dead-{}", uuid::Uuid::new_v4())),
        body: RecordBody::PushDeadLetter {
            config_id: job.config_id().to_owned(),
            update: job.offset,
            attempts,
            reason: reason.to_owned(),
        },
    };
    let written = append(shared, job, &record, true).await;
    if written {
        PushMetrics::add(&shared.metrics.dead_letters);
    }
    // One that cannot even be encoded is not tried again.
    written || !shared.cancel.is_cancelled()
}

/// A wait drawn between half and all of `delay`.
fn jitter(delay: Duration) -> Duration {
    let mut byte = [0u8; 2];
    let spread = match getrandom::fill(&mut byte) {
        Ok(()) => f64::from(u16::from_le_bytes(byte)) / f64::from(u16::MAX),
        Err(_) => 1.0,
    };
    delay.mul_f64(0.5 + spread / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_between_half_and_all_of_the_delay() {
        for _ in 0..200 {
            let wait = jitter(Duration::from_millis(1000));
            assert!((500..=1000).contains(&wait.as_millis()), "{wait:?}");
        }
    }
}
