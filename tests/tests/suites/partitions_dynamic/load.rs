//! The load a plain balancer puts on bridges sharing an agent's partitions (round robin, a
//! send through one and a read through the next), and the check that every task it had
//! acknowledged reads back through every bridge.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub(crate) async fn rpc(
    client: &reqwest::Client,
    url: &str,
    method: &str,
    params: Value,
) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer = client
        .post(format!("{url}/"))
        .json(&body)
        .send()
        .await
        .expect("an answer");
    let status = answer.status().as_u16();
    (status, answer.json().await.expect("a JSON body"))
}

pub(crate) fn send_params(message: &str) -> Value {
    json!({
        "message": {"messageId": message, "role": "ROLE_USER", "parts": [{"text": "hello"}]},
        "configuration": {"returnImmediately": true},
    })
}

/// A plain balancer's round robin over `rotation`: each round sends a new message through
/// one bridge and reads its task back through the next, recording every acknowledged task
/// and every answer that is not a success.
pub(crate) struct Load {
    pub(crate) rotation: Arc<std::sync::Mutex<Vec<String>>>,
    done: watch::Receiver<usize>,
    stop: Arc<AtomicBool>,
    task: JoinHandle<(Vec<String>, Vec<String>)>,
}

impl Load {
    pub(crate) fn start(urls: Vec<String>) -> Self {
        let rotation = Arc::new(std::sync::Mutex::new(urls));
        let (count, done) = watch::channel(0usize);
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn({
            let (rotation, stop) = (Arc::clone(&rotation), Arc::clone(&stop));
            async move {
                let client = reqwest::Client::new();
                let (mut acknowledged, mut errors) = (Vec::new(), Vec::new());
                for k in 0usize.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let urls = rotation.lock().expect("rotation").clone();
                    let (via, read) = (&urls[k % urls.len()], &urls[(k + 1) % urls.len()]);
                    let (status, body) = rpc(
                        &client,
                        via,
                        "SendMessage",
                        send_params(&format!("load-{k}")),
                    )
                    .await;
                    let Some(task) = body["result"]["task"]["id"].as_str() else {
                        errors.push(format!("send {k} through {via}: {status} {body}"));
                        count.send_modify(|n| *n += 1);
                        continue;
                    };
                    acknowledged.push(task.to_owned());
                    let (status, body) = rpc(&client, read, "GetTask", json!({"id": task})).await;
                    if status != 200 || body["result"]["id"] != task {
                        errors.push(format!("read {k} through {read}: {status} {body}"));
                    }
                    count.send_modify(|n| *n += 1);
                }
                (acknowledged, errors)
            }
        });
        Self {
            rotation,
            done,
            stop,
            task,
        }
    }

    /// Wait until the load made `n` more rounds.
    pub(crate) async fn rounds(&mut self, n: usize) {
        let from = *self.done.borrow_and_update();
        tokio::time::timeout(
            Duration::from_secs(120),
            self.done.wait_for(|done| *done >= from + n),
        )
        .await
        .expect("the load stalled")
        .expect("the load stopped");
    }

    pub(crate) async fn finish(self) -> (Vec<String>, Vec<String>) {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.expect("load")
    }
}

/// Every task of `acknowledged` through every bridge at `urls`: found, with no error.
pub(crate) async fn all_readable(acknowledged: &[String], urls: &[&str]) {
    let client = reqwest::Client::new();
    for task in acknowledged {
        for url in urls {
            let (status, body) = rpc(&client, url, "GetTask", json!({"id": task})).await;
            assert_eq!(
                (status, &body["result"]["id"]),
                (200, &json!(task)),
                "{task} through {url}: {body}"
            );
        }
    }
    let (status, listed) = rpc(&client, urls[0], "ListTasks", json!({"pageSize": 1})).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        listed["result"]["totalSize"],
        acknowledged.len(),
        "{listed}"
    );
}
