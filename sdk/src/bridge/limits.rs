//! [`Limits`]: how much waiting a bridge holds for its callers at once. A blocking send holds a
//! request open until its task settles, and a stream holds one until its task ends, so a
//! caller could open them without bound; past a limit the call is refused before anything is
//! written, with a retryable [`ErrorKind::Overloaded`].

use std::sync::{Arc, Mutex};

use foldhash::HashMap;
use futures::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::stream::TaskStream;
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};

/// The bounds ([`BridgeConfig`](super::BridgeConfig) sets them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitsConfig {
    /// Blocking `SendMessage` calls waiting at once. Default 1,024.
    pub blocking_sends: usize,
    /// Streams open at once (`SendStreamingMessage`, `SubscribeToTask`), over all callers.
    /// Default 4,096.
    pub streams: usize,
    /// Streams open at once for one caller (principal and tenant). Default 64.
    pub streams_per_caller: usize,
}

impl LimitsConfig {
    /// The defaults (each field says its own).
    pub fn new() -> Self {
        Self::default()
    }
}

setters!(LimitsConfig {
    blocking_sends: usize,
    streams: usize,
    streams_per_caller: usize,
});

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            blocking_sends: 1024,
            streams: 4096,
            streams_per_caller: 64,
        }
    }
}

/// Streams open per caller.
type PerCaller = Arc<Mutex<HashMap<Caller, usize>>>;

/// The bridge's counters of what is open.
#[derive(Debug)]
pub(super) struct Limits {
    config: LimitsConfig,
    blocking: Arc<Semaphore>,
    streams: Arc<Semaphore>,
    per_caller: PerCaller,
}

/// A place taken; given back when dropped.
#[derive(Debug)]
pub(super) struct Permit {
    _place: OwnedSemaphorePermit,
    caller: Option<(Caller, PerCaller)>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some((caller, per_caller)) = self.caller.take() {
            let mut open = per_caller.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(count) = open.get_mut(&caller) {
                *count -= 1;
                if *count == 0 {
                    open.remove(&caller);
                }
            }
        }
    }
}

fn overloaded(what: String) -> Error {
    Error::new(ErrorKind::Overloaded, what)
}

impl Limits {
    pub(super) fn new(config: LimitsConfig) -> Self {
        Self {
            config,
            blocking: Arc::new(Semaphore::new(config.blocking_sends)),
            streams: Arc::new(Semaphore::new(config.streams)),
            per_caller: Arc::default(),
        }
    }

    /// A place for one blocking send, or `Overloaded`.
    pub(super) fn blocking_send(&self) -> Result<Permit> {
        let place = Arc::clone(&self.blocking).try_acquire_owned().map_err(|_| {
            overloaded(format!(
                "{} blocking sends are waiting already; retry later, or send with returnImmediately",
                self.config.blocking_sends
            ))
        })?;
        Ok(Permit {
            _place: place,
            caller: None,
        })
    }

    /// A place for one stream of `caller`, or `Overloaded`.
    pub(super) fn stream(&self, caller: &Caller) -> Result<Permit> {
        let place = Arc::clone(&self.streams).try_acquire_owned().map_err(|_| {
            overloaded(format!(
                "{} streams are open already; retry later",
                self.config.streams
            ))
        })?;
        let mut open = self.per_caller.lock().unwrap_or_else(|e| e.into_inner());
        if open.get(caller).copied().unwrap_or(0) >= self.config.streams_per_caller {
            return Err(overloaded(format!(
                "this caller has {} streams open already; close one or retry later",
                self.config.streams_per_caller
            )));
        }
        match open.get_mut(caller) {
            Some(count) => *count += 1,
            None => {
                open.insert(caller.clone(), 1);
            }
        }
        Ok(Permit {
            _place: place,
            caller: Some((caller.clone(), Arc::clone(&self.per_caller))),
        })
    }
}

/// `stream`, holding `permit` until it ends or is dropped.
pub(super) fn holding(stream: TaskStream, permit: Permit) -> TaskStream {
    Box::pin(stream.map(move |item| {
        let _held = &permit;
        item
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use agentlog_wire::a2a::SubscribeToTaskRequest;

    use super::*;
    use crate::bridge::test_support::{records_on, send_request as send};
    use crate::bridge::{Bridge, BridgeConfig};

    #[tokio::test]
    async fn a_bridge_refuses_past_its_limits_and_writes_nothing() {
        let log = crate::log::open("memory://").await.unwrap();
        let mut config = BridgeConfig::new("l");
        config.limits = LimitsConfig {
            blocking_sends: 1,
            streams: 8,
            streams_per_caller: 1,
        };
        config.blocking_timeout = Duration::from_secs(30);
        let bridge = Bridge::open(log.clone(), config).await.unwrap();
        let events = bridge.config().topics.events.clone();
        let written = || records_on(&log, &events);
        let caller = Caller::principal("p");
        // No worker: the first blocking send waits.
        let waiting = {
            let (bridge, caller) = (bridge.clone(), caller.clone());
            tokio::spawn(async move { bridge.send_message(&caller, send("m-1", false)).await })
        };
        while written().await == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let refused = bridge
            .send_message(&caller, send("m-2", false))
            .await
            .unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Overloaded, "{refused}");
        assert_eq!(written().await, 1, "the refused send wrote nothing");
        // returnImmediately waits for nothing: not limited.
        let task = match bridge
            .send_message(&caller, send("m-3", true))
            .await
            .unwrap()
        {
            agentlog_wire::a2a::SendMessageResponse::Task(task) => task,
            other => panic!("{other:?}"),
        };
        waiting.abort();
        let _ = waiting.await;
        // The aborted wait gave its place back.
        tokio::time::timeout(
            Duration::from_millis(200),
            bridge.send_message(&caller, send("m-4", false)),
        )
        .await
        .expect_err("a blocking send waits again, not refused");

        // Streams: one per caller here.
        let subscribe = || SubscribeToTaskRequest {
            tenant: None,
            id: task.id.clone(),
        };
        let first = bridge
            .subscribe_to_task(&caller, subscribe(), None)
            .await
            .unwrap();
        let second = bridge.subscribe_to_task(&caller, subscribe(), None).await;
        assert_eq!(second.err().map(|e| e.kind()), Some(ErrorKind::Overloaded));
        let other = Caller::principal("q");
        // Another caller has its own count (and finds no such task of theirs).
        let theirs = bridge.subscribe_to_task(&other, subscribe(), None).await;
        assert_eq!(
            theirs.err().map(|e| e.kind()),
            Some(ErrorKind::TaskNotFound)
        );
        drop(first);
        assert!(
            bridge
                .subscribe_to_task(&caller, subscribe(), None)
                .await
                .is_ok()
        );
    }

    #[test]
    fn places_are_bounded_and_given_back() {
        let limits = Limits::new(LimitsConfig {
            blocking_sends: 1,
            streams: 3,
            streams_per_caller: 2,
        });
        let held = limits.blocking_send().unwrap();
        let refused = limits.blocking_send().unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Overloaded);
        assert!(refused.is_retryable());
        drop(held);
        assert!(limits.blocking_send().is_ok());

        let (alice, bob) = (Caller::principal("alice"), Caller::principal("bob"));
        let a1 = limits.stream(&alice).unwrap();
        let _a2 = limits.stream(&alice).unwrap();
        assert!(limits.stream(&alice).is_err(), "alice's own limit");
        let _b1 = limits.stream(&bob).unwrap();
        assert!(limits.stream(&bob).is_err(), "the limit over all callers");
        drop(a1);
        let _a3 = limits.stream(&alice).unwrap();
        assert_eq!(limits.per_caller.lock().unwrap().get(&alice), Some(&2));
    }
}
