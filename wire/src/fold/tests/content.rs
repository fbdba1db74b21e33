//! The content-only fold, and the fold of applied changes, against the full fold over the
//! same records.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::StateCode;

/// What the bridge's view does: run the machine over every record and keep the ones
/// with content, then fold those alone with the machine's status.
pub(super) fn fold_of_content(records: &[Record]) -> Option<Task> {
    let mut machine = TaskMachine::new();
    let mut content: Vec<&Record> = Vec::new();
    for record in records {
        match machine.apply(record) {
            // A new incarnation (rule 14) starts the content over.
            Ok(Change::Created(_)) => content = vec![record],
            Ok(change) if change.has_content() => content.push(record),
            _ => {}
        }
    }
    // An answered task has no task to show (rule 15): the view answers it as not found.
    if machine.is_answered() {
        return None;
    }
    fold_content(content, machine.status()?)
}

/// What a subscriber of the bridge's view does: the machine decides every record, and the
/// changes it applied go to a [`ChangeFold`] started by the command's (a new incarnation
/// starts a new one, as the subscriber of the new task would).
fn fold_of_changes(records: &[Record]) -> (Option<Task>, Option<Message>) {
    let mut machine = TaskMachine::new();
    let mut folded: Option<ChangeFold> = None;
    for record in records {
        match machine.apply(record) {
            Ok(Change::Created(request)) => {
                folded = Some(ChangeFold::new(&record.header, *request));
            }
            Ok(change) => {
                if let Some(fold) = folded.as_mut() {
                    assert!(fold.apply(&change, record.header.timestamp_ms));
                }
            }
            Err(_) => {}
        }
    }
    match folded {
        Some(fold) => (fold.task().cloned(), fold.answer().cloned()),
        None => (None, None),
    }
}

#[test]
fn the_content_records_and_the_status_fold_to_the_same_task() {
    // Random histories over every kind of record, legal or not, with repeated message
    // ids and bad payloads; a fixed seed keeps the test deterministic.
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let message = |text: &str| {
        format!(r#"{{"messageId":"a-{text}","role":"ROLE_AGENT","parts":[{{"text":"{text}"}}]}}"#)
    };
    let mut with_message_status = 0;
    let mut with_claims = 0;
    let mut reincarnations = 0;
    let mut answered = 0;
    for history in 0..3_000 {
        let mut records = Vec::new();
        if next(8) != 0 {
            records.push(command());
        }
        let mut turns = vec!["m1".to_owned()];
        for n in 1..=next(14) {
            let id = format!("r{}", next(6));
            let text = format!("{history}-{n}");
            let body = match next(9) {
                0 => {
                    turns.push(format!("a-{text}"));
                    RecordBody::Continue {
                        params: format!(r#"{{"message":{}}}"#, message(&text)),
                    }
                }
                7 | 8 => RecordBody::Claim {
                    turn: turns[next(turns.len() as u64) as usize].clone(),
                    lease_until_ms: 1_700_000_000_000 + next(20),
                },
                1 => RecordBody::CancelRequest {
                    metadata: String::new(),
                },
                2 | 3 => {
                    let state = StateCode(next(10) as u8);
                    let message = match next(4) {
                        0 => message(&text),
                        1 => "{not json".into(),
                        _ => String::new(),
                    };
                    if next(2) == 0 {
                        RecordBody::StatusUpdate { state, message }
                    } else {
                        RecordBody::Terminal { state, message }
                    }
                }
                4 => command().body,
                6 if next(2) == 0 => RecordBody::Reply {
                    message: if next(8) == 0 {
                        "{not json".into()
                    } else {
                        message(&text)
                    },
                },
                _ => RecordBody::ArtifactUpdate {
                    append: next(2) == 0,
                    last_chunk: next(2) == 0,
                    artifact: if next(10) == 0 {
                        "[]".into()
                    } else {
                        format!(
                            r#"{{"artifactId":"a{}","parts":[{{"text":"{text}"}}]}}"#,
                            next(2)
                        )
                    },
                },
            };
            let writer = ["", "w1", "w2"][next(3) as usize];
            let mut written = by(writer, next(3) as u32, record(n, &id, body));
            if matches!(written.body, RecordBody::Command { .. }) && next(2) == 0 {
                // Written long after: past the expiry if the task had finished (rule 14).
                written.header.timestamp_ms += 61_000;
            }
            records.push(written);
        }
        let all = fold(&records);
        let mut counter = TaskMachine::new();
        let created = records
            .iter()
            .filter(|r| matches!(counter.apply(r), Ok(Change::Created(_))))
            .count();
        if created > 1 {
            reincarnations += 1;
        }
        // A machine restored from a snapshot at any point decides the rest alike.
        let cut = next(records.len() as u64 + 1) as usize;
        let mut head = TaskMachine::new();
        for record in &records[..cut] {
            let _ = head.apply(record);
        }
        let mut restored = TaskMachine::from_snapshot(head.snapshot());
        assert_eq!(restored, head, "history {history}: snapshot at {cut}");
        for record in &records[cut..] {
            let _ = restored.apply(record);
        }
        assert_eq!(
            &restored,
            all.machine(),
            "history {history}: restored at {cut}"
        );
        if all.task().is_some_and(|task| task.status.message.is_some()) {
            with_message_status += 1;
        }
        if all.machine().attempts() > 0 && all.stats().applied > 3 {
            with_claims += 1;
        }
        if all.answer().is_some() {
            answered += 1;
        }
        assert_eq!(
            fold_of_content(&records).as_ref(),
            all.task(),
            "history {history}: {records:?}"
        );
        assert_eq!(
            fold_of_changes(&records),
            (all.task().cloned(), all.answer().cloned()),
            "history {history}: {records:?}"
        );
    }
    // The histories reach the interesting cases: a status message kept at the end, and
    // claimed tasks that went on past their claim.
    assert!(with_message_status > 20, "{with_message_status}");
    assert!(with_claims > 100, "{with_claims}");
    assert!(reincarnations > 20, "{reincarnations}");
    assert!(answered > 20, "{answered}");
}
