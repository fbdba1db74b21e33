//! Shared support for agentlog's cross-component tests and benchmarks.
pub mod backends;
pub mod bench;
pub mod bridge_suite;
pub mod conformance;
pub mod crash;
pub mod fault_suite;
pub mod iggy_server;
pub mod streamer;
pub mod turn_suite;
