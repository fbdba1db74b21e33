//! The keys JWTs are checked against: fixed ones (PEM or JWK files, a shared secret) and
//! those a JWKS URL serves, fetched when first needed and again on an unknown `kid`, at most
//! once per interval (a flood of tokens with made-up key ids costs the issuer nothing).

use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{AlgorithmFamily, DecodingKey};
use tokio::time::Instant;

use super::Refusal;
use crate::error::{Error, ErrorKind, Result};

/// How long a JWKS fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// One key a token may be signed with.
pub(super) struct JwtKey {
    /// The key id, when the key has one (a JWK's `kid`, or one given with a PEM file).
    pub(super) kid: Option<String>,
    pub(super) family: AlgorithmFamily,
    pub(super) key: DecodingKey,
}

impl JwtKey {
    /// A key from a JWK; `None` for one that cannot verify JWTs (encryption keys, unknown
    /// types), which a JWKS may list beside signing keys.
    fn from_jwk(jwk: &Jwk) -> Option<Self> {
        use jsonwebtoken::jwk::{AlgorithmParameters as P, PublicKeyUse};
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            return None;
        }
        let family = match &jwk.algorithm {
            P::RSA(_) => AlgorithmFamily::Rsa,
            P::EllipticCurve(_) => AlgorithmFamily::Ec,
            P::OctetKeyPair(_) => AlgorithmFamily::Ed,
            // A JWKS is public: a symmetric key there would be no secret at all.
            _ => return None,
        };
        let key = DecodingKey::from_jwk(jwk).ok()?;
        Some(Self {
            kid: jwk.common.key_id.clone(),
            family,
            key,
        })
    }
}

/// The keys of a [`JwtAuthenticator`](super::JwtAuthenticator).
pub(super) struct KeySet {
    fixed: Vec<Arc<JwtKey>>,
    remote: Option<Remote>,
}

struct Remote {
    url: String,
    client: reqwest::Client,
    refetch_interval: Duration,
    keys: RwLock<Arc<Vec<Arc<JwtKey>>>>,
    /// When the last fetch started; held while one runs, so fetches never overlap.
    last_fetch: tokio::sync::Mutex<Option<Instant>>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySet")
            .field("fixed", &self.fixed.len())
            .field("jwks_url", &self.remote.as_ref().map(|r| r.url.as_str()))
            .finish()
    }
}

impl KeySet {
    /// Keys from `files` (each a PEM public key, a JWK or a JWKS), a shared `secret` (HS256),
    /// and a JWKS at `jwks_url`.
    pub(super) fn new(
        files: &[std::path::PathBuf],
        secret: Option<Vec<u8>>,
        jwks_url: Option<&str>,
        refetch_interval: Duration,
    ) -> Result<Self> {
        let mut fixed = Vec::new();
        for path in files {
            fixed.extend(read_key_file(path)?.into_iter().map(Arc::new));
        }
        if let Some(secret) = secret {
            let key = DecodingKey::from_secret(&secret)
                .map_err(|e| Error::new(ErrorKind::Config, format!("the JWT secret: {e}")))?;
            fixed.push(Arc::new(JwtKey {
                kid: None,
                family: AlgorithmFamily::Hmac,
                key,
            }));
        }
        let remote = match jwks_url {
            None => None,
            Some(url) => {
                let parsed = url::Url::parse(url).map_err(|e| {
                    Error::new(ErrorKind::Config, format!("bad JWKS URL {url:?}: {e}"))
                })?;
                if !matches!(parsed.scheme(), "https" | "http") {
                    return Err(Error::new(
                        ErrorKind::Config,
                        format!("the JWKS URL {url:?} is not https:// (or http://)"),
                    ));
                }
                let client = reqwest::Client::builder()
                    .timeout(FETCH_TIMEOUT)
                    .build()
                    .map_err(|e| {
                        Error::new(ErrorKind::Config, format!("no HTTP client for JWKS: {e}"))
                    })?;
                Some(Remote {
                    url: url.to_owned(),
                    client,
                    refetch_interval,
                    keys: RwLock::new(Arc::new(Vec::new())),
                    last_fetch: tokio::sync::Mutex::new(None),
                })
            }
        };
        if fixed.is_empty() && remote.is_none() {
            return Err(Error::new(
                ErrorKind::Config,
                "JWT auth needs keys: key files, a JWKS URL or a shared secret",
            ));
        }
        Ok(Self { fixed, remote })
    }

    /// The keys of `family` a token naming `kid` may be signed with, fetching the JWKS when
    /// it was never fetched, or again when `kid` is unknown and the interval allows.
    pub(super) async fn candidates(
        &self,
        kid: Option<&str>,
        family: AlgorithmFamily,
    ) -> Result<Vec<Arc<JwtKey>>, Refusal> {
        let mut refetched = false;
        loop {
            let remote = self.remote_keys();
            let all = || self.fixed.iter().chain(remote.iter());
            let named: Vec<_> = match kid {
                Some(kid) => all()
                    .filter(|k| k.kid.as_deref() == Some(kid))
                    .cloned()
                    .collect(),
                None => all().filter(|k| k.family == family).cloned().collect(),
            };
            if !named.is_empty() {
                return Ok(named.into_iter().filter(|k| k.family == family).collect());
            }
            if !refetched && self.refetch().await? {
                refetched = true;
                continue;
            }
            // Keys given without an id verify tokens whatever `kid` they name.
            let anonymous: Vec<_> = self
                .fixed
                .iter()
                .filter(|k| k.kid.is_none() && k.family == family)
                .cloned()
                .collect();
            if anonymous.is_empty() {
                return Err(Refusal::Invalid(match kid {
                    Some(_) => "the token's key id (kid) names no key this agent trusts".to_owned(),
                    None => "no key this agent trusts is of the token's algorithm".to_owned(),
                }));
            }
            return Ok(anonymous);
        }
    }

    fn remote_keys(&self) -> Arc<Vec<Arc<JwtKey>>> {
        match &self.remote {
            Some(remote) => match remote.keys.read() {
                Ok(keys) => keys.clone(),
                Err(poisoned) => poisoned.into_inner().clone(),
            },
            None => Arc::new(Vec::new()),
        }
    }

    /// Fetch the JWKS again if the interval since the last fetch has passed; whether it
    /// was fetched. A failed fetch keeps the keys fetched before, and is a refusal only when
    /// there are none at all (the issuer is unreachable: retryable).
    async fn refetch(&self) -> Result<bool, Refusal> {
        let Some(remote) = &self.remote else {
            return Ok(false);
        };
        let mut last = remote.last_fetch.lock().await;
        if last.is_some_and(|at| at.elapsed() < remote.refetch_interval) {
            return Ok(false);
        }
        *last = Some(Instant::now());
        match fetch(&remote.client, &remote.url).await {
            Ok(keys) => {
                let keys = Arc::new(keys.into_iter().map(Arc::new).collect());
                match remote.keys.write() {
                    Ok(mut slot) => *slot = keys,
                    Err(poisoned) => *poisoned.into_inner() = keys,
                }
                Ok(true)
            }
            Err(error) => {
                tracing::warn!(url = %remote.url, error = %error.report(), "cannot fetch the JWKS; keeping the keys fetched before");
                if self.remote_keys().is_empty() && self.fixed.is_empty() {
                    return Err(Refusal::Unavailable(
                        "the token issuer's keys cannot be fetched right now".to_owned(),
                    ));
                }
                Ok(false)
            }
        }
    }
}

async fn fetch(client: &reqwest::Client, url: &str) -> Result<Vec<JwtKey>> {
    let failed = |why: String| Error::new(ErrorKind::Unavailable, why);
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| failed(format!("GET {url}: {e}")))?;
    if !response.status().is_success() {
        return Err(failed(format!("GET {url}: HTTP {}", response.status())));
    }
    let text = response
        .text()
        .await
        .map_err(|e| failed(format!("GET {url}: {e}")))?;
    parse_jwks(&text).map_err(|e| failed(format!("{url}: {e}")))
}

/// The signing keys of a JWKS document, skipping members that are not (or cannot be read
/// as) signing keys.
fn parse_jwks(text: &str) -> std::result::Result<Vec<JwtKey>, String> {
    let document: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let members = document
        .get("keys")
        .and_then(serde_json::Value::as_array)
        .ok_or("not a JWKS: no `keys` array")?;
    Ok(members
        .iter()
        .filter_map(|member| serde_json::from_value::<Jwk>(member.clone()).ok())
        .filter_map(|jwk| JwtKey::from_jwk(&jwk))
        .collect())
}

/// The keys of one file: a PEM public key (Ed25519, EC or RSA), a JWK or a JWKS.
fn read_key_file(path: &Path) -> Result<Vec<JwtKey>> {
    let bad = |why: String| Error::new(ErrorKind::Config, format!("{}: {why}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        if trimmed.contains("\"keys\"") {
            let keys = parse_jwks(trimmed).map_err(bad)?;
            return if keys.is_empty() {
                Err(bad("the JWKS holds no signing key".to_owned()))
            } else {
                Ok(keys)
            };
        }
        let jwk: Jwk = serde_json::from_str(trimmed).map_err(|e| bad(e.to_string()))?;
        return JwtKey::from_jwk(&jwk)
            .map(|key| vec![key])
            .ok_or_else(|| bad("not a public signing key (RSA, EC or OKP)".to_owned()));
    }
    if trimmed.contains("PRIVATE KEY") {
        return Err(bad(
            "a private key: give the public key (a private key file must not be shared)".to_owned(),
        ));
    }
    let pem = trimmed.as_bytes();
    let (family, key) = if let Ok(key) = DecodingKey::from_ed_pem(pem) {
        (AlgorithmFamily::Ed, key)
    } else if let Ok(key) = DecodingKey::from_ec_pem(pem) {
        (AlgorithmFamily::Ec, key)
    } else if let Ok(key) = DecodingKey::from_rsa_pem(pem) {
        (AlgorithmFamily::Rsa, key)
    } else {
        return Err(bad(
            "not a public key in PEM (Ed25519, EC P-256 or RSA), a JWK or a JWKS".to_owned(),
        ));
    };
    Ok(vec![JwtKey {
        kid: None,
        family,
        key,
    }])
}
