//! Property tests of bearer-token checking: a token is the first thing of a request the edge
//! reads, before anything vouches for it, so no token may panic the check, and only a token
//! signed by a trusted key with the algorithm its header names may pass.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::LazyLock;

use jsonwebtoken::EncodingKey;
use proptest::prelude::*;
use serde_json::json;

use super::*;

/// Bounded so the properties run in the ordinary test pass; no regression files are written
/// into the repository.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const ISSUER: &str = "https://issuer.example";
const AUDIENCE: &str = "agent-t";

fn testdata(name: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/http/auth/testdata")
        .join(name)
}

/// The default algorithms (EdDSA, ES256, RS256; no HS256: no secret) with one public key of
/// each, no JWKS URL: nothing is fetched.
static AUTHENTICATOR: LazyLock<JwtAuthenticator> = LazyLock::new(|| {
    let mut config = JwtConfig::new(ISSUER, AUDIENCE);
    config.keys = vec![testdata("ed.pub"), testdata("ec.pub"), testdata("rsa.pub")];
    JwtAuthenticator::new(&config).expect("the test keys load")
});

/// The trusted keys' private halves, by the algorithm name they sign with.
static SIGNERS: LazyLock<Vec<(&'static str, Algorithm, EncodingKey)>> = LazyLock::new(|| {
    let pem = |name: &str| std::fs::read(testdata(name)).expect("a test key");
    vec![
        (
            "EdDSA",
            Algorithm::EdDSA,
            EncodingKey::from_ed_pem(&pem("ed.key")).unwrap(),
        ),
        (
            "ES256",
            Algorithm::ES256,
            EncodingKey::from_ec_pem(&pem("ec.key")).unwrap(),
        ),
        (
            "RS256",
            Algorithm::RS256,
            EncodingKey::from_rsa_pem(&pem("rsa.key")).unwrap(),
        ),
    ]
});

/// Check `token` as the edge does.
fn verdict(token: &str) -> std::result::Result<Identity, Refusal> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(AUTHENTICATOR.verify(token))
}

fn part(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Claims that pass, so that only the header and the signature decide.
fn claims() -> String {
    let exp = crate::retention::now_ms() / 1000 + 600;
    part(
        json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": exp, "scope": "tasks:read"})
            .to_string()
            .as_bytes(),
    )
}

/// Sign `header.claims` with the trusted key at `signer` (an index into [`SIGNERS`]).
fn signed(header: &str, claims: &str, signer: usize) -> String {
    let (_, algorithm, key) = &SIGNERS[signer];
    let message = format!("{header}.{claims}");
    let signature = jsonwebtoken::crypto::sign(message.as_bytes(), key, *algorithm).unwrap();
    format!("{message}.{signature}")
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        proptest::collection::vec(".{0,6}".prop_map(Value::String), 0..3).prop_map(Value::Array),
        Just(json!({"kty": "OKP", "crv": "Ed25519", "x": "AAAA"})),
    ]
}

/// `alg` as an attacker writes it: the unsigned `none` in its spellings, an algorithm not
/// enabled here, one that is, a near miss, or not a string at all; often `signer`, the one
/// that signed, so that accepted tokens are among the cases.
fn alg(signer: &'static str) -> impl Strategy<Value = Option<Value>> {
    let names = [
        "none",
        "None",
        "NONE",
        "nOnE",
        "HS256",
        "HS512",
        "RS256",
        "ES256",
        "EdDSA",
        "eddsa",
        "EDDSA",
        "PS256",
        "RS384",
        "ES384",
        " EdDSA",
        "EdDSA\u{0}",
        "",
    ];
    prop_oneof![
        4 => Just(Some(Value::from(signer))),
        4 => proptest::sample::select(names.to_vec()).prop_map(|n| Some(Value::from(n))),
        1 => json_leaf().prop_map(Some),
        1 => Just(None),
    ]
}

/// A header object: `alg`, maybe a `kid` of any type, members a JWS header may have (with
/// any value) and maybe a huge or deeply nested member.
fn header(signer: &'static str) -> impl Strategy<Value = String> {
    let member = proptest::sample::select(vec![
        "typ", "cty", "jku", "jwk", "x5u", "x5c", "x5t", "crit", "b64", "zip", "alg", "x",
    ]);
    (
        alg(signer),
        proptest::option::of(json_leaf()),
        prop_oneof![
            Just(Vec::new()),
            proptest::collection::vec((member, json_leaf()), 1..3)
        ],
        proptest::sample::select(vec![0usize, 0, 0, 64, 70_000, 150_000]),
        proptest::sample::select(vec![0usize, 0, 0, 3, 200]),
    )
        .prop_map(|(alg, kid, members, huge, depth)| {
            let mut members: Vec<String> = members
                .into_iter()
                .map(|(name, value)| format!("{}:{value}", Value::from(name)))
                .collect();
            if let Some(alg) = alg {
                members.insert(0, format!(r#""alg":{alg}"#));
            }
            if let Some(kid) = kid {
                members.push(format!(r#""kid":{kid}"#));
            }
            if huge > 0 {
                members.push(format!(r#""pad":"{}""#, "a".repeat(huge)));
            }
            if depth > 0 {
                members.push(format!(
                    r#""deep":{}0{}"#,
                    "[".repeat(depth),
                    "]".repeat(depth)
                ));
            }
            format!("{{{}}}", members.join(","))
        })
}

/// The `alg` the edge reads in `header` (of duplicates, the last).
fn alg_of(header: &str) -> Option<Value> {
    serde_json::from_str::<Map<String, Value>>(header)
        .ok()?
        .remove("alg")
}

/// Ways to break a header segment: change, insert or remove a character, or re-encode the
/// same JSON with a space in it.
#[derive(Debug, Clone)]
enum Mangle {
    Replace(usize, char),
    Insert(usize, char),
    Remove(usize),
    Respell,
}

fn mangle() -> impl Strategy<Value = Mangle> {
    let c = prop_oneof![
        4 => proptest::char::ranges(vec!['A'..='Z', 'a'..='z', '0'..='9'].into()),
        1 => proptest::sample::select(vec!['-', '_', '=', '+', '/', '.', ' ', 'é']),
    ];
    prop_oneof![
        (any::<usize>(), c.clone()).prop_map(|(at, c)| Mangle::Replace(at, c)),
        (any::<usize>(), c).prop_map(|(at, c)| Mangle::Insert(at, c)),
        any::<usize>().prop_map(Mangle::Remove),
        Just(Mangle::Respell),
    ]
}

fn apply(header: &str, mangle: &Mangle) -> Option<String> {
    let mut chars: Vec<char> = header.chars().collect();
    match *mangle {
        Mangle::Replace(at, c) => {
            let at = at % chars.len();
            if chars[at] == c {
                return None;
            }
            chars[at] = c;
        }
        Mangle::Insert(at, c) => chars.insert(at % (chars.len() + 1), c),
        Mangle::Remove(at) => {
            chars.remove(at % chars.len());
        }
        Mangle::Respell => {
            let json = URL_SAFE_NO_PAD.decode(header).ok()?;
            let value: Value = serde_json::from_slice(&json).ok()?;
            return Some(part(format!(" {value}").as_bytes()));
        }
    }
    Some(chars.into_iter().collect())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_token_is_refused_as_invalid(
        token in prop_oneof![
            any::<String>(),
            "[A-Za-z0-9_\\-.=+/ ]{0,80}",
            ("[A-Za-z0-9_\\-]{0,40}", "[A-Za-z0-9_\\-]{0,40}", "[A-Za-z0-9_\\-]{0,90}")
                .prop_map(|(h, c, s)| format!("{h}.{c}.{s}")),
        ],
    ) {
        let got = verdict(&token);
        prop_assert!(matches!(got, Err(Refusal::Invalid(_))), "{token:?}: {got:?}");
    }

    #[test]
    fn a_header_passes_only_naming_the_algorithm_that_signed(
        (signer, header) in (0..3usize).prop_flat_map(|i| (Just(i), header(SIGNERS[i].0))),
        signature in prop_oneof![
            2 => Just(None),
            1 => proptest::collection::vec(any::<u8>(), 0..80).prop_map(Some),
        ],
    ) {
        let (name, _, _) = &SIGNERS[signer];
        let claims = claims();
        let token = match &signature {
            None => signed(&part(header.as_bytes()), &claims, signer),
            Some(bytes) => format!("{}.{claims}.{}", part(header.as_bytes()), part(bytes)),
        };
        let got = verdict(&token);
        let short = &header[..header.len().min(200)];
        match got {
            Ok(identity) => {
                prop_assert!(signature.is_none(), "{short}: a made-up signature passed");
                prop_assert_eq!(alg_of(&header), Some(Value::from(*name)), "{}", short);
                prop_assert_eq!(identity.caller.principal, format!("{ISSUER}#alice"));
            }
            Err(refusal) => {
                prop_assert!(matches!(refusal, Refusal::Invalid(_)), "{short}: {refusal:?}");
            }
        }
    }

    #[test]
    fn a_mangled_header_is_never_accepted(
        signer in 0..3usize,
        kid in proptest::option::of("[a-z0-9]{1,8}"),
        mangle in mangle(),
    ) {
        let (name, _, _) = &SIGNERS[signer];
        let mut header = json!({"alg": name, "typ": "JWT"});
        if let Some(kid) = &kid {
            header["kid"] = Value::from(kid.as_str());
        }
        let header = part(header.to_string().as_bytes());
        let claims = claims();
        let token = signed(&header, &claims, signer);
        // The control: unmangled, the token passes (else the property proves nothing).
        prop_assert!(verdict(&token).is_ok(), "{token}");
        let signature = token.rsplit('.').next().unwrap_or_default();
        let Some(mangled) = apply(&header, &mangle) else {
            return Ok(());
        };
        let token = format!("{mangled}.{claims}.{signature}");
        let got = verdict(&token);
        prop_assert!(matches!(got, Err(Refusal::Invalid(_))), "{mangle:?}: {token}: {got:?}");
    }
}
