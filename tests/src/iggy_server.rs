//! A real `iggy-server` for tests and benchmarks: found on the machine, started on free
//! loopback ports in a temporary directory, restarted or killed on demand, stopped on drop.
//!
//! The binary comes from `AGENTLOG_IGGY_SERVER` or `iggy-server` on `PATH`. Without one,
//! [`IggyServer::start`] prints [`SKIP_MESSAGE`] and returns `None`, so `cargo test` passes on
//! machines without Iggy.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

/// The environment variable naming the server binary.
pub const SERVER_ENV: &str = "AGENTLOG_IGGY_SERVER";

/// What a test prints when it cannot run for lack of a server binary.
pub const SKIP_MESSAGE: &str = "SKIPPED: iggy tests need an iggy-server binary (set AGENTLOG_IGGY_SERVER or put iggy-server on PATH)";

/// How long a start may take before the harness gives up (the TCP port normally opens within
/// ~150 ms).
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a SIGTERM may take before the harness sends SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The loopback ports of every listener the server opens.
#[derive(Debug, Clone, Copy)]
struct Ports {
    tcp: u16,
    http: u16,
    quic: u16,
    websocket: u16,
}

/// Where ports are picked when the kernel's ephemeral range cannot be read.
const EPHEMERAL_START: u16 = 32768;

/// The lowest port picked: above the well-known and most registered services' ports.
const LOWEST_PORT: u16 = 10000;

impl Ports {
    /// Four free ports below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`):
    /// between this pick and the server's binds, a port bound as port 0 (the server's own
    /// single-node replica listener binds one) or an outgoing connection's source port never
    /// lands on one of them, as it could on ports the kernel handed out from that range. The
    /// sockets are held until all are picked, so none repeats.
    fn pick() -> std::io::Result<Self> {
        let below = ephemeral_start().max(LOWEST_PORT + 1024);
        let mut held_tcp = Vec::new();
        let mut quic = None;
        for _ in 0..10_000 {
            if held_tcp.len() == 3 && quic.is_some() {
                break;
            }
            let port = rand::random_range(LOWEST_PORT..below);
            if held_tcp.len() < 3 {
                if let Ok(socket) = TcpListener::bind(("127.0.0.1", port)) {
                    held_tcp.push(socket);
                }
            } else if let Ok(socket) = UdpSocket::bind(("127.0.0.1", port)) {
                quic = Some(socket);
            }
        }
        let (Some(quic), [tcp, http, websocket]) = (quic, held_tcp.as_slice()) else {
            return Err(std::io::Error::other(format!(
                "no four free loopback ports in {LOWEST_PORT}..{below}"
            )));
        };
        Ok(Self {
            tcp: tcp.local_addr()?.port(),
            http: http.local_addr()?.port(),
            quic: quic.local_addr()?.port(),
            websocket: websocket.local_addr()?.port(),
        })
    }
}

/// The first port of the kernel's ephemeral range.
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(EPHEMERAL_START)
}

/// A running (or stopped, between restarts) `iggy-server` owned by a test.
#[derive(Debug)]
pub struct IggyServer {
    binary: PathBuf,
    dir: TempDir,
    ports: Ports,
    env: Vec<(String, String)>,
    child: Option<Child>,
}

impl IggyServer {
    /// The server binary: `$AGENTLOG_IGGY_SERVER`, else `iggy-server` on `PATH`.
    pub fn binary() -> Option<PathBuf> {
        if let Some(path) = std::env::var_os(SERVER_ENV).filter(|p| !p.is_empty()) {
            let path = PathBuf::from(path);
            return path.is_file().then_some(path);
        }
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join("iggy-server"))
            .find(|candidate| candidate.is_file())
    }

    /// Start a server with the harness defaults, or print [`SKIP_MESSAGE`] and return `None`
    /// when there is no binary.
    pub async fn start() -> Option<Self> {
        Self::start_with(&[]).await
    }

    /// Like [`start`](Self::start), with extra `IGGY_*` settings (they win over the
    /// defaults).
    pub async fn start_with(extra_env: &[(&str, &str)]) -> Option<Self> {
        let Some(binary) = Self::binary() else {
            println!("{SKIP_MESSAGE}");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("agentlog-iggy-")
            .tempdir()
            .expect("create a temporary directory for iggy-server");
        let ports = Ports::pick().expect("pick free loopback ports");
        let mut env = vec![
            (
                "IGGY_SYSTEM_PATH".to_owned(),
                dir.path().join("data").display().to_string(),
            ),
            // A member that dies holding partitions releases them after 3 s, not 30 s.
            (
                "IGGY_CONSUMER_GROUP_REBALANCING_TIMEOUT".to_owned(),
                "3s".to_owned(),
            ),
            // Several servers share this machine's cores with the tests themselves.
            (
                "IGGY_SYSTEM_SHARDING_PIN_CORES".to_owned(),
                "false".to_owned(),
            ),
            (
                "IGGY_SYSTEM_MEMORY_POOL_SIZE".to_owned(),
                "512 MiB".to_owned(),
            ),
        ];
        for (key, value) in extra_env {
            env.retain(|(k, _)| k != key);
            env.push(((*key).to_owned(), (*value).to_owned()));
        }
        let mut server = Self {
            binary,
            dir,
            ports,
            env,
            child: None,
        };
        // Another test's server may take a port between this pick and the bind (they are
        // picked apart from the kernel's, not from each other's): pick again then.
        for attempt in 1.. {
            match server.try_launch().await {
                Ok(()) => break,
                Err(error) if attempt < 3 && error.contains("CannotBindToSocket") => {
                    server.ports = Ports::pick().expect("pick free loopback ports");
                }
                Err(error) => panic!("{error}"),
            }
        }
        Some(server)
    }

    /// The listeners' `IGGY_*` addresses.
    fn address_env(&self) -> [(String, String); 4] {
        let at = |port: u16| format!("127.0.0.1:{port}");
        let ports = self.ports;
        [
            ("IGGY_TCP_ADDRESS".to_owned(), at(ports.tcp)),
            ("IGGY_HTTP_ADDRESS".to_owned(), at(ports.http)),
            ("IGGY_QUIC_ADDRESS".to_owned(), at(ports.quic)),
            ("IGGY_WEBSOCKET_ADDRESS".to_owned(), at(ports.websocket)),
        ]
    }

    /// The log URL of this server (`iggy://iggy:iggy@127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("iggy://iggy:iggy@{}", self.address())
    }

    /// `host:port` of the TCP listener.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.ports.tcp)
    }

    /// The server's working directory (its data lives in `data/` below it).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Whether the server process is running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Stop gracefully (SIGTERM) and start again on the same directory and ports.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.launch().await;
    }

    /// Kill without warning (SIGKILL) and start again on the same directory and ports.
    pub async fn kill9_restart(&mut self) {
        self.kill9().await;
        self.launch().await;
    }

    /// Stop gracefully (SIGTERM; SIGKILL if it takes longer than 10 s).
    pub async fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = tokio::time::Instant::now() + STOP_TIMEOUT;
        while matches!(child.try_wait(), Ok(None)) {
            if tokio::time::Instant::now() >= deadline {
                let _ = child.kill();
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let _ = child.wait();
    }

    /// Kill without warning (SIGKILL).
    pub async fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Start the server (again) and wait until its TCP port accepts connections.
    pub async fn launch(&mut self) {
        if let Err(error) = self.try_launch().await {
            panic!("{error}");
        }
    }

    /// [`launch`](Self::launch), the failure to start given back.
    async fn try_launch(&mut self) -> Result<(), String> {
        assert!(self.child.is_none(), "iggy-server is already running");
        let log = self.log_file();
        let mut command = Command::new(&self.binary);
        command
            .arg("--with-default-root-credentials")
            .current_dir(self.dir.path())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(self.address_env())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log file handle"))
            .stderr(log);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", self.binary.display()));
        self.child = Some(child);
        self.wait_ready().await
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        loop {
            if tokio::net::TcpStream::connect(self.address()).await.is_ok() {
                return Ok(());
            }
            if !self.is_running() {
                self.child = None;
                return Err(format!(
                    "iggy-server exited during start-up; its output ends with:\n{}",
                    self.log_tail()
                ));
            }
            if tokio::time::Instant::now() >= deadline {
                if let Some(mut child) = self.child.take() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                return Err(format!(
                    "iggy-server did not open {} within {READY_TIMEOUT:?}; its output ends with:\n{}",
                    self.address(),
                    self.log_tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    fn log_file(&self) -> File {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("open the server log file")
    }

    /// The last few kilobytes of the server's output (all starts of this server).
    pub fn log_tail(&self) -> String {
        const TAIL: u64 = 4096;
        let Ok(mut file) = File::open(self.log_path()) else {
            return String::from("(no output)");
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(TAIL)));
        let mut tail = Vec::new();
        let _ = file.read_to_end(&mut tail);
        String::from_utf8_lossy(&tail).into_owned()
    }
}

impl Drop for IggyServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_picked_apart_and_below_the_ephemeral_range() {
        let below = ephemeral_start().max(LOWEST_PORT + 1024);
        for _ in 0..50 {
            let ports = Ports::pick().expect("ports");
            let tcp = [ports.tcp, ports.http, ports.websocket];
            for port in tcp.iter().chain([&ports.quic]) {
                assert!((LOWEST_PORT..below).contains(port), "{ports:?}");
            }
            assert!(
                tcp[0] != tcp[1] && tcp[1] != tcp[2] && tcp[0] != tcp[2],
                "{ports:?}"
            );
        }
    }
}
