//! The `agentlog` command end to end: a `serve --demo` child process, and the client
//! subcommands run against it as a person would.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_agentlog");

/// A running `agentlog serve`, killed when dropped.
struct Server {
    child: Child,
    url: String,
    /// Kept open so the server's writes to stdout never fail.
    _stdout: BufReader<ChildStdout>,
}

impl Server {
    /// `agentlog serve --demo --listen 127.0.0.1:0 --log <log>`, once it printed its URL.
    fn start(log: &str, cwd: &Path) -> Server {
        let args = ["serve", "--demo", "--listen", "127.0.0.1:0", "--log", log];
        let (mut server, line) = Server::spawn(&args, cwd);
        assert!(
            line.starts_with("agentlog serving agent \"demo\" at http://127.0.0.1:"),
            "unexpected first line {line:?}; stderr: {}",
            server.stderr()
        );
        assert!(line.contains("demo worker on"), "{line}");
        server.url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap()
            .to_owned();
        assert!(
            !server.url.ends_with(":0/"),
            "the real port is printed: {line}"
        );
        server
    }

    /// `agentlog <args>`, once it printed its first line (returned; `url` is left empty).
    fn spawn(args: &[&str], cwd: &Path) -> (Server, String) {
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

    fn stderr(&mut self) -> String {
        let _ = self.child.kill();
        let mut text = String::new();
        if let Some(stderr) = self.child.stderr.as_mut() {
            let _ = std::io::Read::read_to_string(stderr, &mut text);
        }
        text
    }

    /// SIGTERM, then wait for a clean exit.
    fn stop(mut self) {
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
        assert!(status.success(), "serve exited with {status}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agentlog(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run agentlog")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `args`, asserts exit 0 and a quiet stderr, returns stdout.
fn ok(args: &[&str]) -> String {
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
fn fails(args: &[&str]) -> String {
    let out = agentlog(args);
    assert_eq!(out.status.code(), Some(1), "agentlog {args:?}: {out:?}");
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    assert!(stderr.starts_with("error: "), "{stderr:?}");
    assert!(!stderr.contains("panicked"), "{stderr:?}");
    stderr
}

/// The value of the `task` line.
fn task_id(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("task "))
        .map(|id| id.trim().to_owned())
        .unwrap_or_else(|| panic!("no task line in {stdout:?}"))
}

fn field<'a>(stdout: &'a str, label: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(label))
        .filter(|rest| rest.starts_with(' '))
        .map(str::trim)
        .collect()
}

#[test]
fn every_subcommand_teaches_by_example() {
    for command in ["serve", "worker", "send", "get", "cancel", "list", "tail"] {
        let help = ok(&[command, "--help"]);
        assert!(help.contains("EXAMPLES:"), "{command} --help:\n{help}");
        assert!(help.contains(&format!("agentlog {command}")), "{command}");
    }
    assert!(ok(&["--help"]).contains("EXAMPLES:"));
    let usage = agentlog(&["send"]);
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn a_demo_agent_answers_every_client_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start("memory://", dir.path());
    let url = server.url.as_str();

    // send: waits, prints the task's state and artifact text.
    let out = ok(&["send", url, "hello"]);
    assert!(out.contains("echo: hello"), "{out}");
    assert_eq!(field(&out, "state"), ["completed"]);
    let hello = task_id(&out);

    // Words are joined; --stream prints the events as they come.
    let out = ok(&["send", "--stream", url, "hello", "world"]);
    let states = field(&out, "state");
    assert_eq!(states.first(), Some(&"submitted"), "{out}");
    assert_eq!(states.last(), Some(&"completed"), "{out}");
    assert!(out.contains("artifact echo: echo: hello world\n"), "{out}");

    // input, then a follow-up on the same task.
    let out = ok(&["send", url, "input"]);
    assert_eq!(field(&out, "state"), ["input-required"], "{out}");
    assert_eq!(field(&out, "message"), ["what should I echo?"]);
    let asked = task_id(&out);
    let out = ok(&["send", url, "--task", &asked, "parrot"]);
    assert_eq!(task_id(&out), asked);
    assert_eq!(field(&out, "state"), ["completed"], "{out}");
    assert_eq!(field(&out, "message"), ["parrot"]);

    // get: the task with its history; --history trims it.
    let out = ok(&["get", url, &asked]);
    assert_eq!(field(&out, "history").len(), 4, "{out}");
    let out = ok(&["get", "--history", "1", url, &asked]);
    assert_eq!(field(&out, "history"), ["agent: parrot"], "{out}");

    // list: every task, filters.
    let out = ok(&["list", url]);
    assert!(out.contains(&hello) && out.contains(&asked), "{out}");
    assert!(out.contains("3 of 3 tasks"), "{out}");
    let out = ok(&["list", "--state", "input-required", url]);
    assert!(out.contains("no tasks"), "{out}");

    // cancel a long task; a second cancel is refused with -32002.
    let out = ok(&["send", "--no-wait", url, "sleep", "30"]);
    let sleeping = task_id(&out);
    let out = ok(&["cancel", url, &sleeping]);
    assert_eq!(field(&out, "state"), ["canceled"], "{out}");
    let err = fails(&["cancel", url, &sleeping]);
    assert!(err.contains("(-32002)"), "{err}");

    // Unknown task: -32001, one line.
    let err = fails(&["get", url, "no-such-task"]);
    assert_eq!(err, "error: Task not found: no-such-task (-32001)\n");

    // --json gives the JSON-RPC result.
    let out = ok(&["send", "--json", url, "hi"]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["task"]["status"]["state"], "TASK_STATE_COMPLETED");

    // /metrics counts the log's operations: the bridge's appends, the demo worker's polls.
    let metrics = http_get(&format!("{url}metrics"));
    for line in [
        r#"agentlog_log_operations_total{op="append_all",outcome="ok"} "#,
        r#"agentlog_log_operations_total{op="poll",outcome="ok"} "#,
        r#"agentlog_log_records_total{op="append_all"} "#,
    ] {
        assert!(metrics.contains(line), "missing {line:?} in\n{metrics}");
    }

    server.stop();
}

/// The body of `GET url` (plain `http://host:port/path`), over a bare connection.
fn http_get(url: &str) -> String {
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

#[test]
fn a_worker_serves_its_logs_metrics_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "worker",
        "--log",
        "memory://",
        "--metrics-listen",
        "127.0.0.1:0",
    ];
    let (mut worker, line) = Server::spawn(&args, dir.path());
    let Some(metrics_url) = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .map(|w| format!("http://{}", w.trim_end_matches(')')))
    else {
        panic!("no metrics URL in {line:?}; stderr: {}", worker.stderr());
    };
    assert!(
        metrics_url.ends_with("/metrics") && !metrics_url.contains(":0/"),
        "{line}"
    );
    let metrics = http_get(&metrics_url);
    assert!(
        metrics.contains(r#"agentlog_log_operations_total{op="join_group",outcome="ok"} 1"#),
        "{metrics}"
    );
    worker.stop();
}

#[test]
fn tail_reads_a_file_log_while_the_server_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = format!("file://{}", dir.path().join("data").display());
    let server = Server::start(&log, dir.path());
    let out = ok(&["send", &server.url, "hello"]);
    let task = task_id(&out);

    // Beside the running server (read-only: it takes no lock).
    let out = ok(&["tail", "--log", &log, "--agent", "demo"]);
    let kinds: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().nth(2).unwrap_or(""))
        .collect();
    assert_eq!(
        kinds,
        [
            "command", "claim", "status", "artifact", "artifact", "artifact", "terminal"
        ],
        "{out}"
    );
    assert!(out.lines().all(|l| l.contains(&task)), "{out}");
    assert!(out.contains("\"hello\""), "{out}");
    assert!(out.contains("completed"), "{out}");

    // --follow shows a task the server runs after tail started, as it happens.
    let (mut follow, lines, _notes) = tail_follow(&log);
    let second = task_id(&ok(&["send", &server.url, "again"]));
    let seen = lines_until_terminal(&lines, &second);
    assert!(
        seen.iter()
            .any(|l| l.contains(&second) && l.contains("\"again\"")),
        "{seen:?}"
    );
    let _ = follow.kill();
    let _ = follow.wait();
    server.stop();

    // A relative file:// URL resolves against the working directory.
    let relative = Command::new(BIN)
        .args([
            "tail",
            "--log",
            "file://./data",
            "--agent",
            "demo",
            "--task",
            &task,
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(relative.status.success(), "{relative:?}");
    assert_eq!(text(&relative.stdout).lines().count(), 7);

    let err = fails(&["tail", "--log", &log, "--agent", "nobody"]);
    assert!(err.contains("no records"), "{err}");
}

#[test]
fn tail_follow_started_before_the_server_waits_for_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = format!("file://{}", dir.path().join("data").display());
    let (mut follow, lines, notes) = tail_follow(&log);
    let note = notes.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(
        note.contains("no log at") && note.contains("waiting"),
        "{note}"
    );

    let server = Server::start(&log, dir.path());
    let task = task_id(&ok(&["send", &server.url, "early bird"]));
    let seen = lines_until_terminal(&lines, &task);
    assert!(
        seen[0].contains("command") && seen[0].contains("\"early bird\""),
        "{seen:?}"
    );
    let _ = follow.kill();
    let _ = follow.wait();
    server.stop();
}

/// `agentlog tail --log <log> --agent demo --follow`, with its stdout and stderr lines.
fn tail_follow(log: &str) -> (Child, mpsc::Receiver<String>, mpsc::Receiver<String>) {
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
fn lines_until_terminal(lines: &mpsc::Receiver<String>, task: &str) -> Vec<String> {
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
fn line_channel(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
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

#[test]
fn failures_are_one_line_and_exit_1() {
    let err = fails(&["send", "http://127.0.0.1:1", "hi"]);
    assert!(err.contains("cannot reach"), "{err}");
    let err = fails(&["serve", "--log", "kafka://x", "--listen", "127.0.0.1:0"]);
    assert!(err.contains("bad log URL"), "{err}");
    let err = fails(&["send", "ftp://x", "hi"]);
    assert!(err.contains("http://"), "{err}");
}
