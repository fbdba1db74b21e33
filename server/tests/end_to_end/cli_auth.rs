//! `agentlog serve` with edge authentication, end to end: `keygen` makes the issuer's key,
//! `token` mints a caller's JWT, the client subcommands pass it with `--token`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;

#[test]
fn a_secured_agent_answers_only_callers_with_a_token_and_keeps_them_apart() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("issuer.key");
    let key = key.to_str().unwrap();
    let made = ok(&["keygen", "--out", key]);
    assert!(made.contains("key id"), "{made}");
    let public = format!("{key}.pub");
    let (server, banner) = Server::start_with(
        "memory://",
        &[
            "--jwt-issuer",
            "https://issuer.example",
            "--jwt-audience",
            "demo",
            "--jwt-key",
            &public,
        ],
        dir.path(),
    );
    assert!(banner.contains("bearer JWTs"), "{banner}");
    let url = server.url.clone();
    let token = |subject: &str| {
        ok(&[
            "token",
            "--key",
            key,
            "--issuer",
            "https://issuer.example",
            "--audience",
            "demo",
            "--subject",
            subject,
        ])
        .trim()
        .to_owned()
    };
    let (alice, bob) = (token("alice"), token("bob"));
    assert_eq!(alice.split('.').count(), 3, "{alice}");

    let err = fails(&["send", &url, "hello"]);
    assert!(err.contains("(-31401)") && err.contains("--token"), "{err}");
    let out = ok(&["send", "--token", &alice, &url, "hello"]);
    assert_eq!(field(&out, "state"), ["completed"], "{out}");
    let id = task_id(&out);
    let out = ok(&["get", "--token", &alice, &url, &id]);
    assert_eq!(task_id(&out), id);
    let err = fails(&["get", "--token", &bob, &url, &id]);
    assert!(err.contains("(-32001)"), "{err}");
    let out = ok(&["list", "--token", &bob, &url]);
    assert!(out.contains("no tasks"), "{out}");
    server.stop();
}

#[test]
fn serving_anonymous_callers_beyond_loopback_needs_allow_anonymous() {
    let err = fails(&["serve", "--listen", "0.0.0.0:0", "--log", "memory://"]);
    assert!(err.contains("--allow-anonymous"), "{err}");
}
