//! Ghost members: a server restart keeps the members a group had but not their sessions (see
//! the parent module); a member entering counts them and, if there are any, recreates the
//! group with its committed offsets.

use iggy::prelude::{
    ConsumerGroupClient, ConsumerGroupDetails, ConsumerOffsetClient, StreamClient, SystemClient,
    TopicClient,
};

use super::IggyGroupConsumer;
use crate::error::{Error, ErrorKind, Result};
use crate::log::iggy::errors::{GROUP_EXISTS, GROUP_NOT_FOUND, map_err};

impl IggyGroupConsumer {
    /// How many members of the group belong to sessions that no longer exist.
    ///
    /// Member ids are slots, not client ids, so ghosts are counted: the members of the group
    /// minus the memberships that connected clients report.
    pub(super) async fn ghosts(&self, details: &ConsumerGroupDetails) -> Result<usize> {
        if details.members.is_empty() {
            return Ok(0);
        }
        let gone = |what: &str| {
            Error::new(
                ErrorKind::Unavailable,
                format!("{} disappeared", self.doing(what)),
            )
        };
        let stream = self
            .client
            .get_stream(&self.stream_id)
            .await
            .map_err(|e| map_err(e, self.doing("reading the stream of")))?
            .ok_or_else(|| gone("the stream of"))?;
        let topic = self
            .client
            .get_topic(&self.stream_id, &self.topic_id)
            .await
            .map_err(|e| map_err(e, self.doing("reading the topic of")))?
            .ok_or_else(|| gone("the topic of"))?;
        let clients = self
            .client
            .get_clients()
            .await
            .map_err(|e| map_err(e, "listing connected clients"))?;
        let mut live = 0;
        for client in clients.iter().filter(|c| c.consumer_groups_count > 0) {
            let Some(info) = self
                .client
                .get_client(client.client_id)
                .await
                .map_err(|e| map_err(e, "reading a connected client"))?
            else {
                continue; // disconnected meanwhile
            };
            live += info
                .consumer_groups
                .iter()
                .filter(|g| {
                    (g.stream_id, g.topic_id, g.group_id) == (stream.id, topic.id, details.id)
                })
                .count();
        }
        // A member that left while we counted would pass for a ghost: count members again and
        // take the smaller number.
        let members_now = self
            .client
            .get_consumer_group(&self.stream_id, &self.topic_id, &self.group_id)
            .await
            .map_err(|e| map_err(e, self.doing("reading")))?
            .map_or(0, |now| now.members.len());
        Ok(details.members.len().min(members_now).saturating_sub(live))
    }

    /// Replace a group that holds ghost members by a fresh one with the same committed
    /// offsets, and join it.
    pub(super) async fn recreate(&mut self) -> Result<()> {
        tracing::info!(topic = %self.topic, group = %self.group, "consumer group holds members from before a server restart; recreating it");
        let mut committed = Vec::new();
        for partition in 0..self.partitions {
            let stored = self
                .client
                .get_consumer_offset(
                    &self.consumer,
                    &self.stream_id,
                    &self.topic_id,
                    Some(partition),
                )
                .await
                .map_err(|e| map_err(e, self.doing("reading the offsets of")))?;
            if let Some(info) = stored {
                committed.push((partition, info.stored_offset));
            }
        }
        match self
            .client
            .delete_consumer_group(&self.stream_id, &self.topic_id, &self.group_id)
            .await
        {
            Err(e) if !GROUP_NOT_FOUND.contains(&e.as_code()) => {
                return Err(map_err(e, self.doing("deleting")));
            }
            _ => {}
        }
        self.create().await?;
        self.join_as_is().await?;
        for (partition, offset) in committed {
            // Right after recreating we are normally the only member and own every partition;
            // a member that joined meanwhile owns some, and those restart from their start
            // (at-least-once: consumers deduplicate).
            if let Err(e) = self
                .client
                .store_consumer_offset(
                    &self.consumer,
                    &self.stream_id,
                    &self.topic_id,
                    Some(partition),
                    offset,
                )
                .await
            {
                tracing::warn!(topic = %self.topic, group = %self.group, partition, error = %e, "could not restore a committed offset");
            }
        }
        Ok(())
    }

    /// Create the group; another member creating it first is fine.
    pub(super) async fn create(&self) -> Result<()> {
        match self
            .client
            .create_consumer_group(&self.stream_id, &self.topic_id, &self.group)
            .await
        {
            Err(e) if e.as_code() != GROUP_EXISTS => Err(map_err(e, self.doing("creating"))),
            _ => Ok(()),
        }
    }
}
