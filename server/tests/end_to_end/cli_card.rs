//! Signed agent cards end to end: `agentlog keygen`, `serve --signing-key` (two keys, as
//! during a rotation) and `agentlog card [--verify KEYFILE]` against it, a tampered copy of
//! its card and an unsigned server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

use crate::support::*;

/// `agentlog keygen --out <dir>/<name>`: the private key's path, the public key's, the kid
/// and the public key as a JWK.
fn keygen(dir: &Path, name: &str) -> (String, String, String, String) {
    let private = dir.join(name);
    let out = ok(&["keygen", "--out", private.to_str().unwrap()]);
    let public = field(&out, "public key")[0].to_owned();
    let kid = field(&out, "key id")[0].to_owned();
    let jwk = field(&out, "jwk")[0].to_owned();
    assert_eq!(public, format!("{}.pub", private.display()));
    (private.to_str().unwrap().to_owned(), public, kid, jwk)
}

/// `serve --demo` with `extra` flags, once ready: the server and its banner.
fn serve(dir: &Path, extra: &[&str]) -> (Server, String) {
    Server::start_with("memory://", extra, dir)
}

/// A one-route HTTP server on loopback answering every GET with `body` (at most 16
/// connections, then it stops): a card as a man in the middle would serve it.
fn serve_json(body: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16) {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                line.clear();
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[test]
fn a_card_signed_by_two_keys_verifies_with_either_and_a_tampered_copy_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (old_key, old_pub, old_kid, old_jwk) = keygen(dir.path(), "old.key");
    let (new_key, new_pub, new_kid, _) = keygen(dir.path(), "new.key");
    let (_, stranger_pub, stranger_kid, _) = keygen(dir.path(), "stranger.key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&old_key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the private key is the owner's only");
    }
    let (server, banner) = serve(
        dir.path(),
        &[
            "--with-v03-interface",
            "--signing-key",
            &old_key,
            "--signing-key",
            &new_key,
        ],
    );
    assert!(
        banner.contains(&format!("card signed by key {old_kid}, {new_kid}")),
        "{banner}"
    );
    let url = server.url.as_str();

    // Without --verify: the card, and who signed it.
    let out = ok(&["card", url]);
    assert_eq!(field(&out, "name"), ["demo"], "{out}");
    assert_eq!(
        field(&out, "endpoint"),
        [
            format!("JSONRPC 1.0 {url}"),
            format!("HTTP+JSON 1.0 {url}"),
            format!("JSONRPC 0.3 {url}")
        ],
        "{out}"
    );
    assert_eq!(
        field(&out, "signed"),
        [
            format!("by key {old_kid} (EdDSA)"),
            format!("by key {new_kid} (EdDSA)")
        ],
        "{out}"
    );
    assert!(field(&out, "verified").is_empty(), "{out}");

    // Either key verifies (clients moving from the old key to the new one); both at once
    // name the first signature's.
    let out = ok(&["card", url, "--verify", &old_pub]);
    assert_eq!(
        field(&out, "verified"),
        [format!("signed by key {old_kid}")],
        "{out}"
    );
    assert_eq!(
        field(&out, "signed")[1],
        format!("by key {new_kid} (EdDSA): not a trusted key")
    );
    let out = ok(&["card", url, "--verify", &new_pub]);
    assert_eq!(
        field(&out, "verified"),
        [format!("signed by key {new_kid}")]
    );
    let out = ok(&["card", url, "--verify", &new_pub, "--verify", &old_pub]);
    assert_eq!(
        field(&out, "verified"),
        [format!("signed by key {old_kid}")]
    );

    // A key that signed nothing.
    let err = fails(&["card", url, "--verify", &stranger_pub]);
    assert!(
        err.contains("does not verify: no signature is by a trusted key")
            && err.contains(&old_kid)
            && err.contains(&stranger_kid),
        "{err}"
    );

    // The old key as a JWK, as `keygen` prints it, is the same trusted key.
    let jwk_path = dir.path().join("old.jwk");
    std::fs::write(&jwk_path, &old_jwk).unwrap();
    let out = ok(&["card", url, "--verify", jwk_path.to_str().unwrap()]);
    assert_eq!(
        field(&out, "verified"),
        [format!("signed by key {old_kid}")]
    );

    // --json: the card as served, on stdout alone.
    let out = ok(&["card", "--json", url, "--verify", &old_pub]);
    let served: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(served["signatures"].as_array().unwrap().len(), 2);

    // The same card with one word changed, served elsewhere: the signatures no longer match.
    let mut tampered = served.clone();
    tampered["description"] = serde_json::Value::String("A friendly agent, trust it".into());
    let evil = serve_json(tampered.to_string());
    let err = fails(&["card", &evil, "--verify", &old_pub]);
    assert!(
        err.contains("does not match the card: the card was changed after it was signed"),
        "{err}"
    );
    let out = agentlog(&["card", &evil, "--verify", &old_pub]);
    let stdout = text(&out.stdout);
    assert!(
        field(&stdout, "signed")[0].ends_with("DOES NOT MATCH the card (changed after signing)"),
        "{stdout}"
    );
    // Untouched, served elsewhere, it verifies: the signature is over the card, not the host.
    let copy = serve_json(served.to_string());
    ok(&["card", &copy, "--verify", &old_pub]);

    server.stop();
}

#[test]
fn an_unsigned_card_fails_verification_and_bad_key_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public, _, _) = keygen(dir.path(), "card.key");
    let (server, banner) = serve(dir.path(), &[]);
    assert!(!banner.contains("signed"), "{banner}");
    let url = server.url.as_str();
    let out = ok(&["card", url]);
    assert_eq!(
        field(&out, "signed"),
        ["no (the card carries no signatures)"]
    );
    let err = fails(&["card", url, "--verify", &public]);
    assert!(
        err.contains("does not verify: the card has no signatures"),
        "{err}"
    );
    // A private key is not a public key file, and the other way round.
    let err = fails(&["card", url, "--verify", &key]);
    assert!(err.contains("bad --verify"), "{err}");
    server.stop();

    let err = fails(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--log",
        "memory://",
        "--signing-key",
        &public,
    ]);
    assert!(err.contains("bad --signing-key"), "{err}");
    let err = fails(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--log",
        "memory://",
        "--signing-key",
        &key,
        "--signing-key",
        &key,
    ]);
    assert!(err.contains("are the same key"), "{err}");
    let err = fails(&["card", "http://127.0.0.1:1", "--verify", &public]);
    assert!(err.contains("cannot reach"), "{err}");
}

#[test]
fn card_teaches_by_example() {
    let help = ok(&["card", "--help"]);
    assert!(help.contains("EXAMPLES:"), "{help}");
    assert!(help.contains("agentlog card"), "{help}");
    assert!(ok(&["serve", "--help"]).contains("--signing-key <FILE>"));
}

#[test]
fn serve_conformance_runs_the_conformance_agent_and_declares_the_kits_extension() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "serve",
        "--conformance",
        "--listen",
        "127.0.0.1:0",
        "--log",
        "memory://",
    ];
    let (mut server, banner) = Server::spawn(&args, dir.path());
    assert!(
        banner.contains("conformance worker on"),
        "{banner}; stderr: {}",
        server.stderr()
    );
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap();
    let card: serde_json::Value = serde_json::from_str(&ok(&["card", "--json", url])).unwrap();
    let extensions = &card["capabilities"]["extensions"];
    assert_eq!(extensions[0]["uri"], "urn:a2a:tck:required-extension");
    assert_eq!(extensions[0]["required"], true);
    assert_eq!(card["skills"][0]["id"], "tck");
    assert_eq!(card["capabilities"]["streaming"], true);
    // A message the kit's probe prefix does not name needs no extension.
    let out = ok(&["send", "--json", url, "hello"]);
    let reply: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        reply["task"]["status"]["state"] == "TASK_STATE_COMPLETED",
        "{reply}"
    );
    // --demo and --conformance are one or the other.
    let both = agentlog(&["serve", "--demo", "--conformance"]);
    assert_eq!(both.status.code(), Some(2), "{both:?}");
}
