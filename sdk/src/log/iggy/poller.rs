//! The end-offset poller: Iggy cannot push "new records" to a client, so one task per watched
//! topic asks for the end offsets and fans the answer out to every local watcher.
//!
//! It polls tightly while other processes write (a follower then sees their record about one
//! interval after it lands) and backs off geometrically while they do not, so a topic only
//! this process writes costs ~20 requests a second however busy it is. Appends made through
//! the same [`IggyLog`](super::IggyLog) bump the watches themselves and never wait for the
//! poller, so they are no reason to poll tightly. The task stops when the last receiver of
//! the topic is dropped or when the log is closed.

use std::sync::Arc;
use std::time::Duration;

use iggy::prelude::{IggyClient, TopicClient};
use tokio_util::sync::CancellationToken;

use super::errors::map_err;
use super::topic::TopicHandle;
use crate::error::{Error, ErrorKind, Result};

/// The interval while other processes' records arrive. Tokio's timer rounds it up to its 1 ms tick.
const TIGHT: Duration = Duration::from_micros(500);
/// The interval an idle topic backs off to.
const IDLE: Duration = Duration::from_millis(50);
/// How many polls without change stay at [`TIGHT`] before backing off (data often arrives in
/// bursts a few milliseconds apart).
const TIGHT_POLLS: u32 = 16;

/// Make sure a poller runs for `handle`. If this call started it, the watches are refreshed
/// from the server before it returns, so a new watcher never starts from a stale value.
pub(super) async fn ensure(
    handle: &Arc<TopicHandle>,
    client: &Arc<IggyClient>,
    closed: &CancellationToken,
) -> Result<()> {
    {
        let mut polling = lock(handle)?;
        if *polling {
            return Ok(());
        }
        *polling = true;
    }
    if let Err(err) = refresh(handle, client).await {
        *lock(handle)? = false;
        return Err(err);
    }
    tokio::spawn(run(Arc::clone(handle), Arc::clone(client), closed.clone()));
    Ok(())
}

/// The poller task.
async fn run(handle: Arc<TopicHandle>, client: Arc<IggyClient>, closed: CancellationToken) {
    let mut interval = TIGHT;
    let mut unchanged = 0u32;
    loop {
        tokio::select! {
            () = closed.cancelled() => break,
            () = tokio::time::sleep(interval) => {}
        }
        if !still_watched(&handle) {
            return;
        }
        match refresh(&handle, &client).await {
            Ok(true) => {
                interval = TIGHT;
                unchanged = 0;
            }
            Ok(false) => {
                unchanged = unchanged.saturating_add(1);
                if unchanged > TIGHT_POLLS {
                    interval = (interval * 2).min(IDLE);
                }
            }
            Err(err) => {
                // The client reconnects by itself; keep the watches and try again later.
                tracing::debug!(topic = %handle.name, error = %err.report(), "end-offset poll failed");
                interval = IDLE;
            }
        }
    }
    if let Ok(mut polling) = handle.polling.lock() {
        *polling = false;
    }
}

/// Whether to keep polling; clears the running flag (under its lock, so a new watcher either
/// is seen here or starts a new poller) when nobody watches any more.
fn still_watched(handle: &TopicHandle) -> bool {
    let Ok(mut polling) = handle.polling.lock() else {
        return false;
    };
    if handle.watched() {
        return true;
    }
    *polling = false;
    false
}

/// Ask the server for the topic's end offsets and publish them; returns whether they show
/// records another process wrote.
async fn refresh(handle: &TopicHandle, client: &IggyClient) -> Result<bool> {
    let details = client
        .get_topic(&handle.stream_id, &handle.topic_id)
        .await
        .map_err(|e| {
            map_err(
                e,
                format_args!("reading the end offsets of {}", handle.name),
            )
        })?
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                format!("topic {} disappeared from the server", handle.name),
            )
        })?;
    Ok(handle.observe_news(&details))
}

fn lock(handle: &TopicHandle) -> Result<std::sync::MutexGuard<'_, bool>> {
    handle
        .polling
        .lock()
        .map_err(|_| Error::new(ErrorKind::Internal, "end-offset poller state poisoned"))
}
