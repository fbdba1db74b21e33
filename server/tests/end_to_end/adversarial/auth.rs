//! A server with bearer JWTs (`--jwt-issuer`, `--jwt-audience`, `--jwt-key`), attacked over
//! sockets: no token or a bad one is 401 (-31401, RFC 6750 `invalid_token`), a malformed
//! `Authorization` or a token in the query 400, a good token short of the method's scope 403
//! (-31403); every refusal a JSON-RPC body echoing the request's id.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::adversarial::cases::Case;
use crate::adversarial::client::{post, rpc};

pub const ISSUER: &str = "https://issuer.example";
pub const AUDIENCE: &str = "demo";

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now() + 600,
           "scope": "tasks:send tasks:read tasks:cancel"})
}

fn with(key: &str, value: Value) -> Value {
    let mut claims = claims();
    claims[key] = value;
    claims
}

fn without(key: &str) -> Value {
    let mut claims = claims();
    if let Some(map) = claims.as_object_mut() {
        map.remove(key);
    }
    claims
}

/// Tokens signed by the issuer's key (`agentlog keygen` PKCS#8 PEM at `key`).
pub struct Issuer {
    key: EncodingKey,
    public_pem: Vec<u8>,
}

impl Issuer {
    pub fn load(key: &Path) -> Issuer {
        let pem = std::fs::read(key).expect("the issuer's key");
        let public = std::fs::read(format!("{}.pub", key.display())).expect("its public key");
        Issuer {
            key: EncodingKey::from_ed_pem(&pem).expect("an ed25519 PEM key"),
            public_pem: public,
        }
    }

    pub fn token(&self, claims: &Value) -> String {
        jsonwebtoken::encode(&Header::new(Algorithm::EdDSA), claims, &self.key).expect("sign")
    }

    pub fn good(&self) -> String {
        self.token(&claims())
    }
}

/// A token of `header` and `claims` as given, with `signature`.
fn raw_token(header: &Value, claims: &Value, signature: &str) -> String {
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}.{signature}", part(header), part(claims))
}

fn get_task() -> Vec<u8> {
    rpc("GetTask", r#"{"id":"adv-none"}"#)
}

fn refused(name: &str, authorization: Option<&str>, status: u16, code: i64) -> Case {
    let header = authorization.map(|a| format!("Authorization: {a}"));
    let headers: Vec<&str> = header.iter().map(String::as_str).collect();
    let case = Case::new(name, post("/", &get_task(), &headers), status, Some(code));
    if status == 401 || status == 400 {
        case.header("www-authenticate", "")
    } else {
        case
    }
}

fn bearer(name: &str, token: &str, status: u16, code: i64) -> Case {
    refused(name, Some(&format!("Bearer {token}")), status, code)
}

pub fn cases(issuer: &Issuer) -> Vec<Case> {
    let good = claims();
    let ed_sig = |claims: &Value| {
        let token = issuer.token(claims);
        token.rsplit('.').next().unwrap_or_default().to_owned()
    };
    let tampered = {
        let token = issuer.good();
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(with("sub", json!("mallory")).to_string());
        parts[1] = &forged;
        parts.join(".")
    };
    let hs_confusion = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &good,
        &EncodingKey::from_secret(&issuer.public_pem).expect("a secret"),
    )
    .unwrap_or_default();
    let read_only = issuer.token(&with("scope", json!("tasks:read")));
    let send_only = issuer.token(&with("scope", json!("tasks:send")));
    let mut cases = vec![
        refused("no credentials", None, 401, -31401),
        bearer("not a JWT", "abc", 401, -31401),
        bearer("two segments", "a.b", 401, -31401),
        bearer("four segments", "a.b.c.d", 401, -31401),
        bearer("a JWE's five segments", "a.b.c.d.e", 401, -31401),
        // RFC 6750 §2.1: a token is b64token characters; anything else is a malformed request.
        bearer(
            "a token of characters no token has",
            "!!!.e30.sig",
            400,
            -31401,
        ),
        bearer(
            "a header not JSON",
            &format!("{}.e30.sig", URL_SAFE_NO_PAD.encode("not json")),
            401,
            -31401,
        ),
        bearer(
            "alg none",
            &raw_token(&json!({"alg": "none", "typ": "JWT"}), &good, ""),
            401,
            -31401,
        ),
        bearer(
            "alg None",
            &raw_token(&json!({"alg": "None"}), &good, ""),
            401,
            -31401,
        ),
        bearer(
            "alg missing",
            &raw_token(&json!({"typ": "JWT"}), &good, "x"),
            401,
            -31401,
        ),
        bearer(
            "alg a number",
            &raw_token(&json!({"alg": 5}), &good, "x"),
            401,
            -31401,
        ),
        bearer(
            "HS256 keyed with the public key (algorithm confusion)",
            &hs_confusion,
            401,
            -31401,
        ),
        bearer(
            "RS256 header on an EdDSA signature",
            &raw_token(&json!({"alg": "RS256"}), &good, &ed_sig(&good)),
            401,
            -31401,
        ),
        bearer(
            "a jwk in the header",
            &raw_token(
                &json!({"alg": "EdDSA", "jwk": {"kty": "OKP", "crv": "Ed25519", "x": "AAAA"}}),
                &good,
                &ed_sig(&good),
            ),
            401,
            -31401,
        ),
        bearer(
            "a crit extension",
            &raw_token(
                &json!({"alg": "EdDSA", "crit": ["exp"]}),
                &good,
                &ed_sig(&good),
            ),
            401,
            -31401,
        ),
        bearer("claims forged after signing", &tampered, 401, -31401),
        bearer(
            "an empty signature",
            &raw_token(&json!({"alg": "EdDSA"}), &good, ""),
            401,
            -31401,
        ),
        bearer(
            "expired",
            &issuer.token(&with("exp", json!(now() - 3600))),
            401,
            -31401,
        ),
        bearer("no expiry", &issuer.token(&without("exp")), 401, -31401),
        bearer(
            "expiry a string",
            &issuer.token(&with("exp", json!("tomorrow"))),
            401,
            -31401,
        ),
        bearer(
            "not valid yet",
            &issuer.token(&with("nbf", json!(now() + 3600))),
            401,
            -31401,
        ),
        bearer(
            "another audience",
            &issuer.token(&with("aud", json!("another-agent"))),
            401,
            -31401,
        ),
        bearer("no audience", &issuer.token(&without("aud")), 401, -31401),
        bearer(
            "an audience list without ours",
            &issuer.token(&with("aud", json!(["a", "b"]))),
            401,
            -31401,
        ),
        bearer(
            "another issuer",
            &issuer.token(&with("iss", json!("https://evil.example"))),
            401,
            -31401,
        ),
        bearer("no issuer", &issuer.token(&without("iss")), 401, -31401),
        bearer("no subject", &issuer.token(&without("sub")), 401, -31401),
        bearer(
            "an empty subject",
            &issuer.token(&with("sub", json!(""))),
            401,
            -31401,
        ),
        bearer(
            "a 9 KiB token",
            &format!("{}.{}.x", "a".repeat(4096), "b".repeat(5000)),
            401,
            -31401,
        ),
        bearer("a 64 KiB token", &"a".repeat(64 * 1024), 401, -31401),
        refused(
            "Basic credentials",
            Some("Basic YWxpY2U6cGFzcw=="),
            400,
            -31401,
        ),
        refused("Bearer with no token", Some("Bearer"), 400, -31401),
        refused("Bearer with two tokens", Some("Bearer a b"), 400, -31401),
        bearer("a read-only token reading", &read_only, 200, -32001),
        Case::new(
            "a read-only token cancelling",
            post(
                "/",
                &rpc("CancelTask", r#"{"id":"adv-none"}"#),
                &[&format!("Authorization: Bearer {read_only}")],
            ),
            403,
            Some(-31403),
        ),
        Case::new(
            "a send-only token reading",
            post(
                "/",
                &get_task(),
                &[&format!("Authorization: Bearer {send_only}")],
            ),
            403,
            Some(-31403),
        ),
        Case::new(
            "a token in the query string",
            post(
                &format!("/?access_token={}", issuer.good()),
                &get_task(),
                &[],
            ),
            400,
            Some(-31401),
        ),
        Case::new(
            "two Authorization headers",
            post(
                "/",
                &get_task(),
                &[
                    &format!("Authorization: Bearer {}", issuer.good()),
                    "Authorization: Bearer x",
                ],
            ),
            400,
            Some(-31401),
        ),
        Case::new(
            "a good token on /mcp",
            post(
                "/mcp",
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
                &[&format!("Authorization: Bearer {}", issuer.good())],
            ),
            200,
            Some(0),
        ),
        // The MCP route answers auth refusals -32600 (MCP defines no code for them; the
        // status and the challenge are what clients act on).
        Case::new(
            "no token on /mcp",
            post(
                "/mcp",
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
                &[],
            ),
            401,
            Some(-32600),
        )
        .header("www-authenticate", ""),
        Case::new(
            "the card needs no token",
            crate::adversarial::client::raw(
                "GET /.well-known/agent-card.json HTTP/1.1\nHost: 127.0.0.1\n\n",
                b"",
            ),
            200,
            None,
        ),
    ];
    // A good token passes on every read method (the server answers the method itself).
    for (method, params, code) in [
        ("GetTask", r#"{"id":"adv-none"}"#, -32001),
        ("ListTasks", "{}", 0),
    ] {
        cases.push(Case::new(
            format!("a good token, {method}"),
            post(
                "/",
                &rpc(method, params),
                &[&format!("Authorization: Bearer {}", issuer.good())],
            ),
            200,
            Some(code),
        ));
    }
    cases
}
