//! The flags of signed records and the hop guard: `--signing-key`, `--trust` (serve, worker),
//! `--max-hops` and `--bridge-id` (serve).

use std::path::PathBuf;

use clap::Args;

use super::{CliError, CliResult};
use agentlog::hops::DEFAULT_MAX_HOPS;
use agentlog::security::{RecordSigner, RecordVerifier, Trust};

/// `serve`'s signing, trust and hop flags.
#[derive(Debug, Args)]
pub(super) struct ServeSigningArgs {
    /// Sign with this ed25519 private key (PKCS#8 PEM, as `agentlog keygen` writes). Repeatable:
    /// each key adds one JWS signature to the agent card (A2A §8.4; two while rotating keys);
    /// the first also signs the records this bridge writes (and those of the --demo worker).
    /// Default: the card and the records are unsigned.
    #[arg(long = "signing-key", value_name = "FILE")]
    pub(super) signing_key: Vec<PathBuf>,

    /// A trust file (JSON: the keys trusted and the record kinds each may write; see
    /// skills/security/records.md): the bridge then ignores, and counts on /metrics as
    /// agentlog_records_rejected_total{reason}, every record not signed by a trusted key
    /// allowed its kind. Default: every record counts.
    #[arg(long, value_name = "FILE")]
    pub(super) trust: Option<PathBuf>,

    /// The most bridges a call may go through, this one included (the hop guard): a call that
    /// arrives with a longer path in its message metadata (`agentlog.hops`), or with this
    /// bridge's id on it already, is refused (-32600, kind loop_detected), nothing written.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_HOPS)]
    pub(super) max_hops: u8,

    /// This bridge's id on call paths (`agentlog.hops`). Default: the --agent name, the same
    /// for every replica of the agent.
    #[arg(long, value_name = "ID")]
    pub(super) bridge_id: Option<String>,
}

impl ServeSigningArgs {
    /// The verifier of --trust.
    pub(super) fn verifier(&self) -> CliResult<Option<RecordVerifier>> {
        self.trust.as_deref().map(verifier).transpose()
    }
}

/// `worker`'s signing and trust flags.
#[derive(Debug, Args)]
pub(super) struct WorkerSigningArgs {
    /// A PKCS#8 PEM private key (`agentlog keygen --out FILE`) that signs every record this
    /// worker writes (claims, statuses, artifacts, terminals). Default: unsigned.
    #[arg(long = "signing-key", value_name = "FILE")]
    pub(super) signing_key: Option<PathBuf>,

    /// A trust file (see `serve --trust`): the worker runs only commands signed by a trusted
    /// key allowed to write them, and its view ignores the other records (counted on
    /// --metrics-listen as agentlog_records_rejected_total{reason}).
    #[arg(long, value_name = "FILE")]
    pub(super) trust: Option<PathBuf>,
}

impl WorkerSigningArgs {
    pub(super) fn record_signer(&self) -> CliResult<Option<RecordSigner>> {
        self.signing_key.as_deref().map(signer).transpose()
    }

    pub(super) fn verifier(&self) -> CliResult<Option<RecordVerifier>> {
        self.trust.as_deref().map(verifier).transpose()
    }
}

pub(super) fn signer(path: &std::path::Path) -> CliResult<RecordSigner> {
    RecordSigner::load(path).map_err(|e| CliError::msg(format!("--signing-key: {e}")))
}

pub(super) fn verifier(path: &std::path::Path) -> CliResult<RecordVerifier> {
    let trust = Trust::load(path).map_err(|e| CliError::msg(format!("--trust: {e}")))?;
    if trust.is_empty() {
        tracing::warn!(
            trust = %path.display(),
            "the trust file lists no key: every record will be ignored"
        );
    }
    Ok(RecordVerifier::new(trust))
}
