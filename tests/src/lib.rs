//! Shared support for agentlog's cross-component tests.
pub mod bridge_suite;
pub mod conformance;
pub mod crash;
pub mod iggy_server;
