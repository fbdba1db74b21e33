//! The command with signed records and the hop guard: `serve --signing-key --trust`, and
//! `agentlog send` carrying `AGENTLOG_HOPS`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output, Stdio};

use crate::support::*;

fn send_with_hops(url: &str, hops: &str, text: &str) -> Output {
    Command::new(BIN)
        .args(["send", url, text])
        .env("AGENTLOG_HOPS", hops)
        .stdin(Stdio::null())
        .output()
        .expect("run agentlog send")
}

#[test]
fn a_signed_demo_agent_with_trust_answers_and_counts_rejections() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("agent.key");
    ok(&["keygen", "--out", key.to_str().unwrap()]);
    // One key for the bridge and its in-process demo worker: every kind.
    let trust = dir.path().join("trust.json");
    std::fs::write(
        &trust,
        r#"{"keys": [{"publicKeyFile": "agent.key.pub", "kinds": ["command", "continue", "cancel_request", "claim", "status_update", "artifact_update", "terminal"]}]}"#,
    )
    .unwrap();
    let (server, line) = Server::start_with(
        "memory://",
        &[
            "--signing-key",
            key.to_str().unwrap(),
            "--trust",
            trust.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(line.contains("demo worker on"), "{line}");
    let url = server.url.clone();
    let answer = ok(&["send", &url, "hello"]);
    assert!(answer.contains("completed"), "{answer}");
    assert!(answer.contains("echo: hello"), "{answer}");
    let metrics = http_get(&format!("{url}metrics"));
    assert!(
        metrics.contains(r#"agentlog_records_rejected_total{reason="unsigned"} 0"#),
        "{metrics}"
    );
    server.stop();
}

#[test]
fn a_bad_trust_file_stops_serve_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let trust = dir.path().join("trust.json");
    std::fs::write(&trust, r#"{"keys": [{"role": "bridge"}]}"#).unwrap();
    let error = fails(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--log",
        "memory://",
        "--trust",
        trust.to_str().unwrap(),
    ]);
    assert!(error.contains("--trust"), "{error}");
}

#[test]
fn send_carries_the_hops_it_is_given_and_a_loop_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start("memory://", dir.path());
    // The demo agent's bridge id is its name: a path through it already is a loop.
    let refused = send_with_hops(&server.url, r#"["caller", "demo"]"#, "hello");
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let stderr = text(&refused.stderr);
    assert!(stderr.contains("caller → demo → demo"), "{stderr}");
    assert!(stderr.contains("-32600"), "{stderr}");
    // Another path is continued.
    let accepted = send_with_hops(&server.url, r#"["caller"]"#, "hello");
    assert!(accepted.status.success(), "{accepted:?}");
    assert!(text(&accepted.stdout).contains("echo: hello"));
    // Unset or empty: no path.
    assert!(send_with_hops(&server.url, "", "hello").status.success());
    let bad = send_with_hops(&server.url, "demo", "hello");
    assert_eq!(bad.status.code(), Some(1));
    assert!(text(&bad.stderr).contains("AGENTLOG_HOPS"), "{bad:?}");
    server.stop();
}
