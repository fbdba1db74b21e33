//! The Iggy backend over TLS (`iggys://`) against a real server with a certificate made here.
//! Passes with a SKIPPED line when there is no `iggy-server` binary.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentlog::log::TopicRef;
use agentlog_integration::iggy_server::IggyServer;
use bytes::Bytes;

/// A self-signed certificate for `localhost` and its key, as PEM files in `dir`.
fn certificate(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = dir.join(format!("{name}.pem"));
    let key = dir.join(format!("{name}.key"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_iggys_url_talks_tls_and_checks_the_server() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(certs.path(), "server");
    let (stranger, _) = certificate(certs.path(), "stranger");
    let (cert_path, key_path) = (cert.display().to_string(), key.display().to_string());
    let Some(server) = IggyServer::start_with(&[
        ("IGGY_TCP_TLS_ENABLED", "true"),
        ("IGGY_TCP_TLS_SELF_SIGNED", "false"),
        ("IGGY_TCP_TLS_CERT_FILE", &cert_path),
        ("IGGY_TCP_TLS_KEY_FILE", &key_path),
    ])
    .await
    else {
        return;
    };
    let tls_url = |ca: &Path| {
        format!(
            "iggys://iggy:iggy@{}?tls_ca_file={}&tls_domain=localhost",
            server.address(),
            ca.display()
        )
    };
    let log = agentlog::log::open(&tls_url(&cert)).await.unwrap();
    let topic = TopicRef::new("tls", "events");
    log.ensure_topic(&topic, 1).await.unwrap();
    let payload = Bytes::from_static(b"over tls");
    log.append(&topic, b"k", vec![payload.clone()])
        .await
        .unwrap();
    let read = log.read(&topic, 0, 0, 10).await.unwrap();
    assert_eq!(
        read.iter().map(|r| &r.payload).collect::<Vec<_>>(),
        [&payload]
    );
    log.close().await.unwrap();

    // A certificate authority that did not sign the server's certificate, and plain TCP to a
    // TLS listener: refused, in bounded time, and the server still serves.
    for url in [tls_url(&stranger), server.url()] {
        let opened = tokio::time::timeout(Duration::from_secs(60), agentlog::log::open(&url))
            .await
            .unwrap_or_else(|_| panic!("{url}: no answer within 60 s"));
        let err = opened.err().unwrap_or_else(|| panic!("{url} opened"));
        assert!(!err.to_string().contains(":iggy@"), "{err}");
    }
    let again = agentlog::log::open(&tls_url(&cert)).await.unwrap();
    assert_eq!(again.read(&topic, 0, 0, 10).await.unwrap().len(), 1);
}
