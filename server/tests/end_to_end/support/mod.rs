//! What the command's end-to-end tests share: a `serve` child process, running the command,
//! reading its output. (Each test crate uses a part of it.)

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_agentlog");

/// A running `agentlog serve`, killed when dropped.
pub struct Server {
    pub child: Child,
    pub url: String,
    /// Kept open so the server's writes to stdout never fail.
    _stdout: BufReader<ChildStdout>,
}

impl Server {
    /// `agentlog serve --demo --listen 127.0.0.1:0 --log <log>`, once it printed its URL.
    pub fn start(log: &str, cwd: &Path) -> Server {
        let (server, line) = Server::start_with(log, &[], cwd);
        assert!(line.contains("demo worker on"), "{line}");
        server
    }

    /// [`start`](Self::start) with `extra` flags: the server (its `url` set) and its banner.
    pub fn start_with(log: &str, extra: &[&str], cwd: &Path) -> (Server, String) {
        let mut args = vec!["serve", "--demo", "--listen", "127.0.0.1:0", "--log", log];
        args.extend_from_slice(extra);
        let (mut server, line) = Server::spawn(&args, cwd);
        assert!(
            line.starts_with("agentlog serving agent \"demo\" at http://127.0.0.1:"),
            "unexpected first line {line:?}; stderr: {}",
            server.stderr()
        );
        server.url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap()
            .to_owned();
        assert!(
            !server.url.ends_with(":0/"),
            "the real port is printed: {line}"
        );
        (server, line)
    }

    /// `agentlog <args>`, once it printed its first line (returned; `url` is left empty).
    pub fn spawn(args: &[&str], cwd: &Path) -> (Server, String) {
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start agentlog serve");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            let _ = tx.send(line);
            stdout
        });
        let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
        let stdout = reader.join().unwrap();
        let server = Server {
            child,
            url: String::new(),
            _stdout: stdout,
        };
        (server, line)
    }

    pub fn stderr(&mut self) -> String {
        let _ = self.child.kill();
        let mut text = String::new();
        if let Some(stderr) = self.child.stderr.as_mut() {
            let _ = std::io::Read::read_to_string(stderr, &mut text);
        }
        text
    }

    /// SIGTERM, then wait for a clean exit.
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(status.success());
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "serve did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        if !status.success() {
            let stderr = self.stderr();
            panic!("serve exited with {status}; stderr:\n{stderr}");
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn agentlog(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run agentlog")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `args`, asserts exit 0 and a quiet stderr, returns stdout.
pub fn ok(args: &[&str]) -> String {
    let out = agentlog(args);
    assert!(
        out.status.success(),
        "agentlog {args:?} failed: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Runs `args`, asserts exit 1 with exactly one `error: …` line on stderr, returns it.
pub fn fails(args: &[&str]) -> String {
    let out = agentlog(args);
    assert_eq!(out.status.code(), Some(1), "agentlog {args:?}: {out:?}");
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    assert!(stderr.starts_with("error: "), "{stderr:?}");
    assert!(!stderr.contains("panicked"), "{stderr:?}");
    stderr
}

/// The value of the `task` line.
pub fn task_id(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("task "))
        .map(|id| id.trim().to_owned())
        .unwrap_or_else(|| panic!("no task line in {stdout:?}"))
}

pub fn field<'a>(stdout: &'a str, label: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(label))
        .filter(|rest| rest.starts_with(' '))
        .map(str::trim)
        .collect()
}

/// The body of `GET url` (plain `http://host:port/path`), over a bare connection.
pub fn http_get(url: &str) -> String {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    reply
}

/// `agentlog tail --log <log> --agent demo --follow`, with its stdout and stderr lines.
pub fn tail_follow(log: &str) -> (Child, mpsc::Receiver<String>, mpsc::Receiver<String>) {
    let mut child = Command::new(BIN)
        .args(["tail", "--log", log, "--agent", "demo", "--follow"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = line_channel(child.stdout.take().unwrap());
    let stderr = line_channel(child.stderr.take().unwrap());
    (child, stdout, stderr)
}

/// The lines up to and including the one with `task`'s terminal record.
pub fn lines_until_terminal(lines: &mpsc::Receiver<String>, task: &str) -> Vec<String> {
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|l: &String| l.contains(task) && l.contains("terminal"))
    {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("tail --follow showed no terminal of {task}: {seen:?}"));
        seen.push(line);
    }
    seen
}

/// The lines a child writes to `pipe`, as they come.
pub fn line_channel(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}
