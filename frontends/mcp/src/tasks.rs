//! `harness_task` as a task (the tasks extension of protocol 2026-07-28): a client that declares
//! the extension gets a task handle at once and polls `tasks/get`, which reads the turn's stored
//! events from the kernel. The handle names all a poll needs (conversation, turn, where its
//! events start, harness), so any server on the same database answers it: stateless HTTP behind
//! a load balancer. The kernel checks that the conversation is the caller's.

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::service::{RequestContext, RoleServer};
use superpi_client::KernelClient;
use superpi_proto::EventBody;
use superpi_proto::method::WatchParams;

use super::{SuperpiMcp, cancelled};
use crate::approval;
use crate::render::{self, TaskOut, TaskRenderer};
use crate::tools::{self, HARNESS_TASK, HarnessTaskArgs};

/// How often a client is asked to poll.
pub const POLL_MS: u64 = 500;

/// What a task id names. Its text: `superpi.CONVERSATION.TURN.SEQ.CREATED_MS.HARNESS`, with
/// `structured.` after `superpi.` when the call gave an `outputSchema`: the server keeps no task
/// state, so the id says that the answer is to be given parsed too.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskId {
    pub conversation_id: i64,
    pub turn_id: i64,
    /// The conversation's last stored event before the turn: the poll replays from here.
    pub after_seq: u64,
    pub created_ms: i64,
    pub harness: String,
    /// The turn has an output schema: a completed task's result has `structured_output`.
    pub structured: bool,
}

const STRUCTURED: &str = "structured.";

impl TaskId {
    pub fn encode(&self) -> String {
        let TaskId { conversation_id, turn_id, after_seq, created_ms, harness, structured } = self;
        let marker = if *structured { STRUCTURED } else { "" };
        format!("superpi.{marker}{conversation_id}.{turn_id}.{after_seq}.{created_ms}.{harness}")
    }

    pub fn parse(text: &str) -> Option<TaskId> {
        let rest = text.strip_prefix("superpi.")?;
        let (structured, rest) = match rest.strip_prefix(STRUCTURED) {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let mut parts = rest.splitn(5, '.');
        let id = TaskId {
            structured,
            conversation_id: parts.next()?.parse().ok()?,
            turn_id: parts.next()?.parse().ok()?,
            after_seq: parts.next()?.parse().ok()?,
            created_ms: parts.next()?.parse().ok()?,
            harness: parts.next().filter(|h| !h.is_empty())?.to_string(),
        };
        Some(id)
    }
}

fn timestamp(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn unknown_task(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown task: {task_id}"), None)
}

impl SuperpiMcp {
    /// `harness_task` for a client that declared tasks: the turn is submitted and the handle
    /// answered at once. With `--approval host` this server stays on the turn to answer its
    /// questions (`allow_once`); otherwise nobody watches interactively and the kernel refuses
    /// what it would ask about.
    pub(super) async fn start_task(
        &self,
        args: HarnessTaskArgs,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (kernel, info) = match self.open_task(&args, context).await? {
            Ok(opened) => opened,
            Err(refused) => return Ok(refused.into()),
        };
        let conversation_id = info.conversation_id;
        let approval = self.inner.config.approval;
        let answers = approval.answers(context, true);
        let watch = WatchParams::after(conversation_id, info.head_seq).interactive(true);
        let sub = match answers {
            true => Some(kernel.watch(watch).await.map_err(|err| tools::kernel_error(HARNESS_TASK, &err))?),
            false => None,
        };
        let submitted = kernel
            .submit(args.submission(conversation_id))
            .await
            .map_err(|err| tools::kernel_error(HARNESS_TASK, &err))?;
        let now = chrono::Utc::now().timestamp_millis();
        let id = TaskId {
            conversation_id,
            turn_id: submitted.turn_id,
            after_seq: info.head_seq,
            created_ms: now,
            harness: info.harness.clone(),
            structured: args.output_schema.is_some(),
        };
        if let Some(mut sub) = sub {
            let (shutdown, peer, turn_id) = (self.inner.shutdown.clone(), context.peer.clone(), submitted.turn_id);
            let answerer = async move {
                let mut questions = tokio::task::JoinSet::new();
                let never = tokio_util::sync::CancellationToken::new();
                loop {
                    let event = tokio::select! {
                        _ = cancelled(&never, &shutdown) => {
                            let _ = kernel.cancel(conversation_id).await;
                            return;
                        }
                        event = sub.next() => event,
                    };
                    let Some(event) = event else { return };
                    if let EventBody::PermissionRequest { request_id, tool_name, arguments, reason, risk, .. } =
                        &event.body
                    {
                        let question = approval::question(tool_name, arguments, reason, risk.as_deref());
                        questions.spawn(approval::answer(
                            kernel.clone(),
                            peer.clone(),
                            approval,
                            request_id.clone(),
                            question,
                        ));
                    }
                    if event.body.is_turn_end() && event.turn_id == Some(turn_id) {
                        sub.close().await;
                        return;
                    }
                }
            };
            tokio::spawn(self.inner.in_flight.track_future(answerer));
        }
        let task =
            Task::new(id.encode(), TaskStatus::Working, timestamp(now), timestamp(now)).with_poll_interval_ms(POLL_MS);
        Ok(CreateTaskResult::new(task).into())
    }

    /// `tasks/get`: the turn's stored events so far, rendered as `harness_task` renders them:
    /// working (with the latest step as the status message) until the turn's end, then its
    /// result; a cancelled turn is a cancelled task.
    pub(super) async fn task_state(&self, task_id: &str) -> Result<GetTaskResult, ErrorData> {
        let id = TaskId::parse(task_id).ok_or_else(|| unknown_task(task_id))?;
        let kernel = self.kernel().await?;
        let mut sub = kernel
            .watch(WatchParams::after(id.conversation_id, id.after_seq))
            .await
            .map_err(|_| unknown_task(task_id))?;
        let head = sub.head_seq();
        let mut renderer = TaskRenderer::new(&id.harness, id.conversation_id).structured(id.structured);
        renderer.follow_turn(id.turn_id);
        let (mut seen, mut step, mut finished) = (id.after_seq, None, None);
        while seen < head && finished.is_none() {
            let Some(event) = sub.next().await else { break };
            seen = event.seq;
            for out in renderer.render(&event) {
                match out {
                    TaskOut::Progress { message, .. } => step = Some(message),
                    TaskOut::Finished(outcome) => finished = Some(outcome),
                }
            }
        }
        sub.close().await;
        let payload = match finished {
            Some(outcome) if outcome.status == render::TaskStatus::Cancelled => TaskPayload::Cancelled,
            Some(outcome) => {
                let result = serde_json::to_value(outcome.into_result())
                    .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
                TaskPayload::Completed { result: result.as_object().cloned().unwrap_or_else(JsonObject::new) }
            }
            None => TaskPayload::Working,
        };
        let now = timestamp(chrono::Utc::now().timestamp_millis());
        let mut task =
            Task::new(task_id, TaskStatus::Working, timestamp(id.created_ms), now).with_poll_interval_ms(POLL_MS);
        if let Some(step) = step {
            task = task.with_status_message(step);
        }
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// `tasks/cancel`: cancels the turn in the kernel (the status follows on the next poll).
    pub(super) async fn cancel_task(&self, task_id: &str) -> Result<(), ErrorData> {
        let id = TaskId::parse(task_id).ok_or_else(|| unknown_task(task_id))?;
        let kernel: KernelClient = self.kernel().await?;
        kernel.cancel(id.conversation_id).await.map(drop).map_err(|_| unknown_task(task_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_names_its_turn_and_reads_back() {
        let id = TaskId {
            conversation_id: 12,
            turn_id: 3,
            after_seq: 40,
            created_ms: 1_700_000_000_123,
            harness: "superpi.code".into(),
            structured: false,
        };
        assert_eq!(id.encode(), "superpi.12.3.40.1700000000123.superpi.code");
        assert_eq!(TaskId::parse(&id.encode()), Some(id.clone()));
        let structured = TaskId { structured: true, ..id };
        assert_eq!(structured.encode(), "superpi.structured.12.3.40.1700000000123.superpi.code");
        assert_eq!(TaskId::parse(&structured.encode()), Some(structured));
        for bad in ["", "superpi.", "superpi.1.2.3.4.", "superpi.x.2.3.4.h", "other.1.2.3.4.h", "superpi.1.2.3.h"] {
            assert_eq!(TaskId::parse(bad), None, "{bad}");
        }
        assert_eq!(timestamp(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }
}
