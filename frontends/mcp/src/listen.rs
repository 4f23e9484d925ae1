//! `subscriptions/listen` (protocol 2026-07-28): the one stream a client opens for change
//! notifications, in place of the earlier revisions' `resources/subscribe` and the session's
//! standalone stream. What superpi's server has to say there: the resource list changed (a
//! `harness_task` of this connection started a conversation, which the list names), and a
//! conversation's transcript changed (`superpi://conversation/{id}/transcript`, followed in the
//! kernel: any conversation of the principal, whoever runs its turns). The tool and prompt lists
//! do not change while a connection lasts, so those categories are not accepted; task status
//! has no category in the filter (rmcp 3.11 refuses `notifications/tasks` on a listen stream):
//! tasks are polled. A transcript's first update comes when its following begins (rmcp
//! acknowledges before it can begin). rmcp sends the acknowledgment with the accepted filter, stamps the
//! subscription id on each notification, and sends the final result when [`listen`] returns:
//! here when the connection ends; a client ends it by cancelling the request.

use rmcp::ErrorData;
use rmcp::model::SubscriptionFilter;
use rmcp::service::{SubscriptionContext, SubscriptionSink};
use superpi_proto::method::WatchParams;

use super::SuperpiMcp;
use crate::catalog;

/// What this server accepts of a requested filter: the resource list, and the transcripts among
/// the resources asked for (by the URIs the client gave).
pub(super) fn accepted(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let mut filter = SubscriptionFilter::new();
    filter.resources_list_changed = Some(true);
    let transcripts: Vec<String> = requested
        .resource_subscriptions
        .iter()
        .flatten()
        .filter(|uri| catalog::parse_transcript_uri(uri).is_some())
        .cloned()
        .collect();
    filter.resource_subscriptions = (!transcripts.is_empty()).then_some(transcripts);
    filter
}

impl SuperpiMcp {
    /// One listen stream, until the client cancels it (no final result) or the connection ends
    /// (the final result).
    pub(super) async fn listen_stream(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let sink = context.sink().clone();
        let accepted = context.accepted().clone();
        let mut started = self.inner.started_count.subscribe();
        started.mark_unchanged();
        // One follower per transcript, each sending its URI here; aborted when the stream ends.
        let (changed_tx, mut transcripts) = tokio::sync::mpsc::channel::<String>(16);
        let mut followers = tokio::task::JoinSet::new();
        for uri in accepted.resource_subscriptions.iter().flatten() {
            self.follow_transcript(uri.clone(), changed_tx.clone(), &mut followers).await;
        }
        drop(changed_tx);
        let lists = accepted.resources_list_changed == Some(true);
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                _ = self.inner.shutdown.cancelled() => return Ok(()),
                changed = started.changed(), if lists => {
                    if changed.is_err() { return Ok(()) }
                    send(&sink, sink.notify_resource_list_changed().await);
                }
                Some(uri) = transcripts.recv() => {
                    send(&sink, sink.notify_resource_updated(uri).await);
                }
            }
        }
    }

    /// Follows the transcript `uri`: its URI goes to `changed` once per event the kernel stores
    /// in the conversation from now on. Nothing when the kernel will not watch it (no such
    /// conversation, or another principal's): nothing will be said about it.
    async fn follow_transcript(
        &self,
        uri: String,
        changed: tokio::sync::mpsc::Sender<String>,
        followers: &mut tokio::task::JoinSet<()>,
    ) {
        let Some((conversation_id, _)) = catalog::parse_transcript_uri(&uri) else { return };
        let Ok(kernel) = self.kernel().await else { return };
        let mut sub = match kernel.watch(WatchParams::live(conversation_id)).await {
            Ok(sub) => sub,
            Err(err) => {
                tracing::debug!(uri, "not following the transcript: {err}");
                return;
            }
        };
        // rmcp acknowledged the filter before this watch began: a change stored in between
        // would go unsaid, so the client is told once to read the transcript again (an update
        // says "read it again"; one too many costs a read, one too few a stale view).
        let _ = changed.try_send(uri.clone());
        followers.spawn(async move {
            while let Some(event) = sub.next().await {
                if !event.body.is_transient() && changed.send(uri.clone()).await.is_err() {
                    break;
                }
            }
            sub.close().await;
        });
    }
}

fn send(sink: &SubscriptionSink, sent: Result<(), rmcp::service::SubscriptionSendError>) {
    if let Err(err) = sent {
        tracing::debug!(subscription = ?sink.id(), "listen notification not sent: {err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_list_and_transcripts_are_accepted_nothing_else() {
        let requested = SubscriptionFilter::builder()
            .tools_list_changed()
            .prompts_list_changed()
            .resource_subscriptions(["superpi://conversation/4/transcript", catalog::CONTEXT_URI])
            .build();
        let got = accepted(&requested);
        assert_eq!(got.tools_list_changed, None);
        assert_eq!(got.prompts_list_changed, None);
        assert_eq!(got.resources_list_changed, Some(true));
        assert_eq!(got.resource_subscriptions, Some(vec!["superpi://conversation/4/transcript".to_string()]));
        assert_eq!(accepted(&SubscriptionFilter::new()).resource_subscriptions, None);
    }
}
