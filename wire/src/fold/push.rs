//! Fold rule 16: a task's push notification configs. The push records (a config registered,
//! deleted, a notification given up) change nothing of the task; a reader folds them, with
//! the configs that arrive inline on a client message, into [`PushConfigs`].

use crate::a2a::{SendMessageRequest, TaskPushNotificationConfig};
use crate::{Record, RecordBody};

use super::{Change, Outcome, TaskMachine, parse};

/// What a push record says, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum PushChange {
    /// A config registered, or replacing the one of the same id.
    Registered(Box<TaskPushNotificationConfig>),
    /// The config of this id deleted.
    Deleted(Box<str>),
    /// The sender gave up one notification of the config of this id.
    DeadLetter {
        /// The config.
        config_id: Box<str>,
        /// The offset of the record the notification told of.
        update: u64,
    },
    /// The sender's progress with the config of this id: its notifications of updates before
    /// offset `next` are done.
    Progress {
        /// The config.
        config_id: Box<str>,
        /// The first update not done.
        next: u64,
    },
}

/// A push record's change; `None` for any other kind.
pub(super) fn parse_push(body: &RecordBody) -> Option<Result<Change, Outcome>> {
    let change = match body {
        RecordBody::PushConfig { config } => match parse::<TaskPushNotificationConfig>(config) {
            Some(config) if config.id.as_deref().is_some_and(|id| !id.is_empty()) => {
                PushChange::Registered(Box::new(config))
            }
            _ => return Some(Err(Outcome::Invalid)),
        },
        RecordBody::PushConfigDeleted { config_id } => {
            PushChange::Deleted(config_id.as_str().into())
        }
        RecordBody::PushDeadLetter {
            config_id, update, ..
        } => PushChange::DeadLetter {
            config_id: config_id.as_str().into(),
            update: *update,
        },
        RecordBody::PushProgress { config_id, next } => PushChange::Progress {
            config_id: config_id.as_str().into(),
            next: *next,
        },
        _ => return None,
    };
    Some(Ok(Change::Push(Box::new(change))))
}

/// Whether a record is one of the push kinds (rule 16).
pub fn is_push(body: &RecordBody) -> bool {
    matches!(
        body,
        RecordBody::PushConfig { .. }
            | RecordBody::PushConfigDeleted { .. }
            | RecordBody::PushDeadLetter { .. }
            | RecordBody::PushProgress { .. }
    )
}

/// The config a client message carries inline (`configuration.taskPushNotificationConfig`),
/// as the task `task_id` keeps it: its `taskId` set, and its `id` the task id when it has none
/// (so a later message's inline config without an id replaces it).
pub fn inline_config(
    request: &SendMessageRequest,
    task_id: &str,
) -> Option<TaskPushNotificationConfig> {
    let mut config = request
        .configuration
        .as_ref()?
        .task_push_notification_config
        .clone()?;
    if config.id.as_deref().is_none_or(str::is_empty) {
        config.id = Some(task_id.to_owned());
    }
    config.task_id = Some(task_id.to_owned());
    Some(config)
}

/// A config as the task holds it, and the offset of the record that registered it: it is
/// told of the task's updates after that record.
#[derive(Debug, Clone, PartialEq)]
pub struct Registration {
    /// The config, with its `id` and `taskId`.
    pub config: TaskPushNotificationConfig,
    /// The offset, in the task's partition, of the record that registered it.
    pub since: u64,
}

impl Registration {
    /// The config's id.
    pub fn id(&self) -> &str {
        self.config.id.as_deref().unwrap_or_default()
    }
}

/// A task's push notification configs in registration order, as the changes its machine
/// applied leave them (rule 16): a registration adds a config or replaces the one of its id,
/// a deletion removes it, and a new incarnation of the task (rule 14) starts with none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PushConfigs {
    configs: Vec<Registration>,
}

impl PushConfigs {
    /// No configs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Take the change the machine applied from the record at `offset` of task `task_id`.
    /// Returns the config it registered, if it did one.
    pub fn apply(&mut self, task_id: &str, offset: u64, change: &Change) -> Option<&Registration> {
        let registered = match change {
            Change::Created(request) => {
                self.configs.clear();
                inline_config(request, task_id)?
            }
            Change::Continued(request) | Change::FollowedUp(request) => {
                inline_config(request, task_id)?
            }
            Change::Push(push) => match &**push {
                PushChange::Registered(config) => {
                    let mut config = (**config).clone();
                    config.task_id = Some(task_id.to_owned());
                    config
                }
                PushChange::Deleted(id) => {
                    self.configs.retain(|r| r.id() != &**id);
                    return None;
                }
                PushChange::DeadLetter { .. } | PushChange::Progress { .. } => return None,
            },
            _ => return None,
        };
        let registration = Registration {
            config: registered,
            since: offset,
        };
        let at = match self
            .configs
            .iter()
            .position(|r| r.id() == registration.id())
        {
            Some(at) => {
                self.configs[at] = registration;
                at
            }
            None => {
                self.configs.push(registration);
                self.configs.len() - 1
            }
        };
        self.configs.get(at)
    }

    /// The configs, oldest registration first.
    pub fn configs(&self) -> &[Registration] {
        &self.configs
    }

    /// The config with this id.
    pub fn get(&self, id: &str) -> Option<&Registration> {
        self.configs.iter().find(|r| r.id() == id)
    }

    /// Whether the task has no config.
    pub fn is_empty(&self) -> bool {
        self.configs.is_empty()
    }
}

/// The configs a task's records, in log order with their offsets, leave it (its machine
/// decides which apply, as for the task itself).
pub fn fold_push<'a>(records: impl IntoIterator<Item = (u64, &'a Record)>) -> PushConfigs {
    let mut machine = TaskMachine::new();
    let mut configs = PushConfigs::new();
    for (offset, record) in records {
        if let Ok(change) = machine.apply(record) {
            configs.apply(&record.header.task_id, offset, &change);
        }
    }
    configs
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{RecordHeader, TaskState};

    fn record(message_id: &str, ts: u64, body: RecordBody) -> Record {
        Record {
            header: RecordHeader {
                task_id: "t".into(),
                context_id: "c".into(),
                message_id: message_id.into(),
                timestamp_ms: ts,
                ..RecordHeader::default()
            },
            body,
        }
    }

    fn command(inline: &str, retention_ms: u64) -> RecordBody {
        RecordBody::Command {
            params: format!(
                r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"x"}}]}}{inline}}}"#
            ),
            retention_ms,
        }
    }

    fn config(id: &str, url: &str) -> RecordBody {
        RecordBody::PushConfig {
            config: format!(r#"{{"id":"{id}","url":"{url}"}}"#),
        }
    }

    fn ids(configs: &PushConfigs) -> Vec<(&str, &str, u64)> {
        configs
            .configs()
            .iter()
            .map(|r| (r.id(), r.config.url.as_str(), r.since))
            .collect()
    }

    #[test]
    fn registrations_replace_by_id_and_deletions_remove() {
        let records = [
            record("m", 1, command("", 0)),
            record("p1", 2, config("a", "https://h/1")),
            record("p2", 3, config("b", "https://h/2")),
            record("p3", 4, config("a", "https://h/3")),
            record(
                "p4",
                5,
                RecordBody::PushConfigDeleted {
                    config_id: "b".into(),
                },
            ),
            record(
                "p5",
                6,
                RecordBody::PushConfigDeleted {
                    config_id: "zz".into(),
                },
            ),
        ];
        let configs = fold_push(records.iter().enumerate().map(|(i, r)| (i as u64, r)));
        assert_eq!(ids(&configs), [("a", "https://h/3", 3)]);
        assert_eq!(
            configs.get("a").unwrap().config.task_id.as_deref(),
            Some("t")
        );
    }

    #[test]
    fn an_inline_config_registers_with_the_command_and_defaults_its_id_to_the_task() {
        let inline =
            r#","configuration":{"taskPushNotificationConfig":{"url":"https://h/in","token":"k"}}"#;
        let records = [record("m", 1, command(inline, 0))];
        let configs = fold_push(records.iter().map(|r| (7, r)));
        assert_eq!(ids(&configs), [("t", "https://h/in", 7)]);
        let mut machine = TaskMachine::new();
        machine.apply(&records[0]).unwrap();
        assert!(machine.has_push_configs());
    }

    #[test]
    fn push_records_change_no_state_apply_after_the_end_and_are_not_duplicates() {
        let mut machine = TaskMachine::new();
        let orphan = record("p0", 1, config("a", "https://h/1"));
        assert_eq!(machine.apply(&orphan), Err(Outcome::Orphan));
        machine.apply(&record("m", 1, command("", 1000))).unwrap();
        assert!(!machine.has_push_configs());
        let done = RecordBody::Terminal {
            state: TaskState::Completed.into(),
            message: String::new(),
        };
        machine.apply(&record("t-1", 5, done)).unwrap();
        let before = machine.status();
        let push = record("p1", 9, config("a", "https://h/1"));
        assert!(matches!(machine.apply(&push), Ok(Change::Push(_))));
        assert!(
            matches!(machine.apply(&push), Ok(Change::Push(_))),
            "idempotent"
        );
        assert!(machine.has_push_configs());
        assert_eq!(machine.status(), before);
        let letter = RecordBody::PushDeadLetter {
            config_id: "a".into(),
            update: 2,
            attempts: 3,
            reason: "HTTP 500".into(),
        };
        assert!(machine.apply(&record("d", 10, letter)).is_ok());
        assert_eq!(machine.status(), before);
        let progress = RecordBody::PushProgress {
            config_id: "a".into(),
            next: 2,
        };
        let change = machine.apply(&record("g", 10, progress)).unwrap();
        let mut configs = PushConfigs::new();
        assert!(
            configs.apply("t", 10, &change).is_none(),
            "no config changes"
        );
        assert_eq!(machine.status(), before);
        let bad = record(
            "p2",
            11,
            RecordBody::PushConfig {
                config: "{}".into(),
            },
        );
        assert_eq!(machine.apply(&bad), Err(Outcome::Invalid));
        // A new incarnation (rule 14) starts with no configs.
        let again = record("m", 2000, command("", 1000));
        let mut configs = PushConfigs::new();
        configs.apply(
            "t",
            1,
            &Change::Push(Box::new(PushChange::Deleted("x".into()))),
        );
        let change = machine.apply(&again).unwrap();
        configs.apply("t", 12, &change);
        assert!(configs.is_empty() && !machine.has_push_configs());
    }
}
