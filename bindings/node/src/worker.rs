//! `Worker`: an agent's worker whose handler is a JS function, and the one queue per worker
//! into JS that carries its traffic.
//!
//! Crossing into JS is the cost that matters, so a worker makes few crossings: everything
//! bound for JS (a task to start, a context call that finished, a cancellation) goes into
//! one queue, and one call of one threadsafe function drains all that has gathered, however
//! much it is (under load, one crossing carries many events). The context's calls are sync
//! N-API calls that spawn the SDK call and return; their results come back through the same
//! queue, so no call needs a Promise of its own from Rust (each of those is a threadsafe
//! function of its own). The handler's result comes back by a sync call, `_settle`.
//!
//! The threadsafe function is weak: a worker does not keep Node's event loop alive, so a
//! script that ends without `close()` exits (a process that must stay up awaits
//! `worker.closed`, a pending Promise, which does).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use agentlog::worker::{
    Handler, HandlerError, TaskContext as SdkContext, Worker as SdkWorker, WorkerConfig,
};
use napi::bindgen_prelude::{FnArgs, Function, PromiseRaw};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::bridge::{Bridge, millis};
use crate::context::TaskContext;
use crate::error::OrThrow;
use crate::log::Log;

/// A context call's result, as it reaches JS: `error` (an `AgentlogError` reason) or `value`.
#[napi(object)]
#[derive(Debug)]
pub struct Completion {
    /// The call's id (chosen by index.js).
    pub id: u32,
    /// The error, if it failed.
    pub error: Option<String>,
    /// What it returned (a message for `followUp`), if anything.
    #[napi(ts_type = "Message | null")]
    pub value: Option<Value>,
}

/// What waits to be carried into JS.
#[derive(Default)]
struct Pending {
    /// Whether a call of the threadsafe function is on its way (so pushing needs none).
    scheduled: bool,
    tasks: Vec<TaskContext>,
    done: Vec<Completion>,
    cancelled: Vec<u32>,
}

type Batch = FnArgs<(Vec<TaskContext>, Vec<Completion>, Vec<u32>)>;
type Dispatch = ThreadsafeFunction<(), (), Batch, Status, false, true>;

/// One worker's way into JS: the queue and the threadsafe function that drains it.
pub struct Dispatcher {
    pending: Arc<Mutex<Pending>>,
    call: Dispatch,
    handles: AtomicU32,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher").finish_non_exhaustive()
    }
}

impl Dispatcher {
    fn new(function: &Function<'_, (), ()>) -> napi::Result<Self> {
        let pending = Arc::new(Mutex::new(Pending::default()));
        let drain = pending.clone();
        let call = function
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .callee_handled::<false>()
            .build_callback(move |_| {
                let mut p = drain.lock().unwrap_or_else(|e| e.into_inner());
                p.scheduled = false;
                let batch = (
                    std::mem::take(&mut p.tasks),
                    std::mem::take(&mut p.done),
                    std::mem::take(&mut p.cancelled),
                );
                Ok(FnArgs::from(batch))
            })?;
        Ok(Self {
            pending,
            call,
            handles: AtomicU32::new(1),
        })
    }

    /// Add to the queue; call into JS unless a call is on its way already.
    fn push(&self, add: impl FnOnce(&mut Pending)) {
        let call = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            add(&mut p);
            !std::mem::replace(&mut p.scheduled, true)
        };
        if call {
            // Fails only once Node is tearing the environment down: nothing to deliver to.
            let _ = self.call.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }

    /// A context call finished.
    pub fn done(&self, done: Completion) {
        self.push(|p| p.done.push(done));
    }
}

/// The SDK handler that hands each task to JS and waits for `_settle`.
struct JsHandler {
    dispatcher: Arc<Dispatcher>,
}

#[async_trait::async_trait]
impl Handler for JsHandler {
    async fn handle(&self, task: SdkContext) -> Result<(), HandlerError> {
        let (settle, settled) = oneshot::channel();
        let handle = self.dispatcher.handles.fetch_add(1, Ordering::Relaxed);
        let cancellation = task.cancellation().clone();
        let context = TaskContext::new(task, handle, settle, self.dispatcher.clone());
        self.dispatcher.push(|p| p.tasks.push(context));
        tokio::select! {
            outcome = settled => match outcome {
                Ok(None) => Ok(()),
                Ok(Some(failure)) => Err(failure.into()),
                Err(_) => Err("the JS handler's TaskContext went away before the handler settled".into()),
            },
            // The task was canceled (or the turn taken over, or shutdown gave up waiting):
            // the log says how it ended; the handler hears it through its signal.
            () = cancellation.cancelled() => {
                self.dispatcher.push(|p| p.cancelled.push(handle));
                Ok(())
            }
        }
    }
}

/// How a worker runs.
#[napi(object)]
#[derive(Debug)]
pub struct WorkerOptions {
    /// The most handlers running at once. Default 64.
    pub concurrency: Option<u32>,
    /// How long `close()` lets running handlers finish before it cancels them and releases
    /// their turns to other workers. Default 10 000 ms.
    pub shutdown_timeout_ms: Option<f64>,
}

/// Workers running, by id: held here, not by the JS object, so that a worker whose JS object
/// is garbage collected keeps running until `close()`.
static RUNNING: LazyLock<Mutex<HashMap<u64, SdkWorker>>> = LazyLock::new(Default::default);
static IDS: AtomicU64 = AtomicU64::new(1);

/// A running worker (from `Worker.start`).
#[napi]
#[derive(Debug)]
pub struct Worker {
    id: u64,
    agent: String,
    closed: CancellationToken,
}

/// Start a worker for `agent` over `log` whose turns `dispatch` (index.js's dispatcher)
/// runs; with `bridge`, it shares that bridge's view of the log (no second replay).
#[napi(
    ts_args_type = "log: Log, agent: string, dispatch: (tasks: TaskContext[], done: Completion[], cancelled: number[]) => void, options?: WorkerOptions | null, bridge?: Bridge | null",
    ts_return_type = "Promise<Worker>"
)]
pub fn start_worker<'env>(
    env: &'env Env,
    log: &Log,
    agent: String,
    dispatch: Function<'_, (), ()>,
    options: Option<WorkerOptions>,
    bridge: Option<&Bridge>,
) -> napi::Result<PromiseRaw<'env, Worker>> {
    let mut config = WorkerConfig::new(&agent);
    if let Some(options) = options {
        if let Some(n) = options.concurrency {
            config.concurrency = usize::try_from(n.max(1)).unwrap_or(64);
        }
        if let Some(timeout) = millis(options.shutdown_timeout_ms, "shutdownTimeoutMs")? {
            config.shutdown_timeout = timeout;
        }
    }
    config.view = bridge.map(|b| b.inner.view().clone());
    let handler = JsHandler {
        dispatcher: Arc::new(Dispatcher::new(&dispatch)?),
    };
    let log = log.inner.clone();
    env.spawn_future(async move {
        let worker = SdkWorker::start(log, config, handler).await.or_throw()?;
        let id = IDS.fetch_add(1, Ordering::Relaxed);
        RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, worker);
        Ok(Worker {
            id,
            agent,
            closed: CancellationToken::new(),
        })
    })
}

#[napi]
impl Worker {
    /// The agent it works for.
    #[napi(getter)]
    pub fn agent(&self) -> String {
        self.agent.clone()
    }

    /// Whether it still takes work (`close()` not called).
    #[napi(getter)]
    pub fn running(&self) -> bool {
        RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&self.id)
    }

    /// Stop taking work, let running handlers finish (up to `shutdownTimeoutMs`, then
    /// cancel them and release their turns to other workers), and leave the worker group.
    /// Closing twice is a no-op.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        let worker = RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
        let result = match worker {
            Some(worker) => worker.shutdown().await.or_throw(),
            None => Ok(()),
        };
        self.closed.cancel();
        result
    }

    /// Resolves once `close()` has finished. Pending, it keeps the process alive: a worker
    /// process awaits it.
    #[napi(js_name = "_waitClosed")]
    pub async fn wait_closed(&self) {
        self.closed.cancelled().await;
    }
}
