//! The one error type of the wire crate.

use strum::IntoStaticStr;

/// Why bytes or JSON could not be read as part of the contract.
///
/// [`WireError::kind`] is a stable snake_case name, the `error` the fixture vectors expect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[non_exhaustive]
pub enum WireError {
    /// A task state code this version does not know.
    #[error("unknown task state code {0}")]
    UnknownStateCode(u8),
    /// A record format version this version does not read.
    #[error("unknown record format version {0}")]
    UnknownVersion(u8),
    /// A record kind code this version does not know.
    #[error("unknown record kind code {0}")]
    UnknownKind(u8),
    /// The bytes end before the field does.
    #[error("record truncated: {field} needs {needed} more bytes at offset {at}")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Where it starts.
        at: usize,
        /// How many bytes were missing.
        needed: usize,
    },
    /// Bytes follow the end of the record.
    #[error("{count} trailing bytes after the record")]
    TrailingBytes {
        /// How many.
        count: usize,
    },
    /// A text field is not UTF-8.
    #[error("field {field} is not valid UTF-8")]
    InvalidUtf8 {
        /// The field.
        field: &'static str,
    },
    /// A field is longer than its length prefix can say.
    #[error("field {field} is {len} bytes, more than the {max} its length prefix allows")]
    FieldTooLong {
        /// The field.
        field: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A field's value breaks a rule of the record format.
    #[error("invalid {field}: {reason}")]
    InvalidField {
        /// The field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// JSON that does not match the A2A shape it should have.
    #[error("invalid {what}: {reason}")]
    InvalidJson {
        /// What was being read (`SendMessageRequest`, `message`, ...).
        what: &'static str,
        /// serde's explanation, which names the field.
        reason: String,
    },
}

impl WireError {
    /// Stable snake_case name of the variant.
    pub fn kind(&self) -> &'static str {
        self.into()
    }
}
