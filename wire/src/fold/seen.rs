//! The message ids a live task has applied (fold rule 8): every client message's, and the
//! newest [`RECENT_IDS`] of the others, so that a task streaming for hours does not grow
//! memory with every record.

use std::collections::{HashSet, VecDeque};

/// How many of the ids of a task's worker and cancel records rule 8 remembers. A writer's
/// retry of a record comes right after it; an older copy is not a retry.
pub const RECENT_IDS: usize = 256;

/// The applied ids of a live task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    /// Client messages (commands, continues): kept while the task is live.
    clients: HashSet<Box<str>>,
    /// The newest other ids, oldest first, and the same as a set.
    recent: VecDeque<Box<str>>,
    recent_set: HashSet<Box<str>>,
}

impl Seen {
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.clients.contains(id) || self.recent_set.contains(id)
    }

    pub(crate) fn insert(&mut self, id: &str, client: bool) {
        if client {
            self.clients.insert(id.into());
            return;
        }
        if !self.recent_set.insert(id.into()) {
            return;
        }
        self.recent.push_back(id.into());
        if self.recent.len() > RECENT_IDS
            && let Some(oldest) = self.recent.pop_front()
        {
            self.recent_set.remove(&oldest);
        }
    }

    /// The client ids (sorted) and the recent ones (oldest first), to store.
    pub(crate) fn parts(&self) -> (Vec<String>, Vec<String>) {
        let mut clients: Vec<String> = self.clients.iter().map(|id| id.to_string()).collect();
        clients.sort_unstable();
        (
            clients,
            self.recent.iter().map(|id| id.to_string()).collect(),
        )
    }

    pub(crate) fn from_parts(clients: Vec<String>, recent: Vec<String>) -> Self {
        let mut seen = Self {
            clients: clients.into_iter().map(Box::from).collect(),
            ..Self::default()
        };
        for id in recent {
            seen.insert(&id, false);
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ids_stay_and_other_ids_are_the_newest_only() {
        let mut seen = Seen::default();
        seen.insert("m-1", true);
        for n in 0..=RECENT_IDS {
            seen.insert(&format!("r{n}"), false);
        }
        assert!(seen.contains("m-1"));
        assert!(!seen.contains("r0"), "the oldest went");
        assert!(seen.contains("r1") && seen.contains(&format!("r{RECENT_IDS}")));
        seen.insert("r5", false); // already there: nothing moves
        let (clients, recent) = seen.parts();
        assert_eq!(clients, ["m-1"]);
        assert_eq!(recent.len(), RECENT_IDS);
        assert_eq!(Seen::from_parts(clients, recent), seen);
    }
}
