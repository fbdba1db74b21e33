//! The A2A 0.3 codec: 0.3 JSON (`serde_json::Value`) to and from the 1.0 model in [`crate::a2a`].
//!
//! 0.3 differs in shape, not in meaning: objects carry a `kind` discriminator (`task`, `message`,
//! `status-update`, `artifact-update`; parts `text`, `file`, `data`), enums are lowercase
//! (`completed`, `user`), files nest under `file` with `name`/`mimeType`/`bytes`|`uri`, a send says
//! `blocking` where 1.0 says `returnImmediately`, the last status update of a stream has
//! `final: true`, and push configs nest under `pushNotificationConfig` with `schemes[]`.
//!
//! Readers are lenient: camelCase and snake_case keys, unknown keys ignored, and 1.0-shaped parts
//! accepted. Writers emit only what 0.3 can carry: a text or data part's `filename`/`mediaType`
//! and a non-object `data` have no 0.3 form and are dropped or passed through as they are.

// One job a file: `read` turns 0.3 JSON into the 1.0 model through the serde shapes in `repr`;
// `write` turns the 1.0 model into 0.3 JSON. This file only says what is public.
mod read;
mod repr;
mod write;

pub use read::{
    artifact_update_from_v03, get_task_params_from_v03, list_push_configs_params_from_v03,
    message_from_v03, part_from_v03, push_config_from_v03, push_config_id_params_from_v03,
    send_params_from_v03, send_response_from_v03, status_update_from_v03, stream_response_from_v03,
    task_from_v03, task_id_params_from_v03,
};
pub use write::{
    artifact_update_to_v03, message_to_v03, part_to_v03, push_config_to_v03, send_response_to_v03,
    status_update_to_v03, stream_response_to_v03, task_to_v03,
};

#[cfg(test)]
mod tests;
