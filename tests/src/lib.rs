//! Shared support for agentlog's cross-component tests.
pub mod conformance;
pub mod crash;
pub mod iggy_server;
