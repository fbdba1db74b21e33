//! The `agentlog` command end to end: a `serve --demo` child process, and the client
//! subcommands run against it as a person would.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use crate::support::*;

#[test]
fn every_subcommand_teaches_by_example() {
    for command in [
        "serve", "worker", "send", "get", "cancel", "list", "tail", "keygen", "token",
    ] {
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

    // /metrics counts the log's operations (the bridge's appends, the demo worker's polls)
    // and says how far behind their queues the demo workers are.
    let metrics = http_get(&format!("{url}metrics"));
    for line in [
        r#"agentlog_log_operations_total{op="append_all",outcome="ok"} "#,
        r#"agentlog_log_operations_total{op="poll",outcome="ok"} "#,
        r#"agentlog_log_records_total{op="append_all"} "#,
        r#"agentlog_worker_queue_lag_records{topic="agentlog/demo.commands"} "#,
        r#"agentlog_worker_queue_lag_records{topic="agentlog/mcp.demo.commands"} "#,
    ] {
        assert!(metrics.contains(line), "missing {line:?} in\n{metrics}");
    }

    server.stop();
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
    for line in [
        r#"agentlog_log_operations_total{op="join_group",outcome="ok"} 1"#,
        // An idle worker is behind by nothing.
        r#"agentlog_worker_queue_lag_records{topic="agentlog/demo.commands"} 0"#,
    ] {
        assert!(metrics.contains(line), "missing {line:?} in\n{metrics}");
    }
    worker.stop();
}

#[test]
fn a_pusher_serves_its_counters_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "pusher",
        "--log",
        "memory://",
        "--metrics-listen",
        "127.0.0.1:0",
    ];
    let (mut pusher, line) = Server::spawn(&args, dir.path());
    let Some(metrics_url) = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .map(|w| format!("http://{}", w.trim_end_matches(')')))
    else {
        panic!("no metrics URL in {line:?}; stderr: {}", pusher.stderr());
    };
    assert!(
        metrics_url.ends_with("/metrics") && !metrics_url.contains(":0/"),
        "{line}"
    );
    let metrics = http_get(&metrics_url);
    for series in [
        "agentlog_push_delivered_total 0",
        "agentlog_push_dead_letters_total 0",
        "agentlog_push_failed_attempts_total 0",
        "agentlog_push_pending 0",
        r#"agentlog_log_operations_total{op="join_group",outcome="ok"} 1"#,
    ] {
        assert!(metrics.contains(series), "missing {series:?} in\n{metrics}");
    }
    pusher.stop();
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
            "command", "claim", "artifact", "artifact", "artifact", "terminal"
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
    assert_eq!(text(&relative.stdout).lines().count(), 6);

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

#[test]
fn failures_are_one_line_and_exit_1() {
    let err = fails(&["send", "http://127.0.0.1:1", "hi"]);
    assert!(err.contains("cannot reach"), "{err}");
    let err = fails(&["serve", "--log", "kafka://x", "--listen", "127.0.0.1:0"]);
    assert!(err.contains("bad log URL"), "{err}");
    let err = fails(&["send", "ftp://x", "hi"]);
    assert!(err.contains("http://"), "{err}");
}
