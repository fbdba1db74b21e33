//! What the log trusts: ed25519 keys for signed cards and records. (Who may call over HTTP is
//! the edge authentication of `http::auth`, feature `http`.)
//!
//! - [`keys`]: key pairs on disk (`agentlog keygen`), key ids, signing and verifying.
//! - [`card_signing`]: signed agent cards (`serve --signing-key`, `agentlog card --verify`).
//! - [`records`]: signed records: the signer of a writer, the trust file, the verifier.
//! - [`destinations`]: where push notifications may go (the guard against request forgery).
//! - [`peers`]: bridges sharing an agent's partitions: who owns which, and the mark on a request
//!   one forwards to another.
//!
//! The rules (what is trusted, what is checked where, how to rotate keys) are in
//! `skills/security/SKILL.md`.

pub mod card_signing;
pub mod destinations;
pub mod keys;
pub mod owners;
pub mod peers;
pub mod records;

pub use card_signing::{sign_card, verify_card};
pub use destinations::Destinations;
pub use keys::{SigningKey, VerifyingKey};
pub use records::{RecordSigner, RecordVerifier, Rejection, Role, Trust};
