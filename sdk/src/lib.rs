//! agentlog: A2A agent-to-agent work on a durable log.
//!
//! - [`log`]: the log layer, an embedded durable log or Apache Iggy behind one interface.
//! - [`agent`]: callers and an agent's topics.
//! - [`view`]: the task view, rebuilt from the log by following it.
//! - [`retention`]: how long finished tasks are kept; the duration syntax.
//! - [`bridge`]: the stateless A2A bridge: calls become records, answers are folds.
//! - [`mcp`]: the MCP bridge, its sibling: tool calls become tasks on the tools' topics.
//! - [`security`]: ed25519 keys for signed cards and records; edge authentication.
//! - `push` (feature `http`): the push notification sender, a consumer of the log.
//! - `http` (feature `http`): the axum router serving the bridge over HTTP.
//! - `grpc` (feature `grpc`): A2A's gRPC binding, a tonic service over the bridge.
//!
//! The `agentlog` program (the command, and the demo and conformance agents it serves) is
//! the `agentlog-server` crate over this one.

#[macro_use]
mod setters;

pub mod agent;
pub mod bridge;
// Edge auth's shared leaf (both transports); its items are public through `http::auth`.
#[cfg(any(feature = "http", feature = "grpc"))]
mod edge;
pub mod error;
#[cfg(test)]
mod file_cycles;
#[cfg(feature = "grpc")]
pub mod grpc;
pub mod hops;
#[cfg(feature = "http")]
pub mod http;
#[cfg(test)]
mod layering;
pub mod log;
pub mod mcp;
pub mod members;
pub mod placement;
#[cfg(feature = "http")]
pub mod push;
pub mod retention;
pub mod security;
pub mod skill;
pub mod telemetry;
pub mod view;
pub mod worker;

pub use agent::{AgentTopics, Caller};
pub use bridge::{Bridge, BridgeConfig};
pub use error::{Error, ErrorKind, Result};
