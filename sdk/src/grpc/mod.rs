//! A2A's gRPC binding.

pub mod proto;
