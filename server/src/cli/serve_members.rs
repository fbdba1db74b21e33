//! How a `serve` bridge shares its agent's partitions: by a static list (`--member i/N`,
//! `serve_peers.rs`) or by dynamic membership (`--member-name NAME --advertise URL
//! --peer-key FILE`): the bridge joins `<agent>.members` before it serves, its view holds what
//! the members' fold assigns it (catching a moved partition up before the map switches to
//! it), the forwarder reads the fold's map, and a graceful stop leaves, handing every
//! partition over caught up while it goes on serving (`docs/operations.md#partitions`).

use std::time::Duration;

use agentlog::agent::AgentTopics;
use agentlog::bridge::Bridge;
use agentlog::http::Forwarding;
use agentlog::log::Log;
use agentlog::members::{self, Membership, MembershipConfig};
use agentlog::security::owners::Owners;
use agentlog::security::peers::PeerKey;
use agentlog::security::{RecordSigner, RecordVerifier};
use agentlog::view::TaskView;
use tokio::task::JoinHandle;

use super::serve_peers::{Membership as Static, PeerArgs};
use super::{CliError, CliResult};

/// How long a stopping member goes on serving while its partitions move, by default.
const LEAVE_WITHIN: Duration = Duration::from_secs(10);

/// The shortest `--member-lease`: a heartbeat every third of it must land in time.
const MIN_LEASE: Duration = Duration::from_secs(1);

/// How this bridge shares the agent's partitions.
pub(super) enum ScaleOut {
    /// `--member i/N --peers …`.
    Static(Static),
    /// `--member-name NAME`.
    Dynamic(Box<Dynamic>),
}

/// A dynamic member: its flags, then its running membership.
pub(super) struct Dynamic {
    name: String,
    advertised: String,
    lease: Duration,
    leave_within: Duration,
    key: PeerKey,
    timeout: Duration,
    running: Option<Running>,
}

/// A joined member and what follows its assignment.
struct Running {
    member: Membership,
    owners: Owners,
    tasks: Vec<JoinHandle<()>>,
}

impl Dynamic {
    /// Member `name`, reached by its peers at `advertise`, marking forwards with `key` and
    /// giving a peer `timeout` to answer one.
    pub(super) fn new(
        name: &str,
        advertise: &str,
        key: PeerKey,
        timeout: Duration,
    ) -> CliResult<Self> {
        if name.is_empty()
            || name.len() > 200
            || name.chars().any(|c| c.is_control() || c.is_whitespace())
        {
            return Err(CliError::msg(format!(
                "--member-name {name:?}: give 1 to 200 characters, no spaces or control characters (a name stable across this bridge's restarts)"
            )));
        }
        let url = url::Url::parse(advertise)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or_else(|| {
                CliError::msg(format!(
                    "--advertise {advertise:?}: give the http:// or https:// URL the other members reach this one at"
                ))
            })?;
        Ok(Self {
            name: name.to_owned(),
            advertised: url.as_str().trim_end_matches('/').to_owned(),
            lease: members::DEFAULT_LEASE,
            leave_within: LEAVE_WITHIN,
            key,
            timeout,
            running: None,
        })
    }

    /// `--member-lease`.
    pub(super) fn lease(mut self, lease: Duration) -> CliResult<Self> {
        if lease < MIN_LEASE {
            return Err(CliError::msg(format!(
                "--member-lease {lease:?} is too short: at least {MIN_LEASE:?}, and well above the members' clock skew"
            )));
        }
        self.lease = lease;
        Ok(self)
    }

    /// `--leave-timeout`.
    pub(super) fn leave_within(mut self, within: Duration) -> Self {
        self.leave_within = within;
        self
    }

    /// Join the members of `topics`' agent over `log`; the forwarding by the fold's map.
    async fn join(
        &mut self,
        log: &Log,
        topics: &AgentTopics,
        signer: Option<RecordSigner>,
        verifier: Option<RecordVerifier>,
    ) -> CliResult<Forwarding> {
        if verifier.is_some() && signer.is_none() {
            return Err(CliError::msg(
                "--member-name under --trust signs its membership records with the first --signing-key: give one (a key the trust lets write membership records)",
            ));
        }
        topics.ensure(log).await.map_err(CliError::from)?;
        let partitions = log
            .partitions(&topics.events)
            .await
            .map_err(CliError::from)?;
        let mut config = MembershipConfig::new(&topics.agent, &self.name, &self.advertised)
            .stream(topics.events.stream.clone())
            .lease(self.lease);
        config.signer = signer;
        config.verifier = verifier;
        let member = Membership::join(log.clone(), config, partitions)
            .await
            .map_err(|e| {
                CliError::msg(format!(
                    "cannot join the members of agent {:?} as {:?}: {}",
                    topics.agent,
                    self.name,
                    e.report()
                ))
            })?;
        let Some(map) = member.view().owner_map() else {
            return Err(CliError::msg(format!(
                "member {:?} joined, but the members' map does not name it",
                self.name
            )));
        };
        let owners = Owners::new(map);
        let forwarding = Forwarding::new(owners.clone(), self.key.clone()).timeout(self.timeout);
        self.running = Some(Running {
            member,
            owners,
            tasks: Vec::new(),
        });
        Ok(forwarding)
    }

    /// Hold what the assignment gives this member now (so that the view's readiness covers
    /// it before the banner), then follow the assignment: the view holds and releases, the
    /// forwarder reads each new map.
    async fn start(&mut self, bridge: &Bridge) -> CliResult {
        let Some(running) = self.running.as_mut() else {
            return Ok(());
        };
        let view = bridge.view().clone();
        let now = running.member.view();
        let incoming: Vec<u32> = now.incoming().iter().map(|(p, _)| *p).collect();
        // Partitions moving here are caught up by the placement, not waited for: their old
        // holder serves them meanwhile.
        for p in now.held().into_iter().filter(|p| !incoming.contains(p)) {
            view.hold(p).await.map_err(CliError::from)?;
        }
        let catch_up = bridge.config().sync_timeout;
        running.tasks.push(tokio::spawn(members::feed_owners(
            running.member.watch(),
            running.owners.clone(),
        )));
        running
            .tasks
            .push(tokio::spawn(agentlog::placement::hold_assigned_warming(
                view,
                running.member.watch(),
                running.member.reporter(),
                catch_up,
                // The MCP route's tool views warm what moves here before the switch too.
                Some(running.owners.clone()),
            )));
        Ok(())
    }

    /// Leave while still serving: a checkpoint of what this member holds first (the new
    /// holders restore from it), then each partition handed over caught up, within the
    /// leave timeout.
    async fn leave(&mut self, view: &TaskView) {
        let Some(running) = self.running.take() else {
            return;
        };
        if let Err(error) = view.checkpoint().await {
            tracing::warn!(error = %error.report(), "could not write a checkpoint before leaving; the new holders replay more");
        }
        super::output::note(&format!(
            "agentlog: leaving the members (handing {} partitions over)",
            view.held_partitions().len()
        ));
        match running.member.leave(self.leave_within).await {
            Ok(true) => {}
            Ok(false) => super::output::note(&format!(
                "agentlog: not every partition was handed over within {:?}; the others serve the rest once this member's lease is over",
                self.leave_within
            )),
            Err(error) => {
                tracing::warn!(error = %error.report(), "could not write the leave; the others evict this member once its lease is over")
            }
        }
        for task in running.tasks {
            let _ = task.await;
        }
    }

    fn describe(&self) -> String {
        let slot = self
            .running
            .as_ref()
            .and_then(|r| r.member.view().me)
            .map_or_else(String::new, |s| format!(", slot {s}"));
        format!(
            "member {:?} at {}{slot} (dynamic membership)",
            self.name, self.advertised
        )
    }
}

/// How this bridge shares the agent's partitions by `args`, or `None` (it holds them all); a
/// combination of flags that does not hold together is refused, saying why.
pub(super) fn scale_out(args: &PeerArgs) -> CliResult<Option<ScaleOut>> {
    let dynamic_only = [
        ("--member-lease", args.member_lease.is_some()),
        ("--leave-timeout", args.leave_timeout.is_some()),
    ];
    if args.member_name.is_none()
        && let Some((flag, _)) = dynamic_only.iter().find(|(_, given)| *given)
    {
        return Err(CliError::msg(format!(
            "{flag} is for dynamic membership: give --member-name too"
        )));
    }
    if args.member.is_none() && args.member_name.is_none() {
        for (flag, given) in [
            ("--advertise", args.advertise.is_some()),
            ("--peer-key", args.peer_key.is_some()),
        ] {
            if given {
                return Err(CliError::msg(format!(
                    "{flag} is for bridges sharing the agent's partitions: give --member-name NAME (or --member INDEX/COUNT with --peers)"
                )));
            }
        }
        return Ok(None);
    }
    if let Some(name) = &args.member_name {
        let key = args.key("--member-name")?;
        let Some(advertise) = &args.advertise else {
            return Err(CliError::msg(
                "--member-name needs --advertise URL: the URL the other members reach this one at",
            ));
        };
        let mut member = Dynamic::new(name, advertise, key, args.forward_timeout)?;
        if let Some(lease) = args.member_lease {
            member = member.lease(lease)?;
        }
        if let Some(within) = args.leave_timeout {
            member = member.leave_within(within);
        }
        return Ok(Some(ScaleOut::Dynamic(Box::new(member))));
    }
    Ok(args.membership()?.map(ScaleOut::Static))
}

impl ScaleOut {
    /// The hosts peers name this member by, which its endpoints must answer.
    pub(super) fn hosts(&self) -> Vec<String> {
        match self {
            ScaleOut::Static(member) => member.hosts(),
            ScaleOut::Dynamic(member) => url::Url::parse(&member.advertised)
                .ok()
                .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_owned()))
                .into_iter()
                .collect(),
        }
    }

    /// Take part before the bridge opens: the partitions its view holds at open (none for a
    /// dynamic member: it holds them once the bridge is open, [`start`](Self::start)), and
    /// the forwarding its router does.
    pub(super) async fn open(
        &mut self,
        log: &Log,
        topics: &AgentTopics,
        signer: Option<RecordSigner>,
        verifier: Option<RecordVerifier>,
    ) -> CliResult<(Vec<u32>, Forwarding)> {
        match self {
            ScaleOut::Static(member) => member.open(log, topics).await,
            ScaleOut::Dynamic(member) => {
                let forwarding = member.join(log, topics, signer, verifier).await?;
                Ok((Vec::new(), forwarding))
            }
        }
    }

    /// Once the bridge is open: a dynamic member's view starts following its assignment.
    pub(super) async fn start(&mut self, bridge: &Bridge) -> CliResult {
        match self {
            ScaleOut::Static(_) => Ok(()),
            ScaleOut::Dynamic(member) => member.start(bridge).await,
        }
    }

    /// On a graceful stop, before the server stops accepting: a dynamic member leaves.
    pub(super) async fn leave(&mut self, view: &TaskView) {
        if let ScaleOut::Dynamic(member) = self {
            member.leave(view).await;
        }
    }

    /// For the banner.
    pub(super) fn describe(&self) -> String {
        match self {
            ScaleOut::Static(member) => member.describe(),
            ScaleOut::Dynamic(member) => member.describe(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use clap::Parser;

    use super::super::{Cli, Command};

    /// What `serve`'s scale-out flags in `extra` come to: the banner's description, or the
    /// refusal.
    fn scale_out(extra: &[&str]) -> Result<Option<String>, String> {
        let mut argv = vec!["agentlog", "serve"];
        argv.extend_from_slice(extra);
        let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        let Command::Serve(args) = cli.command else {
            panic!("not serve");
        };
        super::scale_out(&args.peers)
            .map(|s| s.map(|s| s.describe()))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn dynamic_membership_flags_hold_together_or_are_refused_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("peer.key");
        std::fs::write(&key, "0123456789abcdef0123456789abcdef").unwrap();
        let key = key.to_str().unwrap();
        let named = ["--member-name", "b1", "--advertise", "http://b1:8080/"];
        let with_key = |extra: &[&'static str]| {
            let mut args: Vec<&str> = named.to_vec();
            args.extend_from_slice(&["--peer-key", key]);
            args.extend_from_slice(extra);
            scale_out(&args)
        };
        assert_eq!(scale_out(&[]), Ok(None));
        let described = with_key(&["--member-lease", "30s"]).unwrap().unwrap();
        assert!(
            described.contains("\"b1\" at http://b1:8080"),
            "{described}"
        );
        let refused = |args: &[&str], says: &str| {
            let error = scale_out(args).unwrap_err();
            assert!(error.contains(says), "{args:?}: {error}");
        };
        refused(&named, "--member-name needs --peer-key");
        refused(
            &["--member-name", "b1", "--peer-key", key],
            "needs --advertise",
        );
        refused(
            &["--member-lease", "30s"],
            "--member-lease is for dynamic membership",
        );
        refused(
            &["--leave-timeout", "5s"],
            "--leave-timeout is for dynamic membership",
        );
        refused(
            &["--advertise", "http://x"],
            "--advertise is for bridges sharing",
        );
        refused(&["--peer-key", key], "--peer-key is for bridges sharing");
        refused(
            &[
                "--member-name",
                "b1",
                "--member",
                "0/2",
                "--peers",
                "a,b",
                "--peer-key",
                key,
            ],
            "cannot be used with",
        );
        let error = with_key(&["--member-lease", "100ms"]).unwrap_err();
        assert!(error.contains("too short"), "{error}");
        let mut spaced: Vec<&str> = vec!["--member-name", "b 1", "--advertise", "http://b1"];
        spaced.extend_from_slice(&["--peer-key", key]);
        refused(&spaced, "no spaces");
        let mut ftp: Vec<&str> = vec!["--member-name", "b1", "--advertise", "ftp://b1"];
        ftp.extend_from_slice(&["--peer-key", key]);
        refused(&ftp, "http:// or https://");
    }
}
