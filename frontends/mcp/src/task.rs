//! `harness_task`: one whole kernel turn as one `tools/call`, with progress notifications,
//! cancellation, and the turn's questions answered per the approval setting.

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, LoggingLevel, ProgressNotificationParam};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::json;
use superpi_client::{ClientError, KernelClient};
use superpi_proto::EventBody;
use superpi_proto::method::{ConversationInfo, OpenParams, SubmitResult, WatchParams};

use super::{CANCEL_GRACE, SuperpiMcp, cancelled, is_modern, lock, sleep_until};
use crate::approval;
use crate::render::{TaskOut, TaskRenderer};
use crate::tools::{self, HARNESS_TASK, HarnessTaskArgs};

impl SuperpiMcp {
    /// Opens `harness_task`'s conversation and logs it; `Ok(Err(result))` is a refusal that is
    /// the call's answer.
    pub(super) async fn open_task(
        &self,
        args: &HarnessTaskArgs,
        context: &RequestContext<RoleServer>,
    ) -> Result<Result<(KernelClient, ConversationInfo), CallToolResult>, ErrorData> {
        let kernel = self.kernel().await?;
        let harness = args.harness.clone().or_else(|| self.inner.config.harness.clone());
        let title: String = args.prompt.chars().take(60).collect();
        let open = OpenParams {
            harness,
            workspace: Some(self.inner.config.workspace.clone()),
            title: Some(title),
            mode: self.inner.config.mode.clone(),
            ..Default::default()
        };
        let info = match kernel.open(open).await {
            Ok(info) => info,
            Err(err) if tools::is_tool_level_refusal(&err) => {
                return Ok(Err(CallToolResult::error(vec![ContentBlock::text(err.to_string())])));
            }
            Err(ClientError::Kernel(e)) if e.code == superpi_proto::message::codes::NOT_FOUND => {
                return Err(ErrorData::invalid_params(format!("unknown harness: {}", e.message), None));
            }
            Err(err) => return Err(tools::kernel_error(HARNESS_TASK, &err)),
        };
        lock(&self.inner.started).push((info.conversation_id, info.harness.clone()));
        self.inner.started_count.send_modify(|n| *n += 1);
        self.log(
            context,
            LoggingLevel::Info,
            "harness_task started",
            json!({"conversation_id": info.conversation_id, "harness": info.harness}),
        )
        .await;
        Ok(Ok((kernel, info)))
    }

    /// Submits the task's prompt to the conversation `open_task` made. A submit the kernel
    /// refuses (a bad `outputSchema`: the kernel's check is the one that counts) ran nothing,
    /// so that conversation, empty, is deleted: a refused task leaves nothing behind.
    pub(super) async fn submit_task(
        &self,
        kernel: &KernelClient,
        args: &HarnessTaskArgs,
        conversation_id: i64,
    ) -> Result<SubmitResult, ErrorData> {
        let refused = match kernel.submit(args.submission(conversation_id)).await {
            Ok(submitted) => return Ok(submitted),
            Err(err) => err,
        };
        lock(&self.inner.started).retain(|(id, _)| *id != conversation_id);
        if let Err(err) = kernel.delete(conversation_id).await {
            tracing::warn!(conversation_id, "deleting the conversation of a refused harness_task: {err}");
        }
        Err(tools::kernel_error(HARNESS_TASK, &refused))
    }

    /// `harness_task`: open a conversation, watch it, submit the prompt, follow the turn to
    /// its end; progress notifications on the way, cancellation cancels the turn.
    pub(super) async fn harness_task(
        &self,
        args: HarnessTaskArgs,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let (kernel, info) = match self.open_task(&args, context).await? {
            Ok(opened) => opened,
            Err(refused) => return Ok(refused),
        };
        let conversation_id = info.conversation_id;

        // The turn's questions are answered per the approval setting; without an answerer the
        // watch is not interactive and the kernel refuses askable calls at once.
        let approval = self.inner.config.approval;
        let watch = WatchParams::after(conversation_id, info.head_seq)
            .interactive(approval.answers(context, is_modern(context)));
        // Answers in flight; dropped (and aborted) when the task ends.
        let mut questions = tokio::task::JoinSet::new();
        let mut sub = kernel.watch(watch).await.map_err(|err| tools::kernel_error(HARNESS_TASK, &err))?;
        let submitted = match self.submit_task(&kernel, &args, conversation_id).await {
            Ok(submitted) => submitted,
            Err(err) => {
                sub.close().await;
                return Err(err);
            }
        };
        let mut renderer = TaskRenderer::new(&info.harness, conversation_id).structured(args.output_schema.is_some());
        renderer.follow_turn(submitted.turn_id);
        let progress_token = context.meta.get_progress_token();

        let mut cancel_deadline: Option<tokio::time::Instant> = None;
        loop {
            let event = tokio::select! {
                _ = cancelled(&context.ct, &self.inner.shutdown), if cancel_deadline.is_none() => {
                    cancel_deadline = Some(tokio::time::Instant::now() + CANCEL_GRACE);
                    self.log(context, LoggingLevel::Info, "harness_task cancelled", json!({"conversation_id": conversation_id})).await;
                    if let Err(err) = kernel.cancel(conversation_id).await {
                        tracing::warn!(conversation_id, "cancelling the turn failed: {err}");
                    }
                    continue;
                }
                _ = sleep_until(cancel_deadline) => {
                    return Err(ErrorData::internal_error("the cancelled turn did not end in time", None));
                }
                event = sub.next() => event,
            };
            let Some(event) = event else {
                return Err(ErrorData::internal_error("the kernel connection closed during the turn", None));
            };
            if let EventBody::PermissionRequest { request_id, tool_name, arguments, reason, risk, .. } = &event.body {
                let question = approval::question(tool_name, arguments, reason, risk.as_deref());
                let answer =
                    approval::answer(kernel.clone(), context.peer.clone(), approval, request_id.clone(), question);
                questions.spawn(answer);
            }
            if let EventBody::UiRequest { request_id, request } = &event.body
                && let Some(question) = crate::questions::question_request(request)
            {
                let (kernel, peer) = (kernel.clone(), context.peer.clone());
                questions.spawn(crate::questions::answer(kernel, peer, request_id.clone(), question));
            }
            for out in renderer.render(&event) {
                match out {
                    TaskOut::Progress { progress, message } => {
                        if let Some(token) = progress_token.clone() {
                            let note = ProgressNotificationParam::new(token, progress).with_message(message);
                            if let Err(err) = context.peer.notify_progress(note).await {
                                tracing::debug!("progress notification not sent: {err}");
                            }
                        }
                    }
                    TaskOut::Finished(outcome) => {
                        self.log(
                            context,
                            LoggingLevel::Info,
                            "harness_task finished",
                            json!({"conversation_id": conversation_id, "status": format!("{:?}", outcome.status)}),
                        )
                        .await;
                        sub.close().await;
                        return Ok(outcome.into_result());
                    }
                }
            }
        }
    }
}
