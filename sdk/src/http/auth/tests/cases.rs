//! The refused requests: malformed, invalid and under-scoped credentials.

use super::*;

/// One refused request and what it must get.
pub(super) struct Case {
    pub(super) name: &'static str,
    pub(super) uri: &'static str,
    pub(super) authorization: Vec<String>,
    pub(super) body: String,
    pub(super) status: StatusCode,
    /// The whole `WWW-Authenticate` value, or (ending in `*`) its prefix.
    pub(super) challenge: &'static str,
    pub(super) code: i64,
    /// A fragment of the error message.
    pub(super) says: &'static str,
}

fn refused(name: &'static str, token: Option<String>, status: u16, says: &'static str) -> Case {
    let challenge = match status {
        401 if token.is_none() => "Bearer realm=\"agentlog\"",
        401 => "Bearer realm=\"agentlog\", error=\"invalid_token\", error_description=*",
        400 => "Bearer realm=\"agentlog\", error=\"invalid_request\", error_description=*",
        _ => "",
    };
    Case {
        name,
        uri: "/",
        authorization: token.map(|t| vec![bearer(&t)]).unwrap_or_default(),
        body: get_task("t-1"),
        status: StatusCode::from_u16(status).unwrap(),
        challenge,
        code: -31401,
        says,
    }
}

pub(super) fn cases() -> Vec<Case> {
    let ed_key = EncodingKey::from_ed_pem(&pem("ed.key")).unwrap();
    let other_ed = EncodingKey::from_ed_pem(&pem("ed2.key")).unwrap();
    let rsa_key = EncodingKey::from_rsa_pem(&pem("rsa.key")).unwrap();
    let good = claims("alice", ALL_SCOPES);
    let with = |key: &str, value: Value| {
        let mut c = good.clone();
        c[key] = value;
        c
    };
    let without = |key: &str| {
        let mut c = good.clone();
        c.as_object_mut().unwrap().remove(key);
        c
    };
    let tampered = {
        let token = good_token();
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged =
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims("mallory", ALL_SCOPES)).unwrap());
        parts[1] = &forged;
        parts.join(".")
    };
    let mut cases = vec![
        refused("no credentials", None, 401, "requires credentials"),
        refused(
            "not a JWT",
            Some("abc".into()),
            401,
            "not a JWS compact JWT",
        ),
        refused(
            "two segments",
            Some("a.b".into()),
            401,
            "not a JWS compact JWT",
        ),
        refused(
            "four segments",
            Some("a.b.c.d".into()),
            401,
            "not a JWS compact JWT",
        ),
        refused(
            "five segments (a JWE)",
            Some("a.b.c.d.e".into()),
            401,
            "not a JWS compact JWT",
        ),
        refused(
            "a signed payload that is not JSON",
            Some({
                let key = crate::security::SigningKey::load(&testdata("ed.key")).unwrap();
                let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"EdDSA","typ":"JWT"}"#);
                let message = format!("{header}.{}", URL_SAFE_NO_PAD.encode(b"not json"));
                let signature = URL_SAFE_NO_PAD.encode(key.sign(message.as_bytes()));
                format!("{message}.{signature}")
            }),
            401,
            "malformed",
        ),
        refused(
            "characters no token has",
            Some("!!!.e30.sig".into()),
            400,
            "b64token",
        ),
        refused("two tokens", Some("a b".into()), 400, "b64token"),
        refused(
            "alg none",
            Some(raw_token(&json!({"alg": "none", "typ": "JWT"}), &good, "")),
            401,
            "\"none\" is not accepted",
        ),
        refused(
            "alg missing",
            Some(raw_token(&json!({"typ": "JWT"}), &good, "x")),
            401,
            "is not accepted",
        ),
        refused(
            "HS256 signed with the RSA public key (algorithm confusion)",
            Some(sign(
                Algorithm::HS256,
                &EncodingKey::from_secret(&pem("rsa.pub")).unwrap(),
                None,
                &good,
            )),
            401,
            "\"HS256\" is not accepted",
        ),
        refused(
            "HS512",
            Some(sign(
                Algorithm::HS512,
                &EncodingKey::from_secret(b"k").unwrap(),
                None,
                &good,
            )),
            401,
            "\"HS512\" is not accepted",
        ),
        refused(
            "PS256 (an RSA algorithm not allowed)",
            Some(sign(Algorithm::PS256, &rsa_key, None, &good)),
            401,
            "\"PS256\" is not accepted",
        ),
        refused(
            "RS256 header on an EdDSA signature",
            Some({
                let token = ed(&good);
                let sig = token.rsplit('.').next().unwrap().to_owned();
                raw_token(&json!({"alg": "RS256", "typ": "JWT"}), &good, &sig)
            }),
            401,
            "signature does not verify",
        ),
        refused(
            "wrong audience",
            Some(ed(&with("aud", json!("another-agent")))),
            401,
            "not for this agent (aud)",
        ),
        refused(
            "no audience",
            Some(ed(&without("aud"))),
            401,
            "no \"aud\" claim",
        ),
        refused(
            "wrong issuer",
            Some(ed(&with("iss", json!("https://evil.example")))),
            401,
            "issuer is not trusted",
        ),
        refused(
            "no issuer",
            Some(ed(&without("iss"))),
            401,
            "no \"iss\" claim",
        ),
        refused(
            "no subject",
            Some(ed(&without("sub"))),
            401,
            "no \"sub\" claim",
        ),
        refused(
            "empty subject",
            Some(ed(&with("sub", json!("")))),
            401,
            "sub is empty",
        ),
        refused(
            "expired beyond the leeway",
            Some(ed(&with("exp", json!(now() - 3600)))),
            401,
            "has expired",
        ),
        refused(
            "no expiry",
            Some(ed(&without("exp"))),
            401,
            "no \"exp\" claim",
        ),
        refused(
            "expired just past the leeway",
            Some(ed(&with("exp", json!(now() - 65)))),
            401,
            "has expired",
        ),
        refused(
            "not valid yet",
            Some(ed(&with("nbf", json!(now() + 3600)))),
            401,
            "not valid yet",
        ),
        refused(
            "exp not a number",
            Some(ed(&with("exp", json!("tomorrow")))),
            401,
            "\"exp\" claim",
        ),
        refused(
            "tampered payload",
            Some(tampered),
            401,
            "signature does not verify",
        ),
        refused(
            "signed by an untrusted Ed25519 key",
            Some(sign(Algorithm::EdDSA, &other_ed, None, &good)),
            401,
            "signature does not verify",
        ),
        refused(
            "signature cut short",
            Some({
                let token = good_token();
                token[..token.len() - 10].to_owned()
            }),
            401,
            "signature does not verify",
        ),
        refused(
            "a token too long to look at",
            Some(format!("{}{}", good_token(), "A".repeat(MAX_TOKEN_BYTES))),
            401,
            "longer than 8192 bytes",
        ),
    ];
    // A kid is ignored by keys given without one (PEM files): the signature decides.
    let _ = sign(Algorithm::EdDSA, &ed_key, Some("any"), &good);
    for (name, value, says) in [
        (
            "Basic credentials",
            "Basic YWxpY2U6cHc=",
            "must be `Bearer <token>`",
        ),
        ("empty bearer", "Bearer ", "the bearer token is empty"),
        ("scheme alone", "Bearer", "the bearer token is empty"),
    ] {
        let mut case = refused(name, None, 400, says);
        case.authorization = vec![value.to_owned()];
        cases.push(case);
    }
    let mut twice = refused("two Authorization headers", None, 400, "more than one");
    twice.authorization = vec![bearer(&good_token()), bearer(&good_token())];
    cases.push(twice);
    let mut query = refused(
        "a token in the query string (beside a good header)",
        None,
        400,
        "query string is refused",
    );
    query.uri = "/?access_token=abc";
    query.authorization = vec![bearer(&good_token())];
    cases.push(query);
    let mut bad_json = refused(
        "no credentials and a body that is not JSON",
        None,
        401,
        "requires",
    );
    bad_json.body = "{not json".to_owned();
    cases.push(bad_json);
    // Valid credentials, a scope short: every method names the scope it needs.
    let read_only = ed(&claims("reader", "tasks:read"));
    let send_only = ed(&claims("sender", "tasks:send"));
    for (name, token, body, scope) in [
        ("SendMessage without tasks:send", &read_only, send("hi"), "tasks:send"),
        (
            "SendStreamingMessage without tasks:send",
            &read_only,
            send("hi").replace("\"SendMessage\"", "\"SendStreamingMessage\""),
            "tasks:send",
        ),
        (
            "message/send (0.3) without tasks:send",
            &read_only,
            json!({"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": {
                "messageId": "m03", "role": "user", "kind": "message",
                "parts": [{"kind": "text", "text": "hi"}]}}})
            .to_string(),
            "tasks:send",
        ),
        ("GetTask without tasks:read", &send_only, get_task("t-1"), "tasks:read"),
        (
            "ListTasks without tasks:read",
            &send_only,
            json!({"jsonrpc": "2.0", "id": 4, "method": "ListTasks", "params": {}}).to_string(),
            "tasks:read",
        ),
        (
            "SubscribeToTask without tasks:read",
            &send_only,
            json!({"jsonrpc": "2.0", "id": 5, "method": "SubscribeToTask", "params": {"id": "t-1"}})
                .to_string(),
            "tasks:read",
        ),
        (
            "GetExtendedAgentCard without tasks:read",
            &send_only,
            json!({"jsonrpc": "2.0", "id": 6, "method": "GetExtendedAgentCard", "params": {}})
                .to_string(),
            "tasks:read",
        ),
        (
            "CancelTask without tasks:cancel",
            &read_only,
            json!({"jsonrpc": "2.0", "id": 8, "method": "CancelTask", "params": {"id": "t-1"}})
                .to_string(),
            "tasks:cancel",
        ),
    ] {
        cases.push(Case {
            name,
            uri: "/",
            authorization: vec![bearer(token)],
            body,
            status: StatusCode::FORBIDDEN,
            challenge: match scope {
                "tasks:send" => "Bearer realm=\"agentlog\", error=\"insufficient_scope\", scope=\"tasks:send\"",
                "tasks:read" => "Bearer realm=\"agentlog\", error=\"insufficient_scope\", scope=\"tasks:read\"",
                _ => "Bearer realm=\"agentlog\", error=\"insufficient_scope\", scope=\"tasks:cancel\"",
            },
            code: -31403,
            says: scope,
        });
    }
    cases
}
