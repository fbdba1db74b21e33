#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn parses_each_scheme() {
    assert_eq!("memory://".parse::<LogUrl>().ok(), Some(LogUrl::Memory));
    let file = |fsync, truncate_corrupt| FileOptions {
        fsync,
        truncate_corrupt,
        segment_bytes: None,
    };
    assert_eq!(
        "file:///var/lib/agentlog".parse::<LogUrl>().ok(),
        Some(LogUrl::File(
            PathBuf::from("/var/lib/agentlog"),
            file(None, false)
        ))
    );
    assert_eq!(
        "file:///d?fsync=5ms".parse::<LogUrl>().ok(),
        Some(LogUrl::File(
            PathBuf::from("/d"),
            file(
                Some(FsyncPolicy::Interval(std::time::Duration::from_millis(5))),
                false
            )
        ))
    );
    assert_eq!(
        "file:///d?fsync=never&truncate_corrupt=true"
            .parse::<LogUrl>()
            .ok(),
        Some(LogUrl::File(
            PathBuf::from("/d"),
            file(Some(FsyncPolicy::Never), true)
        ))
    );
    assert_eq!(
        "iggy://iggy:secret@127.0.0.1:8090?connections=8"
            .parse::<LogUrl>()
            .ok(),
        Some(LogUrl::Iggy {
            address: "127.0.0.1:8090".into(),
            username: "iggy".into(),
            password: "secret".into(),
            tls: None,
            connections: Some(8),
        })
    );
    for bad in ["0", "65", "many"] {
        let url = format!("iggy://u:p@h:1?connections={bad}");
        assert!(url.parse::<LogUrl>().is_err(), "{url}");
    }
    assert_eq!(
        "iggys://iggy:secret@db.example:9000?tls_ca_file=/ca.pem&tls_domain=iggy.internal"
            .parse::<LogUrl>()
            .ok(),
        Some(LogUrl::Iggy {
            address: "db.example:9000".into(),
            username: "iggy".into(),
            password: "secret".into(),
            tls: Some(IggyTls {
                ca_file: Some(PathBuf::from("/ca.pem")),
                domain: Some("iggy.internal".into()),
            }),
            connections: None,
        })
    );
    assert!(matches!(
        "iggys://u:p@h:1".parse::<LogUrl>(),
        Ok(LogUrl::Iggy { tls: Some(tls), .. }) if tls == IggyTls::default()
    ));
}

#[test]
fn segment_bytes_and_retention_are_options() {
    let spec = |url: &str| url.parse::<LogSpec>().ok();
    assert_eq!(
        spec("file:///d?segment_bytes=4096&retention=10s"),
        Some(LogSpec {
            backend: LogUrl::File(
                PathBuf::from("/d"),
                FileOptions {
                    segment_bytes: Some(4096),
                    ..FileOptions::default()
                }
            ),
            retention: Some(Duration::from_secs(10)),
            partitions: None,
        })
    );
    assert_eq!(
        spec("memory://?retention=0"),
        Some(LogSpec {
            backend: LogUrl::Memory,
            retention: Some(Duration::ZERO),
            partitions: None,
        })
    );
    assert_eq!(
        spec("iggy://u:p@h:1?retention=12h").map(|s| s.retention),
        Some(Some(Duration::from_secs(12 * 3600)))
    );
    assert_eq!(spec("memory://").map(|s| s.retention), Some(None));
    // A `LogUrl` is the backend alone: the retention is parsed and dropped.
    assert_eq!(
        "memory://?retention=7d".parse::<LogUrl>().ok(),
        Some(LogUrl::Memory)
    );
}

#[test]
fn every_scheme_takes_a_partition_count() {
    let partitions = |url: &str| url.parse::<LogSpec>().map(|s| s.partitions);
    assert_eq!(partitions("memory://").unwrap(), None);
    assert_eq!(partitions("memory://?partitions=16").unwrap(), Some(16));
    assert_eq!(
        partitions("file:///d?fsync=never&partitions=1").unwrap(),
        Some(1)
    );
    assert_eq!(
        partitions("iggy://u:p@h:1?partitions=1000&retention=1d").unwrap(),
        Some(1000)
    );
    for bad in ["0", "1001", "-1", "many", ""] {
        let url = format!("memory://?partitions={bad}");
        let err = partitions(&url).expect_err(&url);
        assert_eq!(err.kind(), ErrorKind::Config);
        assert!(err.to_string().contains("partitions must be"), "{err}");
    }
}

#[tokio::test]
async fn open_puts_the_partition_count_on_the_handle() {
    let log = open("memory://?partitions=64").await.unwrap();
    assert_eq!(log.partition_count(), Some(64));
    let layered = log.layer(crate::log::layers::TracingLayer::new());
    assert_eq!(layered.partition_count(), Some(64));
    assert_eq!(open("memory://").await.unwrap().partition_count(), None);
}

#[tokio::test]
async fn open_puts_the_retention_on_the_handle() {
    let log = open("memory://?retention=2m")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(log.retention(), Some(Duration::from_secs(120)));
    // Layers keep it.
    let layered = log.layer(crate::log::layers::TracingLayer::new());
    assert_eq!(layered.retention(), Some(Duration::from_secs(120)));
    let plain = open("memory://").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plain.retention(), None);
    let set = plain.with_retention(Duration::ZERO);
    assert_eq!(set.retention(), Some(Duration::ZERO));
}

#[test]
fn bad_urls_say_what_is_accepted() {
    for bad in [
        "kafka://x",
        "not a url",
        "iggy://127.0.0.1:1",
        "file://host/x",
        "file:///d?truncate_corrupt=yes",
        "file:///d?repair=true",
        "file:///d?segment_bytes=0",
        "file:///d?segment_bytes=1k",
        "file:///d?retention=1w",
        "memory://?retention=",
        "memory://?fsync=always",
        "iggy://u:p@h:1?segment_bytes=10",
        "iggy://u:p@h:1?retention=10",
        "iggy://u:p@h:1?tls_ca_file=/ca.pem",
        "memory://?tls_domain=x",
    ] {
        let err = bad.parse::<LogUrl>().expect_err(bad);
        assert_eq!(err.kind(), ErrorKind::Config);
        assert!(err.to_string().contains("accepted: file://"), "{err}");
        assert!(!err.to_string().contains('\n'));
    }
}

#[test]
fn an_iggy_password_shows_nowhere() {
    let secret = "s3cr%65t-Pw";
    // A refused URL's error, a parsed URL's `Debug`, a redacted URL.
    for bad in [
        format!("iggy://u:{secret}@h:1?retention=10"),
        format!("iggy://u:{secret}@h:1?bogus=1"),
        format!("iggy://u:{secret}@h:1?password_file=/x"),
        format!("iggy://u:{secret}@[::1:1"),
    ] {
        let err = bad.parse::<LogUrl>().expect_err(&bad);
        assert!(!err.to_string().contains("s3cr"), "{err}");
        assert!(!format!("{err:?}").contains("s3cr"), "{err:?}");
        assert!(!redacted(&bad).contains("s3cr"), "{}", redacted(&bad));
    }
    let url = format!("iggy://u:{secret}@h:1");
    let parsed: LogSpec = url.parse().unwrap();
    assert!(matches!(&parsed.backend, LogUrl::Iggy { password, .. } if password == "s3cret-Pw"));
    assert!(!format!("{parsed:?}").contains("s3cr"), "{parsed:?}");
    assert_eq!(redacted(&url), "iggy://u:***@h:1");
    assert_eq!(redacted("memory://"), "memory://");
}

#[test]
fn an_iggy_password_comes_from_the_url_a_file_or_the_environment() {
    let password = |url: &str, env: Option<&str>| {
        let spec = LogSpec::parse_with_env(url, |name| {
            assert_eq!(name, IGGY_PASSWORD_ENV);
            env.map(str::to_owned)
        });
        spec.map(|spec| match spec.backend {
            LogUrl::Iggy { password, .. } => password,
            other => panic!("{other:?}"),
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pw");
    std::fs::write(&file, "from-file\nignored\n").unwrap();
    let with_file = format!("iggy://u@h:1?password_file={}", file.display());
    assert_eq!(
        password("iggy://u:in-url@h:1", Some("env")).unwrap(),
        "in-url"
    );
    assert_eq!(password(&with_file, Some("env")).unwrap(), "from-file");
    assert_eq!(
        password("iggy://u@h:1", Some("from-env")).unwrap(),
        "from-env"
    );
    assert_eq!(password("iggy://u@h:1", None).unwrap(), "");
    let both = format!("iggy://u:x@h:1?password_file={}", file.display());
    assert!(password(&both, None).is_err());
    let missing = password("iggy://u@h:1?password_file=/no/such/file", None).unwrap_err();
    assert!(missing.to_string().contains("password_file"), "{missing}");
    // Only Iggy URLs take one.
    assert!("memory://?password_file=/x".parse::<LogSpec>().is_err());
}

mod repair {
    use bytes::Bytes;

    use super::super::*;
    use crate::log::TopicRef;

    /// A log damaged in the middle of a segment (not a torn tail, which every open cuts) is
    /// refused, and opens from the URL with `truncate_corrupt=true`, cut at the damage.
    #[tokio::test]
    async fn truncate_corrupt_in_the_url_opens_a_damaged_log() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let topic = TopicRef::new("s", "t");
        let log = open(&url).await.unwrap();
        log.ensure_topic(&topic, 1).await.unwrap();
        for i in 0..10u8 {
            log.append(&topic, b"k", vec![Bytes::from(vec![i; 100])])
                .await
                .unwrap();
        }
        log.close().await.unwrap();
        let segment = std::fs::read_dir(dir.path().join("topics/s/t/0"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "seg"))
            .unwrap();
        let mut bytes = std::fs::read(&segment).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&segment, &bytes).unwrap();

        let refused = open(&url).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Corrupt);
        let repaired = open(&format!("{url}?truncate_corrupt=true")).await.unwrap();
        let kept = repaired.read(&topic, 0, 0, 100).await.unwrap();
        assert!(!kept.is_empty() && kept.len() < 10, "{} kept", kept.len());
        for (i, record) in kept.iter().enumerate() {
            assert_eq!(record.payload, Bytes::from(vec![i as u8; 100]));
        }
        repaired.close().await.unwrap();
        // Repaired for good: a plain open works now.
        open(&url).await.unwrap().close().await.unwrap();
    }

    /// `segment_bytes=` reaches the embedded log: small segments roll, and can be deleted.
    #[tokio::test]
    async fn segment_bytes_in_the_url_rolls_small_segments() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!(
            "file://{}?segment_bytes=256&fsync=never",
            dir.path().display()
        );
        let topic = TopicRef::new("s", "t");
        let log = open(&url).await.unwrap();
        log.ensure_topic(&topic, 1).await.unwrap();
        for i in 0..40u8 {
            log.append(&topic, b"k", vec![Bytes::from(vec![i; 40])])
                .await
                .unwrap();
        }
        let files = std::fs::read_dir(dir.path().join("topics/s/t/0"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "seg")
            })
            .count();
        assert!(files > 5, "{files} segment files");
        let sealed = log.segments(&topic, 0).await.unwrap();
        assert_eq!(sealed.len(), files - 1);
        log.close().await.unwrap();
    }
}
