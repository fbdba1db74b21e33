//! The log conformance suite on the embedded backend: `memory://` and `file://` (tempdir).

use agentlog::log::{Log, open};
use agentlog_integration::conformance::{Subject, run_all};

struct Memory;

#[async_trait::async_trait]
impl Subject for Memory {
    fn name(&self) -> &str {
        "memory"
    }
    async fn open(&self) -> Log {
        open("memory://").await.expect("open memory://")
    }
    fn can_reopen(&self) -> bool {
        false
    }
}

struct Dir {
    dir: tempfile::TempDir,
}

#[async_trait::async_trait]
impl Subject for Dir {
    fn name(&self) -> &str {
        "file"
    }
    async fn open(&self) -> Log {
        let url = format!("file://{}", self.dir.path().display());
        open(&url).await.expect("open file://")
    }
    fn can_reopen(&self) -> bool {
        true
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_memory_conforms() {
    run_all(&Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_file_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    run_all(&Dir { dir }).await;
}
