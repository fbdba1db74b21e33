//! Keys from a JWKS URL: fetched when first needed, again on an unknown `kid` (at most once
//! per interval), and a 503 while the issuer cannot be reached.

use super::*;

/// A JWKS endpoint on loopback whose keys the test changes, counting its fetches.
struct Jwks {
    url: String,
    keys: Arc<std::sync::Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
    _server: tokio::task::JoinHandle<()>,
}

impl Jwks {
    async fn start(keys: Value) -> Self {
        let shared = Arc::new(std::sync::Mutex::new(keys));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (shared.clone(), fetches.clone());
        let app = Router::new().route(
            "/jwks.json",
            axum::routing::get(move || {
                let (served, counted) = (served.clone(), counted.clone());
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let body = served.lock().unwrap().to_string();
                    ([(header::CONTENT_TYPE, "application/json")], body)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            url,
            keys: shared,
            fetches,
            _server: server,
        }
    }

    fn set(&self, keys: Value) {
        *self.keys.lock().unwrap() = keys;
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

/// The public JWK of a PEM test key, under `kid`.
fn jwk(public_pem: &str, kid: &str) -> Value {
    let key = crate::security::VerifyingKey::load(&testdata(public_pem)).unwrap();
    let mut jwk = key.to_jwk();
    jwk["kid"] = json!(kid);
    jwk
}

fn ed_with_kid(private_pem: &str, kid: &str) -> String {
    sign(
        Algorithm::EdDSA,
        &EncodingKey::from_ed_pem(&pem(private_pem)).unwrap(),
        Some(kid),
        &claims("alice", ALL_SCOPES),
    )
}

fn jwks_config(url: &str, refetch: Duration) -> JwtConfig {
    let mut config = JwtConfig::new(ISSUER, AUDIENCE);
    config.jwks_url = Some(url.to_owned());
    config.jwks_refetch_interval = refetch;
    config
}

#[tokio::test]
async fn a_jwks_rotation_is_picked_up_on_the_new_kid() {
    let jwks = Jwks::start(json!({"keys": [jwk("ed.pub", "k1")]})).await;
    let authenticator = JwtAuthenticator::new(&jwks_config(&jwks.url, Duration::ZERO)).unwrap();
    authenticator
        .verify(&ed_with_kid("ed.key", "k1"))
        .await
        .unwrap();
    assert_eq!(jwks.fetches(), 1, "fetched when first needed");
    authenticator
        .verify(&ed_with_kid("ed.key", "k1"))
        .await
        .unwrap();
    assert_eq!(jwks.fetches(), 1, "cached");
    // The issuer rotates to k2 and retires k1.
    jwks.set(json!({"keys": [jwk("ed2.pub", "k2")]}));
    authenticator
        .verify(&ed_with_kid("ed2.key", "k2"))
        .await
        .unwrap();
    assert_eq!(jwks.fetches(), 2, "refetched on the unknown kid");
    let retired = authenticator
        .verify(&ed_with_kid("ed.key", "k1"))
        .await
        .unwrap_err();
    assert!(retired.description().contains("names no key"), "{retired}");
    // A token naming k2 but signed by the retired key does not verify.
    let forged = authenticator
        .verify(&ed_with_kid("ed.key", "k2"))
        .await
        .unwrap_err();
    assert!(forged.description().contains("does not verify"), "{forged}");
}

#[tokio::test]
async fn unknown_kids_refetch_at_most_once_per_interval() {
    let jwks = Jwks::start(json!({"keys": [jwk("ed.pub", "k1")]})).await;
    let authenticator =
        JwtAuthenticator::new(&jwks_config(&jwks.url, Duration::from_secs(3600))).unwrap();
    authenticator
        .verify(&ed_with_kid("ed.key", "k1"))
        .await
        .unwrap();
    for i in 0..20 {
        let refused = authenticator
            .verify(&ed_with_kid("ed.key", &format!("made-up-{i}")))
            .await
            .unwrap_err();
        assert!(matches!(refused, Refusal::Invalid(_)), "{refused}");
        assert!(refused.description().contains("names no key"), "{refused}");
    }
    assert_eq!(
        jwks.fetches(),
        1,
        "a flood of made-up kids fetched nothing more"
    );
}

#[tokio::test]
async fn an_unreachable_jwks_is_a_retryable_503() {
    // A port nothing listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    drop(listener);
    let mut config = jwks_config(&url, Duration::ZERO);
    config.keys.clear();
    let (app, worker) = app_with(&config).await;
    let reply = post(
        &app,
        "/",
        &[("authorization", &bearer(&ed_with_kid("ed.key", "k1")))],
        &get_task("t-1"),
    )
    .await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{:?}",
        reply.body
    );
    assert_eq!(reply.headers.get(header::RETRY_AFTER).unwrap(), "1");
    assert_eq!(reply.code(), -32603);
    assert_eq!(
        reply.body["error"]["data"][0]["metadata"]["kind"],
        "unavailable"
    );
    worker.shutdown().await.unwrap();
}
