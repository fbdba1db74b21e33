//! Edge auth through the router, without a port (one test on loopback for header sizes):
//! every refusal is asserted on its status, its `WWW-Authenticate` and its JSON-RPC body,
//! and the router still serves a good request afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use crate::agent::Caller;
use crate::bridge::{Bridge, BridgeConfig};
use crate::http::{HttpConfig, router};
use crate::worker::Worker;
use cases::cases;

mod cases;
mod isolation;
mod jwks;
mod mcp;

const ISSUER: &str = "https://issuer.example";
const AUDIENCE: &str = "agent-t";
const SECRET: &str = "a shared secret of more than thirty-two bytes";

fn testdata(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/http/auth/testdata")
        .join(name)
}

fn pem(name: &str) -> Vec<u8> {
    std::fs::read(testdata(name)).unwrap()
}

fn now() -> u64 {
    crate::retention::now_ms() / 1000
}

/// Claims that pass, for `subject` with `scope`.
fn claims(subject: &str, scope: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "exp": now() + 600, "scope": scope})
}

const ALL_SCOPES: &str = "tasks:send tasks:read tasks:cancel";

fn sign(alg: Algorithm, key: &EncodingKey, kid: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn ed(claims: &Value) -> String {
    sign(
        Algorithm::EdDSA,
        &EncodingKey::from_ed_pem(&pem("ed.key")).unwrap(),
        None,
        claims,
    )
}

fn good_token() -> String {
    ed(&claims("alice", ALL_SCOPES))
}

/// A token whose header is `header` and whose signature is `signature`, as given.
fn raw_token(header: &Value, claims: &Value, signature: &str) -> String {
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
    format!("{}.{}.{signature}", part(header), part(claims))
}

fn config() -> JwtConfig {
    let mut config = JwtConfig::new(ISSUER, AUDIENCE);
    config.keys = vec![testdata("ed.pub"), testdata("ec.pub"), testdata("rsa.pub")];
    config
}

async fn app_with(config: &JwtConfig) -> (Router, Worker) {
    app_on(crate::log::open("memory://").await.unwrap(), config).await
}

/// The router over `log` with JWT auth by `config`, and the demo worker behind it.
async fn app_on(log: crate::log::Log, config: &JwtConfig) -> (Router, Worker) {
    let auth = EdgeAuth::new(JwtAuthenticator::new(config).unwrap());
    let http = HttpConfig {
        auth: Some(auth),
        ..HttpConfig::default()
    };
    crate::http::tests::app_on(log, http).await
}

/// The public card `app` serves.
async fn public_card(app: &Router) -> Value {
    let response = app
        .clone()
        .oneshot(
            Request::get("/.well-known/agent-card.json")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
    /// The body as text (SSE streams are not JSON).
    text: String,
}

impl Reply {
    fn challenge(&self) -> &str {
        self.headers
            .get(header::WWW_AUTHENTICATE)
            .map(|v| v.to_str().unwrap())
            .unwrap_or("")
    }

    fn code(&self) -> i64 {
        self.body["error"]["code"].as_i64().unwrap_or(0)
    }

    fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or("")
    }
}

async fn post(app: &Router, uri: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut request = Request::post(uri).header(header::CONTENT_TYPE, "application/json");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request = request.header(header::HOST, "127.0.0.1");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = tokio::time::timeout(
        Duration::from_secs(30),
        app.clone()
            .oneshot(request.body(Body::from(body.to_owned())).unwrap()),
    )
    .await
    .expect("the router answers")
    .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn get_task(id: &str) -> String {
    json!({"jsonrpc": "2.0", "id": "req-7", "method": "GetTask", "params": {"id": id}}).to_string()
}

fn send(text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": format!("m-{}", uuid::Uuid::new_v4()), "role": "ROLE_USER",
        "parts": [{"text": text}]}}})
    .to_string()
}

#[tokio::test]
async fn every_bad_credential_is_refused_with_its_status_challenge_and_body() {
    let (app, worker) = app_with(&config()).await;
    let cases = cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    for case in &cases {
        let headers: Vec<(&str, &str)> = case
            .authorization
            .iter()
            .map(|v| ("authorization", v.as_str()))
            .collect();
        let reply = post(&app, case.uri, &headers, &case.body).await;
        let name = case.name;
        assert_eq!(reply.status, case.status, "{name}: {:?}", reply.body);
        match case.challenge.strip_suffix('*') {
            Some(prefix) => assert!(
                reply.challenge().starts_with(prefix),
                "{name}: {:?}",
                reply.challenge()
            ),
            None => assert_eq!(reply.challenge(), case.challenge, "{name}"),
        }
        assert_eq!(reply.code(), case.code, "{name}: {:?}", reply.body);
        assert!(
            reply.message().contains(case.says),
            "{name}: {:?}",
            reply.message()
        );
        // A refusal is a JSON-RPC error answering the request: its id when it parsed.
        let expected_id = serde_json::from_str::<Value>(&case.body)
            .ok()
            .and_then(|b| b.get("id").cloned())
            .unwrap_or(Value::Null);
        assert_eq!(reply.body["id"], expected_id, "{name}");
        assert_eq!(reply.body["jsonrpc"], "2.0", "{name}");
        // The 0.3 method is answered in 0.3's error shape (metadata as `data`).
        let metadata = if case.body.contains("message/send") {
            &reply.body["error"]["data"]
        } else {
            &reply.body["error"]["data"][0]["metadata"]
        };
        if case.status == StatusCode::FORBIDDEN {
            assert_eq!(metadata["scope"], case.says, "{name}");
            assert_eq!(metadata["error"], "insufficient_scope", "{name}");
        }
    }
    // And the router still serves a good request, end to end.
    let reply = post(
        &app,
        "/",
        &[("authorization", &bearer(&good_token()))],
        &send("still here"),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(
        reply.body["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    worker.shutdown().await.unwrap();
}

#[tokio::test]
async fn good_tokens_of_each_algorithm_and_scope_shape_are_accepted() {
    let mut with_secret = config();
    let secret_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret_file.path(), format!("{SECRET}\n")).unwrap();
    with_secret.secret_file = Some(secret_file.path().to_owned());
    let (app, worker) = app_with(&with_secret).await;
    let ec = EncodingKey::from_ec_pem(&pem("ec.key")).unwrap();
    let rsa = EncodingKey::from_rsa_pem(&pem("rsa.key")).unwrap();
    let hs = EncodingKey::from_secret(SECRET.as_bytes()).unwrap();
    let good = claims("alice", ALL_SCOPES);
    let mut scp = good.clone();
    scp.as_object_mut().unwrap().remove("scope");
    scp["scp"] = json!(["tasks:send", "tasks:read"]);
    let mut within_leeway = good.clone();
    within_leeway["exp"] = json!(now() - 10);
    let mut audience_list = good.clone();
    audience_list["aud"] = json!(["someone-else", AUDIENCE]);
    for (name, token) in [
        ("EdDSA", ed(&good)),
        (
            "EdDSA with a kid",
            sign(
                Algorithm::EdDSA,
                &EncodingKey::from_ed_pem(&pem("ed.key")).unwrap(),
                Some("k"),
                &good,
            ),
        ),
        ("ES256", sign(Algorithm::ES256, &ec, None, &good)),
        ("RS256", sign(Algorithm::RS256, &rsa, None, &good)),
        (
            "HS256 with the configured secret",
            sign(Algorithm::HS256, &hs, None, &good),
        ),
        ("scopes as an scp list", ed(&scp)),
        ("expired within the leeway", ed(&within_leeway)),
        ("one of several audiences", ed(&audience_list)),
    ] {
        let reply = post(
            &app,
            "/",
            &[("authorization", &bearer(&token))],
            &send("hi"),
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{name}: {:?}", reply.body);
        assert!(
            reply.body["result"]["task"].is_object(),
            "{name}: {:?}",
            reply.body
        );
    }
    let lower = post(
        &app,
        "/",
        &[("authorization", &format!("bearer {}", ed(&good)))],
        &send("hi"),
    )
    .await;
    assert_eq!(
        lower.status,
        StatusCode::OK,
        "the scheme is case-insensitive"
    );
    // The wrong secret is a bad signature.
    let wrong = sign(
        Algorithm::HS256,
        &EncodingKey::from_secret(b"another secret of more than thirty-two bytes!").unwrap(),
        None,
        &good,
    );
    let reply = post(
        &app,
        "/",
        &[("authorization", &bearer(&wrong))],
        &send("hi"),
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert!(reply.message().contains("signature does not verify"));
    worker.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_public_card_and_health_need_no_credentials_and_the_card_declares_the_scheme() {
    let (app, worker) = app_with(&config()).await;
    for path in [
        "/.well-known/agent-card.json",
        "/.well-known/agent.json",
        "/healthz",
    ] {
        let response = app
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
    }
    let card = public_card(&app).await;
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(
        card["securityRequirements"],
        json!([{"schemes": {"bearer": {"list": []}}}])
    );
    worker.shutdown().await.unwrap();
}

#[tokio::test]
async fn configuration_mistakes_are_refused_at_start() {
    let mut hs_without_secret = config();
    hs_without_secret.algorithms = vec!["HS256".to_owned()];
    let mut unknown_alg = config();
    unknown_alg.algorithms = vec!["none".to_owned()];
    let mut no_keys = config();
    no_keys.keys.clear();
    let mut no_audience = config();
    no_audience.audiences.clear();
    let mut private_key = config();
    private_key.keys = vec![testdata("ed.key")];
    let mut hash_issuer = config();
    hash_issuer.issuers = vec!["https://a.example/#x".to_owned()];
    let short_secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(short_secret.path(), "short").unwrap();
    let mut weak = config();
    weak.secret_file = Some(short_secret.path().to_owned());
    for (name, config, says) in [
        (
            "HS256 without a secret",
            hs_without_secret,
            "HS256 needs a shared secret",
        ),
        ("alg none", unknown_alg, "is not one of"),
        ("no keys", no_keys, "needs keys"),
        ("no audience", no_audience, "audience"),
        ("a private key file", private_key, "a private key"),
        ("an issuer with #", hash_issuer, "contains `#`"),
        ("a short secret", weak, "shorter than 32 bytes"),
    ] {
        let error = JwtAuthenticator::new(&config).unwrap_err();
        assert_eq!(error.kind(), crate::ErrorKind::Config, "{name}");
        assert!(error.message().contains(says), "{name}: {error}");
    }
}

#[tokio::test]
async fn the_tenant_claim_places_the_caller_and_is_required_once_configured() {
    let mut config = config();
    config.tenant_claim = Some("org".to_owned());
    let authenticator = JwtAuthenticator::new(&config).unwrap();
    let mut good = claims("alice", "tasks:read");
    good["org"] = json!("acme");
    let identity = authenticator.verify(&ed(&good)).await.unwrap();
    assert_eq!(identity.caller.principal, format!("{ISSUER}#alice"));
    assert_eq!(identity.caller.tenant, "acme");
    assert_eq!(identity.scopes, ["tasks:read"]);
    let refused = authenticator
        .verify(&ed(&claims("alice", "tasks:read")))
        .await
        .unwrap_err();
    assert!(refused.description().contains("\"org\" claim"), "{refused}");
}

#[tokio::test]
async fn api_keys_authenticate_from_their_header() {
    let identity = Identity {
        caller: Caller::principal("svc-1"),
        scopes: vec!["tasks:read".to_owned()],
    };
    let keys = ApiKeys::default().with_key("s3cret-key", identity.clone());
    let mut headers = HeaderMap::new();
    assert_eq!(keys.authenticate(&headers).await, Err(Refusal::Missing));
    headers.insert("x-api-key", "s3cret-key".parse().unwrap());
    assert_eq!(keys.authenticate(&headers).await, Ok(identity));
    headers.insert("x-api-key", "guess".parse().unwrap());
    assert!(matches!(
        keys.authenticate(&headers).await,
        Err(Refusal::Invalid(_))
    ));
    assert!(
        !format!("{keys:?}").contains("s3cret"),
        "Debug shows no key"
    );
    let (name, scheme) = keys.security_scheme();
    assert_eq!(name, "apiKey");
    assert_eq!(
        serde_json::to_value(&scheme).unwrap(),
        json!({"apiKeySecurityScheme": {"location": "header", "name": "x-api-key"}})
    );
}

#[tokio::test]
async fn an_oversized_header_is_refused_and_the_server_keeps_serving() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let (app, worker) = app_with(&config()).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let server = tokio::spawn(crate::http::serve(
        listener,
        app,
        stop.clone().cancelled_owned(),
    ));
    let raw = |authorization: String| async move {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let body = get_task("t-1");
        let request = format!(
            "POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nauthorization: {authorization}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        // The server may close before reading it all: a write error is an answer too.
        let _ = stream.write_all(request.as_bytes()).await;
        let mut reply = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut reply)).await;
        String::from_utf8_lossy(&reply).into_owned()
    };
    let big = raw(format!("Bearer {}", "a".repeat(64 * 1024))).await;
    assert!(big.starts_with("HTTP/1.1 401"), "{big:.200}");
    assert!(big.contains("longer than 8192 bytes"), "{big:.400}");
    let huge = raw(format!("Bearer {}", "a".repeat(2 * 1024 * 1024))).await;
    assert!(
        huge.is_empty() || huge.starts_with("HTTP/1.1 431"),
        "hyper refuses a header past its buffer: {huge:.200}"
    );
    let fine = raw(bearer(&good_token())).await;
    assert!(fine.starts_with("HTTP/1.1 200"), "{fine:.300}");
    stop.cancel();
    server.await.unwrap().unwrap();
    worker.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_extended_card_is_served_to_authenticated_callers_as_configured() {
    async fn app(configure: impl FnOnce(&mut BridgeConfig)) -> Router {
        let log = crate::log::open("memory://").await.unwrap();
        let mut bridge_config = BridgeConfig::new("t");
        configure(&mut bridge_config);
        let bridge = Bridge::open(log, bridge_config).await.unwrap();
        let auth = EdgeAuth::new(JwtAuthenticator::new(&config()).unwrap());
        router(
            bridge,
            HttpConfig {
                auth: Some(auth),
                ..HttpConfig::default()
            },
        )
    }
    let ask = json!({"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}})
        .to_string();
    let token = good_token();
    let authorized = [("authorization", bearer(&token))];
    let headers: Vec<(&str, &str)> = authorized.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let none = app(|_| {}).await;
    let reply = post(&none, "/", &headers, &ask).await;
    assert_eq!(reply.code(), -32004, "{:?}", reply.body);

    let declared_only = app(|c| c.card.capabilities.extended_agent_card = Some(true)).await;
    let reply = post(&declared_only, "/", &headers, &ask).await;
    assert_eq!(reply.code(), -32007, "{:?}", reply.body);

    let configured = app(|c| {
        let mut extended = c.card.clone();
        extended.description = "for members only".to_owned();
        c.extended_card = Some(extended);
    })
    .await;
    let reply = post(&configured, "/", &headers, &ask).await;
    assert_eq!(
        reply.body["result"]["description"], "for members only",
        "{:?}",
        reply.body
    );
    let anonymous = post(&configured, "/", &[], &ask).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    // The public card says an extended one exists, and stays public.
    let card = public_card(&configured).await;
    assert_eq!(card["capabilities"]["extendedAgentCard"], true);
    assert_ne!(card["description"], "for members only");
}
