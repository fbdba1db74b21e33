//! Under `fsync=always` the writer thread acknowledges a drain's appends before it wakes the
//! partition's watchers, so an appender applies its own records to its view before a
//! follower, woken first, would read them back.
#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::time::{Duration, Instant};

use super::*;

type Append = Pin<Box<dyn Future<Output = Result<Appended>> + Send>>;

/// The watcher's waker: called by the writer thread as it wakes the partition's watchers, it
/// polls the append once and notes whether the append was acknowledged by then.
struct AckedBeforeWake {
    append: Mutex<Append>,
    acked: Mutex<Option<bool>>,
}

impl Wake for AckedBeforeWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let ready = self
            .append
            .lock()
            .unwrap()
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_ready();
        self.acked.lock().unwrap().get_or_insert(ready);
    }
}

#[test]
fn a_drains_watchers_wake_after_its_appends_are_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let options = EmbeddedOptions::default().fsync(FsyncPolicy::Always);
    let log = Arc::new(EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(log.ensure_topic(&topic(), 1)).unwrap();
    let mut end = runtime.block_on(log.watch_end(&topic(), 0)).unwrap();
    let appender = Arc::clone(&log);
    let append: Append =
        Box::pin(async move { appender.append(&topic(), b"k", vec![payload(0)]).await });
    let check = Arc::new(AckedBeforeWake {
        append: Mutex::new(append),
        acked: Mutex::new(None),
    });
    let waker = Waker::from(Arc::clone(&check));
    let mut changed = Box::pin(end.changed());
    assert!(
        changed
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    {
        // Hand the batch to the writer thread; its wake of the watcher waits for this lock.
        let mut append = check.append.lock().unwrap();
        let first = append
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        assert!(
            first.is_pending(),
            "an fsync=always append waits for the writer"
        );
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let acked = loop {
        if let Some(acked) = *check.acked.lock().unwrap() {
            break acked;
        }
        assert!(Instant::now() < deadline, "the watcher was never woken");
        std::thread::sleep(Duration::from_millis(1));
    };
    assert!(
        acked,
        "the watcher was woken before the append was acknowledged"
    );
    runtime.block_on(log.close()).unwrap();
}
