//! The agentlog contract, shared by every language: log records, the task state dictionary,
//! the A2A and JSON-RPC types, and the fold from records to a task.
//!
//! No I/O and no async live here: everything is a pure function of its input, so the Rust
//! SDK, the Python and TypeScript bindings and the fixture vectors all agree byte for byte.

pub mod a2a;
mod bytes;
mod error;
mod error_code;
pub mod fold;
pub mod ids;
pub mod jcs;
pub mod jsonrpc;
pub mod mcp;
pub mod members;
mod record;
mod task_state;
pub mod timestamp;
pub mod trace;
pub mod v03;

pub use error::WireError;
pub use error_code::{ERROR_DOMAIN, ERROR_INFO_TYPE, ErrorCode, ErrorSpec, RpcError};
pub use record::{
    RECORD_FORMAT_VERSION, Record, RecordBody, RecordHeader, RecordKind, SIGNING_DOMAIN,
};
pub use task_state::{StateCode, TaskState};
