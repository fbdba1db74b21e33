//! `agentlog tail --members`: the records of `<agent>.members`, the bridges' dynamic
//! membership (joins, heartbeats, leaves, evictions, readies, snapshots).

use agentlog::log::{Follower, Log, StoredRecord};
use agentlog::members::{NO_MOVE, members_topic};
use agentlog_wire::members::{MemberBody, MemberRecord};
use agentlog_wire::timestamp::format_millis;

use super::super::output::Out;
use super::super::{CliError, CliResult};
use super::{BATCH, TailArgs, wait_for};

/// Print the membership records, then follow them with `--follow`.
pub(super) async fn tail(log: &Log, args: &TailArgs, out: &Out) -> CliResult {
    let agent = &args.log.agent;
    let topic = members_topic(agentlog::agent::DEFAULT_STREAM, agent);
    let waiting = format!("agent {agent:?} has no membership records yet; waiting for {topic}");
    let end = wait_for(&waiting, async || match log.end_offset(&topic, 0).await {
        Ok(end) => Ok(Some(end)),
        Err(e) if e.kind() != agentlog::ErrorKind::InvalidParams => Err(CliError::msg(format!(
            "cannot read {topic}: {}",
            e.report()
        ))),
        Err(_) if !args.follow => Err(CliError::msg(format!(
            "agent {agent:?} has no membership records (no topic {topic}: no bridge ran with --member-name)"
        ))),
        Err(_) => Ok(None),
    })
    .await?;
    let Some(end) = end else {
        return Ok(()); // Ctrl-C while waiting
    };
    let mut next = 0;
    while next < end {
        let batch = log.read(&topic, 0, next, BATCH).await?;
        let Some(last) = batch.last() else { break };
        next = last.offset + 1;
        batch.iter().for_each(|stored| print(out, stored));
    }
    if !args.follow {
        return Ok(());
    }
    let mut follower = Follower::new(log.clone(), topic, 0, next).await?;
    let signal = super::super::shutdown_signal();
    tokio::pin!(signal);
    loop {
        tokio::select! {
            () = &mut signal => return Ok(()),
            batch = follower.next_batch() => batch?.iter().for_each(|stored| print(out, stored)),
        }
    }
}

fn print(out: &Out, stored: &StoredRecord) {
    let position = format!("{}:{}", stored.partition, stored.offset);
    match MemberRecord::decode(&stored.payload) {
        Ok(record) => {
            let kind = record.body.kind().name();
            let pad = " ".repeat(9usize.saturating_sub(kind.len()));
            let line = format!(
                "{position:<8}  {}  {}{pad}  {}  {}",
                out.dim(&format_millis(record.timestamp_ms)),
                out.cyan(kind),
                record.member,
                summary(&record),
            );
            out.line(line.trim_end());
        }
        Err(e) => out.line(&format!(
            "{position:<8}  {}",
            out.dim(&format!("<undecodable: {e}>"))
        )),
    }
}

/// What a record says beyond its kind and member.
fn summary(record: &MemberRecord) -> String {
    let mut text = match &record.body {
        MemberBody::Join { url, lease_ms } => format!("at {url}, lease {lease_ms} ms"),
        MemberBody::Heartbeat | MemberBody::Leave => String::new(),
        MemberBody::Evict => format!("by {}", record.source),
        MemberBody::Ready { partition, since } if *since == NO_MOVE => {
            format!("partition {partition} held, caught up")
        }
        MemberBody::Ready { partition, since } => {
            format!("partition {partition} caught up (the move at {since})")
        }
        MemberBody::Snapshot { after, .. } => format!("of the records up to offset {after}"),
    };
    if record.is_signed() {
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str(&format!("signed by {}", record.key_id));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads_as_what_it_says() {
        let at = |body| MemberRecord::new(0, "b1", "b2", body);
        let join = MemberBody::Join {
            url: "http://b1:8080".into(),
            lease_ms: 10_000,
        };
        assert_eq!(summary(&at(join)), "at http://b1:8080, lease 10000 ms");
        assert_eq!(summary(&at(MemberBody::Evict)), "by b2");
        let held = MemberBody::Ready {
            partition: 3,
            since: NO_MOVE,
        };
        assert_eq!(summary(&at(held)), "partition 3 held, caught up");
        let moved = MemberBody::Ready {
            partition: 3,
            since: 17,
        };
        assert_eq!(
            summary(&at(moved)),
            "partition 3 caught up (the move at 17)"
        );
        assert_eq!(summary(&at(MemberBody::Heartbeat)), "");
    }
}
