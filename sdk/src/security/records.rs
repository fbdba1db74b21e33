//! Signed records: who may write what on an agent's topics.
//!
//! A [`RecordSigner`] (an ed25519 [`SigningKey`]) signs every record a bridge or a worker
//! writes: the key id goes into the header, the signature of [`Record::signing_payload`]
//! after the body. A [`Trust`] says which keys are trusted and which record kinds each may
//! write (a bridge's: commands, continues, cancel requests; a worker's: claims, statuses,
//! artifacts, terminals); a [`RecordVerifier`] checks records against it where they enter a
//! view or a worker, and counts what it turns away by [`Rejection`] reason.
//!
//! The trust file (`--trust FILE`) is JSON:
//!
//! ```json
//! {"keys": [
//!   {"role": "bridge", "publicKeyFile": "bridge.pem.pub"},
//!   {"role": "worker", "jwk": {"kty": "OKP", "crv": "Ed25519", "x": "..."}},
//!   {"kinds": ["terminal"], "publicKey": "-----BEGIN PUBLIC KEY-----\n...", "retired": true}
//! ]}
//! ```
//!
//! Each key gives exactly one of `publicKeyFile` (an SPKI PEM or JWK file, relative to the
//! trust file's directory), `publicKey` (SPKI PEM or JWK text) or `jwk` (a JWK object); exactly
//! one of `role` (`bridge` or `worker`) or `kinds` (record kind names, [`kind_name`]); and
//! optionally `kid` (default: the key's own, its RFC 7638 thumbprint or a JWK's `kid`) and
//! `retired` (default `false`: records signed by a retired key are rejected). The rules are
//! in `skills/security/records.md`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agentlog_wire::{Record, RecordKind};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::keys::{SigningKey, VerifyingKey};
use crate::error::{Error, ErrorKind, Result};

/// Signs the records one writer (a bridge or a worker) appends. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RecordSigner {
    key: Arc<SigningKey>,
    public: [u8; 32],
}

impl RecordSigner {
    /// A signer with `key`; its key id is the one records name.
    pub fn new(key: SigningKey) -> Self {
        let public = *key.verifying_key().as_bytes();
        Self {
            key: Arc::new(key),
            public,
        }
    }

    /// A signer with the PKCS#8 PEM private key in `path` (as `agentlog keygen` writes).
    pub fn load(path: &Path) -> Result<Self> {
        SigningKey::load(path).map(Self::new)
    }

    /// The key id written into signed records.
    pub fn key_id(&self) -> &str {
        self.key.kid()
    }

    /// Sign `record` in place: set its key id, then its signature of the signing payload.
    pub fn sign(&self, record: &mut Record) -> Result<()> {
        record.header.key_id = self.key.kid().to_owned();
        record.header.signature.clear();
        let payload = record.signing_payload().map_err(encode_error)?;
        record.header.signature = self.key.sign(&payload).to_vec();
        Ok(())
    }

    /// The public half of the signer's key.
    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// The encoding of `record` signed (the record itself is left as it is).
    pub fn encode(&self, record: &Record) -> Result<Vec<u8>> {
        let mut signed = record.clone();
        self.sign(&mut signed)?;
        signed.encode().map_err(encode_error)
    }
}

fn encode_error(error: agentlog_wire::WireError) -> Error {
    Error::new(ErrorKind::InvalidParams, "the record cannot be encoded").with_source(error)
}

/// Who writes a kind of record: what a trusted key may be allowed to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A bridge: commands, continues and cancel requests, and the push records (configs, their
    /// deletions, and the dead letters of the push sender, which runs with the bridge's key);
    /// and membership records (`agentlog_wire::members`, [`Trust::check_member`]).
    Bridge,
    /// A worker: claims, status updates, artifact updates and terminals.
    Worker,
}

impl Role {
    /// The record kinds this role writes.
    pub const fn kinds(self) -> &'static [RecordKind] {
        match self {
            Role::Bridge => &[
                RecordKind::Command,
                RecordKind::Continue,
                RecordKind::CancelRequest,
                RecordKind::PushConfig,
                RecordKind::PushConfigDeleted,
                RecordKind::PushDeadLetter,
                RecordKind::PushProgress,
            ],
            Role::Worker => &[
                RecordKind::Claim,
                RecordKind::StatusUpdate,
                RecordKind::ArtifactUpdate,
                RecordKind::Terminal,
                RecordKind::Reply,
            ],
        }
    }
}

/// The name of a record kind in a trust file's `kinds` (snake case).
pub const fn kind_name(kind: RecordKind) -> &'static str {
    match kind {
        RecordKind::Command => "command",
        RecordKind::Continue => "continue",
        RecordKind::CancelRequest => "cancel_request",
        RecordKind::StatusUpdate => "status_update",
        RecordKind::ArtifactUpdate => "artifact_update",
        RecordKind::Terminal => "terminal",
        RecordKind::Claim => "claim",
        RecordKind::Reply => "reply",
        RecordKind::PushConfig => "push_config",
        RecordKind::PushConfigDeleted => "push_config_deleted",
        RecordKind::PushDeadLetter => "push_dead_letter",
        RecordKind::PushProgress => "push_progress",
    }
}

/// Every record kind.
const KINDS: [RecordKind; 12] = [
    RecordKind::Command,
    RecordKind::Continue,
    RecordKind::CancelRequest,
    RecordKind::StatusUpdate,
    RecordKind::ArtifactUpdate,
    RecordKind::Terminal,
    RecordKind::Claim,
    RecordKind::Reply,
    RecordKind::PushConfig,
    RecordKind::PushConfigDeleted,
    RecordKind::PushDeadLetter,
    RecordKind::PushProgress,
];

fn kind_named(name: &str) -> Option<RecordKind> {
    KINDS.iter().copied().find(|k| kind_name(*k) == name)
}

/// Why a record was turned away. The checks run in this order, cheapest first: the
/// signature (the costly check) is verified only for a known, current key allowed the kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rejection {
    /// No key id, or no signature.
    Unsigned,
    /// Signed by a key the trust does not know.
    UnknownKey,
    /// Signed by a key the trust lists as retired.
    RetiredKey,
    /// A known key, but of a kind it may not write (a bridge's key on a terminal).
    KindNotAllowed,
    /// The signature does not verify: the record was changed, or signed by another key.
    BadSignature,
}

impl Rejection {
    /// Every reason, in check order.
    pub const ALL: [Rejection; 5] = [
        Rejection::Unsigned,
        Rejection::UnknownKey,
        Rejection::RetiredKey,
        Rejection::KindNotAllowed,
        Rejection::BadSignature,
    ];

    /// The stable snake-case name (the metric's `reason` label, the fixtures' verdicts).
    pub const fn as_str(self) -> &'static str {
        match self {
            Rejection::Unsigned => "unsigned",
            Rejection::UnknownKey => "unknown_key",
            Rejection::RetiredKey => "retired_key",
            Rejection::KindNotAllowed => "kind_not_allowed",
            Rejection::BadSignature => "bad_signature",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A key the trust knows.
#[derive(Debug, Clone)]
struct TrustedKey {
    key: VerifyingKey,
    /// Bit `code` set: the key may write kind `code`.
    kinds: u32,
    /// Whether the key may write membership records ([`Trust::check_member`]).
    members: bool,
    retired: bool,
}

/// Which keys are trusted, and which record kinds each may write.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    keys: HashMap<String, TrustedKey>,
}

impl Trust {
    /// A trust that knows no key (every signed record is from an unknown key).
    pub fn new() -> Self {
        Self::default()
    }

    /// Trust `key` (under its key id) to write the kinds of `role`.
    pub fn with_role(self, key: VerifyingKey, role: Role) -> Self {
        let kid = key.kid().to_owned();
        let mut trust = self.with_kinds(key, role.kinds());
        if role == Role::Bridge
            && let Some(key) = trust.keys.get_mut(&kid)
        {
            // Bridges say who they are on `<agent>.members`.
            key.members = true;
        }
        trust
    }

    /// Trust `key` (under its key id) to write `kinds`.
    pub fn with_kinds(mut self, key: VerifyingKey, kinds: &[RecordKind]) -> Self {
        let kinds = kinds.iter().fold(0u32, |bits, k| bits | 1 << k.code());
        self.keys.insert(
            key.kid().to_owned(),
            TrustedKey {
                key,
                kinds,
                members: false,
                retired: false,
            },
        );
        self
    }

    /// Mark the key `kid` retired: records it signed are rejected from now on.
    pub fn retire(mut self, kid: &str) -> Self {
        if let Some(key) = self.keys.get_mut(kid) {
            key.retired = true;
        }
        self
    }

    /// The number of keys known (retired ones included).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is known.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Read a trust file (the format is in this module's documentation).
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            Error::new(
                ErrorKind::Config,
                format!("cannot read the trust file {}: {error}", path.display()),
            )
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, base).map_err(|error| {
            Error::new(
                ErrorKind::Config,
                format!("trust file {}: {}", path.display(), error.message()),
            )
        })
    }

    /// Parse a trust file's text; `publicKeyFile`s are relative to `base`.
    pub fn parse(text: &str, base: &Path) -> Result<Self> {
        let file: TrustFile = serde_json::from_str(text)
            .map_err(|error| config(format!("not a trust file: {error}")))?;
        let mut trust = Trust::new();
        for (i, entry) in file.keys.into_iter().enumerate() {
            let (kid, key) = entry
                .load(base)
                .map_err(|e| config(format!("keys[{i}]: {}", e.message())))?;
            if trust.keys.contains_key(&kid) {
                return Err(config(format!("keys[{i}]: key id {kid} is listed twice")));
            }
            trust.keys.insert(kid, key);
        }
        Ok(trust)
    }

    /// Whether `record` is signed by a current key of this trust allowed its kind, with a
    /// signature that holds.
    pub fn check(&self, record: &Record) -> std::result::Result<(), Rejection> {
        let header = &record.header;
        if !record.is_signed() {
            return Err(Rejection::Unsigned);
        }
        let key = self.allowed(&header.key_id, record.body.kind())?;
        let payload = record
            .signing_payload()
            .map_err(|_| Rejection::BadSignature)?;
        if key.key.verify(&payload, &header.signature) {
            Ok(())
        } else {
            Err(Rejection::BadSignature)
        }
    }

    /// The key `kid` if this trust knows it, it is not retired and it may write `kind`.
    fn allowed(&self, kid: &str, kind: RecordKind) -> std::result::Result<&TrustedKey, Rejection> {
        let key = self.keys.get(kid).ok_or(Rejection::UnknownKey)?;
        if key.retired {
            return Err(Rejection::RetiredKey);
        }
        if key.kinds & (1 << kind.code()) == 0 {
            return Err(Rejection::KindNotAllowed);
        }
        Ok(key)
    }
}

fn config(message: String) -> Error {
    Error::new(ErrorKind::Config, message)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustFile {
    keys: Vec<KeyEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KeyEntry {
    kid: Option<String>,
    public_key_file: Option<PathBuf>,
    public_key: Option<String>,
    jwk: Option<serde_json::Value>,
    role: Option<String>,
    kinds: Option<Vec<String>>,
    #[serde(default)]
    retired: bool,
}

impl KeyEntry {
    fn load(self, base: &Path) -> Result<(String, TrustedKey)> {
        let key = match (self.public_key_file, self.public_key, self.jwk) {
            (Some(file), None, None) => VerifyingKey::load(&base.join(file))?,
            (None, Some(text), None) => VerifyingKey::parse(&text)?,
            (None, None, Some(jwk)) => VerifyingKey::parse(&jwk.to_string())?,
            _ => {
                return Err(config(
                    "give exactly one of publicKeyFile, publicKey or jwk".to_owned(),
                ));
            }
        };
        let members = match (self.role.as_deref(), &self.kinds) {
            (Some("bridge"), _) => true,
            (None, Some(names)) => names.iter().any(|n| n == members::KIND_NAME),
            _ => false,
        };
        let kinds: Vec<RecordKind> = match (self.role.as_deref(), self.kinds) {
            (Some("bridge"), None) => Role::Bridge.kinds().to_vec(),
            (Some("worker"), None) => Role::Worker.kinds().to_vec(),
            (Some(other), None) => {
                return Err(config(format!(
                    "role {other:?}: a role is \"bridge\" or \"worker\""
                )));
            }
            (None, Some(names)) => names
                .iter()
                .filter(|name| *name != members::KIND_NAME)
                .map(|name| {
                    kind_named(name).ok_or_else(|| {
                        config(format!(
                            "unknown record kind {name:?} (one of command, continue, cancel_request, status_update, artifact_update, terminal, claim, reply, push_config, push_config_deleted, push_dead_letter, push_progress, members)"
                        ))
                    })
                })
                .collect::<Result<_>>()?,
            _ => return Err(config("give exactly one of role or kinds".to_owned())),
        };
        let key = match self.kid {
            Some(kid) => key.with_kid(kid),
            None => key,
        };
        let kid = key.kid().to_owned();
        let trusted = Trust::new().with_kinds(key, &kinds);
        let mut entry = trusted
            .keys
            .into_values()
            .next()
            .ok_or_else(|| Error::new(ErrorKind::Internal, "a key vanished"))?;
        entry.retired = self.retired;
        entry.members = members;
        Ok((kid, entry))
    }
}

/// Checks records against a [`Trust`] where they enter a view or a worker, and counts what
/// it turns away. Cheap to clone: clones share the counts and the memory of admitted records.
///
/// It remembers the SHA-256 of the encodings it admitted lately ([`ADMITTED_MEMORY`] of
/// them), and of the records its process signed itself ([`remember_own`](Self::remember_own)):
/// the same bytes again (a command's copy on the commands topic, a process's own append read
/// back by its view) are admitted without a second signature check (a hash lookup instead
/// of a verification). The verdict on given bytes under one trust never changes, so this decides the same.
#[derive(Debug, Clone)]
pub struct RecordVerifier {
    inner: Arc<VerifierInner>,
}

/// How many admitted encodings a verifier remembers.
pub const ADMITTED_MEMORY: usize = 4096;

#[derive(Debug)]
struct VerifierInner {
    trust: Trust,
    rejected: [AtomicU64; 5],
    admitted: Mutex<Admitted>,
}

/// Digests of admitted encodings, the oldest forgotten first.
#[derive(Debug, Default)]
struct Admitted {
    set: HashSet<[u8; 32]>,
    order: VecDeque<[u8; 32]>,
}

impl Admitted {
    fn insert(&mut self, digest: [u8; 32]) {
        if !self.set.insert(digest) {
            return;
        }
        self.order.push_back(digest);
        if self.order.len() > ADMITTED_MEMORY
            && let Some(old) = self.order.pop_front()
        {
            self.set.remove(&old);
        }
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl RecordVerifier {
    /// A verifier of `trust`.
    pub fn new(trust: Trust) -> Self {
        Self {
            inner: Arc::new(VerifierInner {
                trust,
                rejected: Default::default(),
                admitted: Mutex::default(),
            }),
        }
    }

    fn admitted(&self) -> std::sync::MutexGuard<'_, Admitted> {
        self.inner
            .admitted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// [`admit`](Self::admit) for `record` decoded from `bytes`: bytes admitted before are
    /// admitted again without checking the signature.
    pub fn admit_encoded(
        &self,
        bytes: &[u8],
        record: &Record,
        topic: &dyn fmt::Display,
        partition: u32,
        offset: u64,
    ) -> bool {
        let digest = digest(bytes);
        if self.admitted().set.contains(&digest) {
            return true;
        }
        let admitted = self.admit(record, topic, partition, offset);
        if admitted {
            self.admitted().insert(digest);
        }
        admitted
    }

    /// Remember `bytes`, a record of `kind` that this process's `signer` has just signed, as
    /// admitted if this trust allows the signer's key that kind (the signature holds: the
    /// signer made it). Its view then does not check it again when it reads it back.
    pub fn remember_own(&self, bytes: &[u8], kind: RecordKind, signer: &RecordSigner) {
        let same_key = self
            .inner
            .trust
            .allowed(signer.key_id(), kind)
            .is_ok_and(|key| *key.key.as_bytes() == signer.public);
        if same_key {
            self.admitted().insert(digest(bytes));
        }
    }

    /// The trust checked against.
    pub fn trust(&self) -> &Trust {
        &self.inner.trust
    }

    /// [`Trust::check`], counting nothing.
    pub fn check(&self, record: &Record) -> std::result::Result<(), Rejection> {
        self.inner.trust.check(record)
    }

    /// Whether to let `record` (at `offset` of `partition` of `topic`) in: if not, it is
    /// counted under its reason and a warning names its position.
    pub fn admit(
        &self,
        record: &Record,
        topic: &dyn fmt::Display,
        partition: u32,
        offset: u64,
    ) -> bool {
        match self.check(record) {
            Ok(()) => true,
            Err(reason) => {
                self.inner.rejected[reason.index()].fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    topic = %topic, partition, offset, %reason,
                    key_id = %record.header.key_id,
                    kind = kind_name(record.body.kind()),
                    task_id = %record.header.task_id,
                    "ignoring a record the trust does not allow"
                );
                false
            }
        }
    }

    /// How many records were turned away, by reason (every reason, in check order).
    pub fn rejected(&self) -> [(Rejection, u64); 5] {
        Rejection::ALL.map(|r| (r, self.inner.rejected[r.index()].load(Ordering::Relaxed)))
    }

    /// How many records were turned away in all.
    pub fn rejected_total(&self) -> u64 {
        self.rejected().iter().map(|(_, n)| n).sum()
    }
}

/// Membership records (`wire::members`) signed and checked by the same keys.
mod members;

#[cfg(test)]
mod tests;
