//! Tasks read again unchanged (a client polling `GetTask` until its task ends): the fold of
//! each is kept, so that a read of a task that has not changed since it was last read folds
//! nothing, as an in-memory server answers from its map.
//!
//! A fold is kept under the task's [`Version`]: its last content record's offset, how many
//! content records it has and its status mark, which together fix the fold (the log never
//! changes what it holds at an offset), so a kept fold is exactly what a fold now would give;
//! any change makes a new version and the next read folds again. Kept only on a task's second
//! read at one version (a task read once, as a list or a busy task is, costs a marker), at
//! most [`KEPT`] tasks and [`KEPT_BYTES`] of their JSON, none over [`ONE_MAX`]; the oldest
//! go first. Who may see the task is checked before, by the view, as for any read.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use agentlog_wire::a2a::Task;
use agentlog_wire::fold::StatusMark;
use foldhash::HashMap;

/// How many tasks are kept at most (read once or kept).
const KEPT: usize = 1024;
/// The most bytes of kept tasks (as JSON).
const KEPT_BYTES: usize = 4 * 1024 * 1024;
/// The largest task kept (as JSON): a bigger one costs its read little beside its size.
const ONE_MAX: usize = 64 * 1024;

/// What fixes a task's fold: its content records (the last one's offset, and how many) and
/// its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Version {
    pub last_content: u64,
    pub contents: usize,
    pub status: StatusMark,
}

/// What a read finds.
pub(super) enum Found {
    /// The fold at this version.
    Kept(Arc<Task>),
    /// Nothing; `keep`: the task was read at this version before, so its fold is worth
    /// keeping ([`Polled::keep`]).
    Fold { keep: bool },
}

#[derive(Default)]
pub(super) struct Polled {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    by_task: HashMap<Arc<str>, Entry>,
    /// Tasks in the order of their last change, with the stamp of that change (an older
    /// stamp is stale: the entry changed since).
    order: VecDeque<(Arc<str>, u64)>,
    bytes: usize,
    next_stamp: u64,
}

struct Entry {
    version: Version,
    task: Option<Arc<Task>>,
    bytes: usize,
    stamp: u64,
}

impl Polled {
    fn kept(&self) -> MutexGuard<'_, Kept> {
        // Poisoned only by a panic under the lock, which leaves the map whole.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The kept fold of `task_id` at `version`, else whether to keep the fold about to be made.
    pub(super) fn find(&self, task_id: &str, version: Version) -> Found {
        let mut kept = self.kept();
        match kept.by_task.get(task_id) {
            Some(entry) if entry.version == version => match &entry.task {
                Some(task) => Found::Kept(task.clone()),
                None => Found::Fold { keep: true },
            },
            _ => {
                kept.put(task_id, version, None, 0);
                Found::Fold { keep: false }
            }
        }
    }

    /// Keep `task`, the fold of `task_id` at `version`, unless it is over [`ONE_MAX`].
    pub(super) fn keep(&self, task_id: &str, version: Version, task: &Task) {
        let mut size = Counted(0);
        if serde_json::to_writer(&mut size, task).is_err() || size.0 > ONE_MAX {
            return;
        }
        let task = Arc::new(task.clone());
        self.kept().put(task_id, version, Some(task), size.0);
    }
}

impl Kept {
    fn put(&mut self, task_id: &str, version: Version, task: Option<Arc<Task>>, bytes: usize) {
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        let entry = Entry {
            version,
            task,
            bytes,
            stamp,
        };
        let id: Arc<str> = match self.by_task.get_key_value(task_id) {
            Some((id, _)) => id.clone(),
            None => Arc::from(task_id),
        };
        if let Some(old) = self.by_task.insert(id.clone(), entry) {
            self.bytes -= old.bytes;
        }
        self.bytes += bytes;
        self.order.push_back((id, stamp));
        // Stale stamps count too, so the order stays within twice the entries.
        while self.by_task.len() > KEPT || self.bytes > KEPT_BYTES || self.order.len() > 2 * KEPT {
            let Some((oldest, at)) = self.order.pop_front() else {
                break;
            };
            if self.by_task.get(&oldest).is_some_and(|e| e.stamp == at)
                && let Some(gone) = self.by_task.remove(&oldest)
            {
                self.bytes -= gone.bytes;
            }
        }
    }
}

/// A writer that counts what it is given.
struct Counted(usize);

impl io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentlog_wire::TaskState;

    fn version(last_content: u64) -> Version {
        Version {
            last_content,
            contents: 2,
            status: StatusMark {
                state: TaskState::Completed,
                timestamp_ms: 1,
                has_message: false,
            },
        }
    }

    fn task(id: &str, text: &str) -> Task {
        let json = serde_json::json!({
            "id": id, "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED"},
            "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}]}],
        });
        serde_json::from_value(json).expect("a task")
    }

    #[test]
    fn a_fold_is_kept_on_the_second_read_of_a_version_and_given_until_it_changes() {
        let polled = Polled::default();
        assert!(matches!(
            polled.find("a", version(5)),
            Found::Fold { keep: false }
        ));
        assert!(matches!(
            polled.find("a", version(5)),
            Found::Fold { keep: true }
        ));
        polled.keep("a", version(5), &task("a", "hi"));
        let Found::Kept(kept) = polled.find("a", version(5)) else {
            panic!("kept")
        };
        assert_eq!(*kept, task("a", "hi"));
        // Another version: folded again, and kept again only on its second read.
        assert!(matches!(
            polled.find("a", version(6)),
            Found::Fold { keep: false }
        ));
        assert!(matches!(
            polled.find("a", version(6)),
            Found::Fold { keep: true }
        ));
    }

    #[test]
    fn a_big_task_is_not_kept_and_the_oldest_go_first() {
        let polled = Polled::default();
        polled.find("big", version(1));
        polled.keep("big", version(1), &task("big", &"x".repeat(ONE_MAX)));
        assert!(matches!(
            polled.find("big", version(1)),
            Found::Fold { keep: true }
        ));

        for i in 0..=KEPT {
            let id = format!("t{i}");
            polled.find(&id, version(1));
            polled.keep(&id, version(1), &task(&id, "hi"));
        }
        assert!(matches!(
            polled.find("t0", version(1)),
            Found::Fold { keep: false }
        ));
        assert!(matches!(
            polled.find(&format!("t{KEPT}"), version(1)),
            Found::Kept(_)
        ));
        let kept = polled.kept();
        assert!(kept.by_task.len() <= KEPT && kept.order.len() <= 2 * KEPT);
        let bytes: usize = kept.by_task.values().map(|e| e.bytes).sum();
        assert_eq!(bytes, kept.bytes);
    }
}
