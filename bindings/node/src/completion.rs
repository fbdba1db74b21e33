//! A context call's result on its way back to JS, and where it goes: a leaf both the task
//! context (which makes them) and the worker's queue (which carries them) name.

use napi_derive::napi;
use serde_json::Value;

/// A context call's result, as it reaches JS: `error` (an `AgentlogError` reason) or `value`.
#[napi(object)]
#[derive(Debug)]
pub struct Completion {
    /// The call's id (chosen by index.js).
    pub id: u32,
    /// The error, if it failed.
    pub error: Option<String>,
    /// What it returned (a message for `followUp`), if anything.
    #[napi(ts_type = "Message | null")]
    pub value: Option<Value>,
}

/// Where a context's finished calls go: the worker's queue into JS.
pub trait Completions: Send + Sync {
    /// A context call finished.
    fn done(&self, done: Completion);
}
