//! The command in operation: a SIGTERM that drains, diagnostics on stderr (text and JSON),
//! readiness, a damaged embedded log repaired from the command line, the runtime's thread
//! count, and the agent's partition count.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::*;

/// Every segment file of the demo agent's topics under a `file://` log directory.
fn segments(data: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![data.join("topics")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "seg") {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn sigterm_lets_running_tasks_and_open_requests_finish() {
    let dir = tempfile::tempdir().unwrap();
    let log = format!("file://{}", dir.path().join("data").display());
    let server = Server::start(&log, dir.path());
    let running = task_id(&ok(&["send", "--no-wait", &server.url, "sleep", "2"]));
    // A blocking request open when the signal comes.
    let url = server.url.clone();
    let blocking = std::thread::spawn(move || agentlog(&["send", &url, "sleep", "1"]));
    std::thread::sleep(Duration::from_millis(400));
    assert!(http_get(&format!("{}readyz", server.url)).contains(r#""ready":true"#));
    server.stop();
    // The open request got its answer, and the running task finished before the exit.
    let answered = blocking.join().unwrap();
    assert!(answered.status.success(), "{answered:?}");
    assert_eq!(field(&text(&answered.stdout), "state"), ["completed"]);
    let server = Server::start(&log, dir.path());
    let out = ok(&["get", &server.url, &running]);
    assert_eq!(field(&out, "state"), ["completed"], "{out}");
    server.stop();
}

#[test]
fn library_warnings_reach_stderr_as_text_or_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = format!("file://{}", dir.path().join("data").display());
    let server = Server::start(&log, dir.path());
    ok(&["send", &server.url, "hello"]);
    server.stop();
    // A torn tail, as a crash mid-write leaves: every open cuts it, with a warning.
    for segment in segments(&dir.path().join("data")) {
        let mut bytes = std::fs::read(&segment).unwrap();
        bytes.extend_from_slice(&[0xab; 10]);
        std::fs::write(&segment, bytes).unwrap();
    }
    let mut server = Server::start(&log, dir.path());
    let pid = server.child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let stderr = server.stderr();
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("WARN") && l.contains("torn")),
        "{stderr}"
    );

    let mut json = Command::new(BIN)
        .args([
            "serve",
            "--demo",
            "--listen",
            "127.0.0.1:0",
            "--log",
            &log,
            "--log-format",
            "json",
        ])
        .env("RUST_LOG", "agentlog=debug")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = line_channel(json.stdout.take().unwrap());
    let banner = stdout.recv_timeout(Duration::from_secs(60)).unwrap();
    assert!(banner.starts_with("agentlog serving"), "{banner}");
    Command::new("kill")
        .args(["-TERM", &json.id().to_string()])
        .status()
        .unwrap();
    let output = json.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let lines: Vec<serde_json::Value> = text(&output.stderr)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let levels: Vec<&str> = lines.iter().filter_map(|l| l["level"].as_str()).collect();
    assert!(
        levels.contains(&"DEBUG") && levels.contains(&"INFO"),
        "{levels:?}"
    );
    assert!(
        lines.iter().any(|l| l["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("shutting down"))),
        "the command's own notes are events too: {lines:?}"
    );
}

#[test]
fn a_damaged_log_is_refused_and_repaired_with_truncate_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let log = format!("file://{}", dir.path().join("data").display());
    let server = Server::start(&log, dir.path());
    for word in ["one", "two", "three"] {
        ok(&["send", &server.url, word]);
    }
    server.stop();
    // A flipped byte inside a batch (not at the tail): damage only a repair may cut.
    let segment = segments(&dir.path().join("data"))
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&segment).unwrap();
    let middle = bytes.len() / 3;
    bytes[middle] ^= 0xff;
    std::fs::write(&segment, bytes).unwrap();

    let refused = agentlog(&["serve", "--demo", "--listen", "127.0.0.1:0", "--log", &log]);
    assert_eq!(refused.status.code(), Some(1));
    let err = text(&refused.stderr);
    assert!(
        err.contains("checksum") && err.contains("--truncate-corrupt"),
        "{err}"
    );

    let args = [
        "serve",
        "--demo",
        "--listen",
        "127.0.0.1:0",
        "--log",
        &log,
        "--truncate-corrupt",
    ];
    let (mut server, line) = Server::spawn(&args, dir.path());
    assert!(
        line.starts_with("agentlog serving"),
        "{line}: {}",
        server.stderr()
    );
    server.stop();
    let err = fails(&["serve", "--log", "memory://", "--truncate-corrupt"]);
    assert!(err.contains("file://"), "{err}");
}

#[test]
fn threads_sets_the_runtime_worker_count_and_refuses_zero() {
    let dir = tempfile::tempdir().unwrap();
    for threads in ["1", "3"] {
        let (server, _) = Server::start_with("memory://", &["--threads", threads], dir.path());
        let metrics = http_get(&format!("{}metrics", server.url));
        let line = format!("agentlog_runtime_worker_threads {threads}\n");
        assert!(metrics.contains(&line), "no {line:?} in\n{metrics}");
        server.stop();
    }
    let refused = agentlog(&["--threads", "0", "serve", "--demo"]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(text(&refused.stderr).contains("--threads"), "{refused:?}");
}

#[test]
fn the_partition_count_is_chosen_once_and_another_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = format!("file://{}", data.display());
    let (server, _) = Server::start_with(&log, &["--partitions", "16"], dir.path());
    let task = task_id(&ok(&["send", &server.url, "hello"]));
    server.stop();
    // Names are %-escaped on disk.
    for topic in ["demo%2Eevents", "demo%2Ecommands"] {
        let dirs = std::fs::read_dir(data.join("topics/agentlog").join(topic))
            .unwrap()
            .filter(|e| {
                let e = e.as_ref().unwrap();
                e.path().is_dir() && e.file_name().to_string_lossy().parse::<u32>().is_ok()
            })
            .count();
        assert_eq!(dirs, 16, "{topic}");
    }
    // Another count, by flag or in the URL, from serve or a worker: refused, naming both.
    let in_url = format!("{log}?partitions=8");
    for args in [
        vec![
            "serve",
            "--demo",
            "--listen",
            "127.0.0.1:0",
            "--log",
            &log,
            "--partitions",
            "8",
        ],
        vec![
            "serve",
            "--demo",
            "--listen",
            "127.0.0.1:0",
            "--log",
            &in_url,
        ],
        vec!["worker", "--log", &log, "--partitions", "8"],
    ] {
        let err = fails(&args);
        assert!(
            err.contains("has 16 partitions") && err.contains("the 8 asked for"),
            "{args:?}: {err}"
        );
    }
    // The same count, or none: the topics are taken as they are, the task still there.
    for extra in [&["--partitions", "16"][..], &[]] {
        let (server, _) = Server::start_with(&log, extra, dir.path());
        let shown = ok(&["get", &server.url, &task]);
        assert!(shown.contains("completed"), "{shown}");
        server.stop();
    }
    // A flag that contradicts the URL.
    let err = fails(&["serve", "--log", &in_url, "--partitions", "4"]);
    assert!(err.contains("--partitions 4 contradicts"), "{err}");
}
