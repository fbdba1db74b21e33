//! `serve --member i/N --peers URL0,… --peer-key FILE [--advertise URL]`: bridges sharing an
//! agent's partitions by a static list (`docs/operations.md#partitions`). The bridge's view
//! holds its share; requests about the others' are forwarded to their owners. The flags of
//! dynamic membership (`--member-name`) are here too; `serve_members.rs` runs it.

use std::time::Duration;

use agentlog::agent::AgentTopics;
use agentlog::http::Forwarding;
use agentlog::log::Log;
use agentlog::security::owners::{OwnerMap, Owners};
use agentlog::security::peers::{Members, PeerKey};
use clap::Args;

use super::{CliError, CliResult};

/// The flags of scale-out.
#[derive(Debug, Args)]
pub(super) struct PeerArgs {
    /// This bridge's place among the bridges sharing the agent, by a static list:
    /// INDEX/COUNT (e.g. 0/4). Its view holds the partitions p with p mod COUNT = INDEX;
    /// requests about the others are forwarded to their owners. Needs --peers and --peer-key.
    #[arg(
        long,
        value_name = "INDEX/COUNT",
        requires_all = ["peers", "peer_key"],
        conflicts_with = "member_name"
    )]
    pub(super) member: Option<String>,

    /// Every member's URL, in member order, comma-separated (the same list on every member).
    #[arg(
        long,
        value_name = "URL,...",
        value_delimiter = ',',
        requires = "member"
    )]
    pub(super) peers: Vec<String>,

    /// Join the bridges sharing the agent's partitions under this name, found at run time on
    /// the topic <agent>.members (dynamic membership): stable across this bridge's restarts,
    /// unique among the agent's bridges. Needs --advertise and --peer-key; not with --member.
    #[arg(long, value_name = "NAME")]
    pub(super) member_name: Option<String>,

    /// How long this member counts as alive after each heartbeat (it writes one every third
    /// of it); a member silent for longer is evicted and its partitions served by the
    /// others. Keep the members' clocks within a small fraction of it. With --member-name.
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration)]
    pub(super) member_lease: Option<Duration>,

    /// How long a stopping member (Ctrl-C, SIGTERM) goes on serving while the others take
    /// its partitions over, caught up, before it stops anyway (the rest is then served by
    /// the others once its lease is over). With --member-name. Default 10s.
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration)]
    pub(super) leave_timeout: Option<Duration>,

    /// The URL the other members reach this one at (with --member: default its entry in
    /// --peers; with --member-name: required).
    #[arg(long, value_name = "URL")]
    pub(super) advertise: Option<String>,

    /// A file holding the key the members share (at least 32 bytes), to mark the requests
    /// they forward to each other.
    #[arg(long, value_name = "FILE")]
    pub(super) peer_key: Option<std::path::PathBuf>,

    /// How long a member may take to accept a forwarded request and answer its head before
    /// the partition's successor is asked instead.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = super::parse_duration)]
    pub(super) forward_timeout: Duration,
}

/// A member's place, once the log says how many partitions there are.
pub(super) struct Membership {
    members: Members,
    /// The URL this member is reached at.
    pub(super) advertised: String,
    key: PeerKey,
    timeout: Duration,
}

impl PeerArgs {
    /// The key of `--peer-key`, which `flag` needs.
    pub(super) fn key(&self, flag: &str) -> CliResult<PeerKey> {
        let Some(path) = &self.peer_key else {
            return Err(CliError::msg(format!(
                "{flag} needs --peer-key FILE: the key the members mark the requests they forward to each other with"
            )));
        };
        PeerKey::from_file(path).map_err(CliError::from)
    }

    /// The static membership the flags describe, or `None` without `--member`.
    pub(super) fn membership(&self) -> CliResult<Option<Membership>> {
        let Some(member) = &self.member else {
            return Ok(None);
        };
        let (index, count) = Members::parse_member(member).map_err(CliError::from)?;
        let members = Members::new(index, count, self.peers.clone()).map_err(CliError::from)?;
        let key = self.key("--member")?;
        let advertised = match &self.advertise {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => members.url(index).unwrap_or_default().to_owned(),
        };
        Ok(Some(Membership {
            members,
            advertised,
            key,
            timeout: self.forward_timeout,
        }))
    }
}

impl Membership {
    /// The partitions this member holds, the forwarding the router does, after checking that
    /// every member that answers has the same peer list.
    pub(super) async fn open(
        &self,
        log: &Log,
        topics: &AgentTopics,
    ) -> CliResult<(Vec<u32>, Forwarding)> {
        topics.ensure(log).await.map_err(CliError::from)?;
        let partitions = log
            .partitions(&topics.events)
            .await
            .map_err(CliError::from)?;
        let map = self.members.owner_map(partitions).map_err(CliError::from)?;
        check_peers(&self.members, &map, self.timeout).await?;
        let holding = self.members.owned_by(self.members.index(), partitions);
        let forwarding = Forwarding::new(Owners::new(map), self.key.clone()).timeout(self.timeout);
        Ok((holding, forwarding))
    }

    /// The hosts peers name this member by (its --peers entry and --advertise URL), which its
    /// endpoints must answer.
    pub(super) fn hosts(&self) -> Vec<String> {
        let own = self.members.url(self.members.index()).unwrap_or_default();
        [own, self.advertised.as_str()]
            .iter()
            .filter_map(|u| url::Url::parse(u).ok())
            .filter_map(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_owned()))
            .collect()
    }

    /// `member i/N of URL0,…`, for the banner.
    pub(super) fn describe(&self) -> String {
        format!(
            "member {}/{} of {}",
            self.members.index(),
            self.members.count(),
            self.members.urls().join(",")
        )
    }
}

/// Refuse to start when a member that answers `GET /peers` names another list, or another
/// partition count: the members would disagree on who owns what. A member that does not
/// answer (not started yet) is not a refusal; it checks against this one when it starts.
async fn check_peers(members: &Members, map: &OwnerMap, timeout: Duration) -> CliResult {
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| CliError::msg(format!("cannot build an HTTP client: {e}")))?;
    for (n, url) in members.urls().iter().enumerate() {
        if n as u32 == members.index() {
            continue;
        }
        let Ok(answer) = client.get(format!("{url}/peers")).send().await else {
            continue;
        };
        if !answer.status().is_success() {
            continue;
        }
        let Ok(theirs) = answer.json::<agentlog::http::PeerList>().await else {
            continue;
        };
        if theirs.peers != members.urls() || theirs.partitions != map.partitions() {
            return Err(CliError::msg(format!(
                "member {n} at {url} was started with --peers {} over {} partitions; this one with --peers {} over {}: give every member the same list",
                theirs.peers.join(","),
                theirs.partitions,
                members.urls().join(","),
                map.partitions()
            )));
        }
    }
    Ok(())
}
