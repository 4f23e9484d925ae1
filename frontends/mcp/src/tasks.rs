//! `harness_task` as a task (the tasks extension of protocol 2026-07-28): a client that declares
//! the extension gets a task handle at once and polls `tasks/get`, which reads the turn's stored
//! events from the kernel. The handle names all a poll needs (conversation, turn, where its
//! events start, harness), so any server on the same database answers it: stateless HTTP behind
//! a load balancer. The kernel checks that the conversation is the caller's.
//!
//! A question of the turn the person is to answer (the model's questions; with `--approval
//! elicit` the permission questions too) makes `tasks/get` answer `input_required`, each
//! question a form elicitation keyed by the kernel's request id, for a client that declared
//! elicitation; `tasks/update` hands the answers to the kernel (`permission.respond`,
//! `ui.respond`). The open questions are read from the stored events like the rest (a
//! `ui_request` or `permission_request` no `ui_resolved` answers yet), so any server answers
//! both. The server that started the turn holds the interactive watch that lets the kernel ask.

use std::collections::BTreeMap;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CreateTaskResult, DetailedTask, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, GetTaskResult, InputRequest, InputResponses, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use rmcp::service::{RequestContext, RoleServer};
use superpi_client::KernelClient;
use superpi_proto::EventBody;
use superpi_proto::method::WatchParams;
use superpi_proto::question::{QuestionAnswer, QuestionRequest};

use super::{SuperpiMcp, cancelled};
use crate::approval::{self, Approval};
use crate::questions;
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

/// A question of the turn that waits for the person, by the kernel's request id.
enum Open {
    /// A permission question (`--approval elicit`): accept allows the call once.
    Permission(String),
    /// One of the model's questions: the form's answers are the kernel's answer.
    Question(QuestionRequest),
}

impl Open {
    /// The question as the form elicitation a client shows; `None` for a question MCP forms
    /// cannot take.
    fn input_request(&self) -> Option<InputRequest> {
        let params = match self {
            Open::Permission(message) => ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: message.clone(),
                requested_schema: ElicitationSchema::new(Default::default()),
            },
            Open::Question(request) => questions::elicitation(request)?,
        };
        Some(InputRequest::Elicitation(ElicitRequest::new(params)))
    }
}

/// What a task's stored events say so far.
struct Replay {
    /// The latest step, for the status message.
    step: Option<String>,
    finished: Option<render::TaskOutcome>,
    open: BTreeMap<String, Open>,
}

fn unknown_task(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown task: {task_id}"), None)
}

impl SuperpiMcp {
    /// `harness_task` for a client that declared tasks: the turn is submitted and the handle
    /// answered at once. With `--approval host` this server stays on the turn to answer its
    /// permission questions (`allow_once`); a client that declared elicitation gets the rest
    /// (and with `elicit` those too) as `input_required`; otherwise nobody watches interactively
    /// and the kernel refuses what it would ask about.
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
        // A client that declared elicitation answers the turn's questions through `tasks/get`
        // and `tasks/update`: this server only keeps the kernel asking (an interactive watch).
        let asks = approval::can_elicit_inline(context) && approval != Approval::Refuse;
        let answers = approval.answers(context, true) || asks;
        let watch = WatchParams::after(conversation_id, info.head_seq).interactive(answers);
        let sub = match answers {
            true => Some(kernel.watch(watch).await.map_err(|err| tools::kernel_error(HARNESS_TASK, &err))?),
            false => None,
        };
        let submitted = match self.submit_task(&kernel, &args, conversation_id).await {
            Ok(submitted) => submitted,
            Err(err) => {
                if let Some(sub) = sub {
                    sub.close().await;
                }
                return Err(err);
            }
        };
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
                    match &event.body {
                        // `host` answers at once; `elicit` leaves them to `tasks/update`.
                        EventBody::PermissionRequest { request_id, tool_name, arguments, reason, risk, .. }
                            if approval == Approval::Host =>
                        {
                            let question = approval::question(tool_name, arguments, reason, risk.as_deref());
                            let request_id = request_id.clone();
                            let answer = approval::answer(kernel.clone(), peer.clone(), approval, request_id, question);
                            questions.spawn(answer);
                        }
                        // The model's questions wait for `tasks/update`, unless nobody can be asked.
                        EventBody::UiRequest { request_id, request }
                            if !asks && questions::question_request(request).is_some() =>
                        {
                            let outcome = QuestionAnswer::Unavailable(questions::NO_ELICITATION.into()).to_outcome();
                            if let Err(err) = kernel.respond_ui(request_id, outcome).await {
                                tracing::debug!(request_id, "ui.respond: {err}");
                            }
                        }
                        _ => {}
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

    /// The task's stored events so far, rendered as `harness_task` renders them, with the
    /// questions still open.
    async fn replay(&self, task_id: &str) -> Result<(TaskId, Replay), ErrorData> {
        let id = TaskId::parse(task_id).ok_or_else(|| unknown_task(task_id))?;
        let kernel = self.kernel().await?;
        let mut sub = kernel
            .watch(WatchParams::after(id.conversation_id, id.after_seq))
            .await
            .map_err(|_| unknown_task(task_id))?;
        let head = sub.head_seq();
        let mut renderer = TaskRenderer::new(&id.harness, id.conversation_id).structured(id.structured);
        renderer.follow_turn(id.turn_id);
        let mut seen = id.after_seq;
        let mut replay = Replay { step: None, finished: None, open: BTreeMap::new() };
        let asks_permission = self.inner.config.approval == Approval::Elicit;
        while seen < head && replay.finished.is_none() {
            let Some(event) = sub.next().await else { break };
            seen = event.seq;
            match &event.body {
                EventBody::PermissionRequest { request_id, tool_name, arguments, reason, risk, .. }
                    if asks_permission =>
                {
                    let question = approval::question(tool_name, arguments, reason, risk.as_deref());
                    replay.open.insert(request_id.clone(), Open::Permission(question));
                }
                EventBody::UiRequest { request_id, request } => {
                    if let Some(question) = questions::question_request(request) {
                        replay.open.insert(request_id.clone(), Open::Question(question));
                    }
                }
                EventBody::UiResolved { request_id, .. } => {
                    replay.open.remove(request_id);
                }
                _ => {}
            }
            for out in renderer.render(&event) {
                match out {
                    TaskOut::Progress { message, .. } => replay.step = Some(message),
                    TaskOut::Finished(outcome) => replay.finished = Some(outcome),
                }
            }
        }
        sub.close().await;
        Ok((id, replay))
    }

    /// `tasks/get`: working (with the latest step as the status message) until the turn's end,
    /// then its result; a cancelled turn is a cancelled task. A turn waiting on questions is
    /// `input_required` for a client that declared elicitation.
    pub(super) async fn task_state(
        &self,
        task_id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let (id, replay) = self.replay(task_id).await?;
        let input_requests: BTreeMap<String, InputRequest> =
            replay.open.iter().filter_map(|(key, open)| Some((key.clone(), open.input_request()?))).collect();
        let payload = match replay.finished {
            Some(outcome) if outcome.status == render::TaskStatus::Cancelled => TaskPayload::Cancelled,
            Some(outcome) => {
                let result = serde_json::to_value(outcome.into_result())
                    .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
                TaskPayload::Completed { result: result.as_object().cloned().unwrap_or_else(JsonObject::new) }
            }
            None if !input_requests.is_empty() && approval::can_elicit_inline(context) => {
                TaskPayload::InputRequired { input_requests }
            }
            None => TaskPayload::Working,
        };
        let now = timestamp(chrono::Utc::now().timestamp_millis());
        let mut task =
            Task::new(task_id, TaskStatus::Working, timestamp(id.created_ms), now).with_poll_interval_ms(POLL_MS);
        if let Some(step) = replay.step {
            task = task.with_status_message(step);
        }
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// `tasks/update`: the person's answers to the task's open questions go to the kernel, as
    /// an editor's would. A key that names no open question (answered already, withdrawn, made
    /// up) is ignored, as the extension says; an answer that is no elicitation result dismisses
    /// its question.
    pub(super) async fn answer_task(&self, task_id: &str, responses: &InputResponses) -> Result<(), ErrorData> {
        let (_, mut replay) = self.replay(task_id).await?;
        let kernel = self.kernel().await?;
        for (key, response) in responses {
            let Some(open) = replay.open.remove(key) else {
                tracing::debug!(task_id, key, "tasks/update: no such open question");
                continue;
            };
            let result = serde_json::from_value::<ElicitResult>(response.clone()).ok();
            let answered = match open {
                Open::Permission(_) => {
                    let allowed = result.is_some_and(|r| r.action == ElicitationAction::Accept);
                    let option = if allowed { "allow_once" } else { "reject_once" };
                    tracing::info!(task_id, key, option, "answering a task's question");
                    kernel.respond_permission(key, option).await.map(drop)
                }
                Open::Question(_) => kernel.respond_ui(key, questions::outcome(result)).await.map(drop),
            };
            if let Err(err) = answered {
                // Answered or withdrawn meanwhile: the kernel keeps the first answer.
                tracing::debug!(task_id, key, "tasks/update: {err}");
            }
        }
        Ok(())
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
