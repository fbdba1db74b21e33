//! A member of the bench: one bridge (and, when asked, its router on a loopback listener) on
//! an OS thread of its own, with a current-thread runtime, so that everything the bridge does
//! (its followers' applies, its checkpoints, its router's requests and forwards) runs on that
//! thread, and the thread's own CPU time (`/proc/self/task/<tid>/schedstat`, in ns) and the
//! heap its thread allocated and still holds are that bridge's alone, whatever else the
//! process and the machine run meanwhile.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::time::Duration;

use agentlog::bridge::{Bridge, BridgeConfig};
use agentlog::http::{Forwarding, HttpConfig, router, serve};
use agentlog::log::Log;
use agentlog::security::owners::Owners;
use agentlog::security::peers::{Members, PeerKey};
use mimalloc::MiMalloc;
use tokio::sync::oneshot;

/// Counts, per thread, the heap bytes that thread allocated minus those it freed, over
/// mimalloc (the allocator the `agentlog` binary ships with). A member's view is built and
/// dropped on the member's thread, so that thread's count is the view's heap; the log's
/// records are allocated by the writer's threads and are not in it.
pub struct PerThread;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn count(bytes: i64) {
    // `try_with`: a thread being torn down may still free.
    let _ = LIVE.try_with(|live| live.set(live.get() + bytes));
}

#[allow(unsafe_code)]
unsafe impl GlobalAlloc for PerThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { MiMalloc.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size() as i64);
        }
        ptr
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as i64));
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { MiMalloc.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        moved
    }
}

/// This thread's live heap bytes as [`PerThread`] counts them.
pub fn thread_heap() -> i64 {
    LIVE.with(Cell::get)
}

/// A thread's time on a CPU and its time runnable but waiting for one, from
/// `/proc/self/task/<tid>/schedstat` (ns).
#[derive(Debug, Clone, Copy, Default)]
pub struct Sched {
    pub cpu_ns: u64,
    pub wait_ns: u64,
}

pub fn sched(tid: u32) -> Sched {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).unwrap();
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().unwrap());
    Sched {
        cpu_ns: fields.next().unwrap(),
        wait_ns: fields.next().unwrap(),
    }
}

impl std::ops::Sub for Sched {
    type Output = Sched;
    fn sub(self, before: Sched) -> Sched {
        Sched {
            cpu_ns: self.cpu_ns - before.cpu_ns,
            wait_ns: self.wait_ns - before.wait_ns,
        }
    }
}

/// The calling thread's id (`/proc/thread-self` links to `<pid>/task/<tid>`).
pub fn current_tid() -> u32 {
    let link = std::fs::read_link("/proc/thread-self").unwrap();
    link.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

/// What a member serves besides its bridge.
pub struct Serving {
    pub listener: std::net::TcpListener,
    pub members: Members,
    pub key: PeerKey,
}

/// One member on its own thread.
pub struct Member {
    pub bridge: Bridge,
    pub handle: tokio::runtime::Handle,
    pub tid: u32,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Member {
    /// Open a bridge with `config` over `log` on a new thread (and serve it when `serving`).
    pub async fn start(log: Log, config: BridgeConfig, serving: Option<Serving>) -> Member {
        let (ready, started) = oneshot::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let bridge = Bridge::open(log, config).await.unwrap();
                let _ = ready.send((
                    bridge.clone(),
                    tokio::runtime::Handle::current(),
                    current_tid(),
                ));
                match serving {
                    None => {
                        let _ = stopped.await;
                    }
                    Some(serving) => {
                        serving.listener.set_nonblocking(true).unwrap();
                        let listener = tokio::net::TcpListener::from_std(serving.listener).unwrap();
                        let map = serving.members.owner_map(bridge.view().partitions()).unwrap();
                        let forwarding = Forwarding::new(Owners::new(map), serving.key);
                        let app = router(bridge, HttpConfig::new().forward(forwarding));
                        // Stopping drops the server with its connections: what a killed
                        // process's peers see (refused connections).
                        tokio::select! {
                            _ = stopped => {}
                            served = serve(listener, app, std::future::pending()) => served.unwrap(),
                        }
                    }
                }
            });
        });
        let (bridge, handle, tid) = started.await.unwrap();
        Member {
            bridge,
            handle,
            tid,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn sched(&self) -> Sched {
        sched(self.tid)
    }

    /// The live heap bytes of the member's thread.
    pub async fn heap(&self) -> i64 {
        self.handle.spawn(async { thread_heap() }).await.unwrap()
    }

    /// Run `work` on the member's thread.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> T {
        self.handle.spawn(work).await.unwrap()
    }

    /// Stop the member: its thread's runtime, with every task of its bridge and server, ends.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let thread = self.thread.take();
        drop(self.bridge);
        if let Some(thread) = thread {
            tokio::task::spawn_blocking(move || thread.join().unwrap())
                .await
                .unwrap();
        }
    }
}

/// Wait (polling every millisecond: the bench's member threads stay free) until `ready`.
pub async fn until(mut ready: impl FnMut() -> bool) {
    while !ready() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
