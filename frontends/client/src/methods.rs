//! The typed kernel methods of [`KernelClient`]: one short call each, over `request`.

use std::time::{Duration, Instant};

use serde_json::Value;
use superpi_proto::memory::{
    MemoryAddParams, MemoryListParams, MemoryListResult, MemoryPinParams, MemoryRemoveParams, NoteInfo,
};
use superpi_proto::method::{
    BackendStatus, CommandInfo, CommandListParams, CommandListResult, ConversationInfo, ConversationRef, ForkParams,
    HarnessInfo, HistoryParams, HistoryResult, KernelStatus, ListParams, ListResult, Method, ModelInfo, OpenParams,
    PermissionRespondParams, SetEffortParams, SetModeParams, SubmitParams, SubmitResult, ToolListParams,
    ToolListResult, UiRespondParams, UndoParams, UndoResult,
};
use superpi_proto::schedule::{
    ScheduleAddParams, ScheduleAddResult, ScheduleInfo, ScheduleListParams, ScheduleListResult, ScheduleRemoveParams,
    ScheduleResumeParams, TriggerFireParams, TriggerFireResult,
};
use superpi_proto::{Effort, ToolDef};

use crate::{ClientError, HistoryPages, KernelClient, Locations};

/// Whether `pid` is a process that has not exited (a zombie has).
fn process_runs(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which ends with the last `)`.
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

impl KernelClient {
    pub async fn open(&self, params: OpenParams) -> Result<ConversationInfo, ClientError> {
        self.request(Method::SessionOpen(params)).await
    }

    pub async fn submit(&self, params: SubmitParams) -> Result<SubmitResult, ClientError> {
        self.request(Method::SessionSubmit(params)).await
    }

    /// Submits plain text as the user message.
    pub async fn submit_text(&self, conversation_id: i64, prompt: &str) -> Result<SubmitResult, ClientError> {
        self.submit(SubmitParams { conversation_id, prompt: Some(prompt.to_string()), ..Default::default() }).await
    }
    pub async fn cancel(&self, conversation_id: i64) -> Result<Value, ClientError> {
        self.request(Method::SessionCancel(ConversationRef { conversation_id })).await
    }

    /// The first page of the conversations (the latest 100).
    pub async fn list(&self) -> Result<Vec<ConversationInfo>, ClientError> {
        Ok(self.list_page(ListParams::default()).await?.conversations)
    }

    /// The latest `most` conversations (all of them: `usize::MAX`), page by page by cursor,
    /// and whether more follow.
    pub async fn list_up_to(&self, most: usize) -> Result<(Vec<ConversationInfo>, bool), ClientError> {
        /// The kernel's largest page.
        const PAGE: usize = 1000;
        let (mut listed, mut cursor) = (Vec::new(), None);
        while listed.len() < most {
            let limit = (most - listed.len()).min(PAGE) as u32;
            let page = self.list_page(ListParams { limit: Some(limit), offset: None, cursor: cursor.take() }).await?;
            listed.extend(page.conversations);
            match page.next {
                Some(next) => cursor = Some(next),
                None => return Ok((listed, false)),
            }
        }
        Ok((listed, true))
    }

    /// One page of the conversations: the next one follows with `cursor` set to its `next`.
    pub async fn list_page(&self, params: ListParams) -> Result<ListResult, ClientError> {
        self.request(Method::SessionList(params)).await
    }

    /// A conversation's whole history in memory: every page of `session.history`, in order.
    /// A replay reads [`KernelClient::history_pages`] instead, one page at a time.
    pub async fn history(&self, conversation_id: i64) -> Result<HistoryResult, ClientError> {
        self.history_pages(conversation_id).await?.collect().await
    }

    /// A conversation's history page by page (the first read now), up to its head as the
    /// first page found it.
    pub async fn history_pages(&self, conversation_id: i64) -> Result<HistoryPages, ClientError> {
        HistoryPages::open(self, conversation_id, None, None).await
    }

    /// The entries after `after` (from the start for `None`) up to `until`, page by page.
    pub async fn history_range(
        &self,
        conversation_id: i64,
        after: Option<u64>,
        until: u64,
    ) -> Result<HistoryPages, ClientError> {
        HistoryPages::open(self, conversation_id, after, Some(until)).await
    }

    /// One page of a conversation's history: the entries after `after_seq`.
    pub async fn history_page(
        &self,
        conversation_id: i64,
        after_seq: Option<u64>,
    ) -> Result<HistoryResult, ClientError> {
        self.request(Method::SessionHistory(HistoryParams { conversation_id, after_seq, limit: None })).await
    }

    pub async fn fork(&self, conversation_id: i64, at_seq: Option<u64>) -> Result<ConversationInfo, ClientError> {
        self.request(Method::SessionFork(ForkParams { conversation_id, at_seq })).await
    }

    /// Compacts an idle conversation's context now (`session.compact`).
    pub async fn compact(&self, conversation_id: i64) -> Result<Value, ClientError> {
        self.request(Method::SessionCompact(ConversationRef { conversation_id })).await
    }

    /// The user-defined commands, with those of the conversation's workspace (`command.list`).
    pub async fn commands(&self, conversation_id: Option<i64>) -> Result<Vec<CommandInfo>, ClientError> {
        let result: CommandListResult =
            self.request(Method::CommandList(CommandListParams { conversation_id })).await?;
        Ok(result.commands)
    }

    /// Starts a conversation's context afresh (`session.clear`): at once when idle, else once
    /// the turns before it end (the answer waits for it).
    pub async fn clear(&self, conversation_id: i64) -> Result<Value, ClientError> {
        self.request(Method::SessionClear(ConversationRef { conversation_id })).await
    }

    /// Deletes a conversation and everything stored of it (`session.delete`); refused while a
    /// turn of it runs.
    pub async fn delete(&self, conversation_id: i64) -> Result<Value, ClientError> {
        self.request(Method::SessionDelete(ConversationRef { conversation_id })).await
    }

    /// Puts back what a turn (without one, the latest that changed the workspace and is not
    /// undone) changed in the conversation's workspace (`session.undo`).
    pub async fn undo(&self, conversation_id: i64, turn_id: Option<i64>) -> Result<UndoResult, ClientError> {
        self.request(Method::SessionUndo(UndoParams { conversation_id, turn_id })).await
    }

    pub async fn set_mode(&self, conversation_id: i64, mode: &str) -> Result<Value, ClientError> {
        self.request(Method::SessionSetMode(SetModeParams { conversation_id, mode: mode.to_string() })).await
    }

    /// Sets the conversation's thinking effort (`None`: the provider settings' default).
    pub async fn set_effort(&self, conversation_id: i64, effort: Option<Effort>) -> Result<Value, ClientError> {
        self.request(Method::SessionSetEffort(SetEffortParams { conversation_id, effort })).await
    }

    pub async fn harnesses(&self) -> Result<Vec<HarnessInfo>, ClientError> {
        Ok(self.harness_list().await?.0)
    }

    /// `harness.list` whole: the harnesses, and each agent backend's program and version or
    /// why it is unavailable.
    pub async fn harness_list(&self) -> Result<(Vec<HarnessInfo>, Vec<BackendStatus>), ClientError> {
        #[derive(serde::Deserialize)]
        struct Harnesses {
            harnesses: Vec<HarnessInfo>,
            #[serde(default)]
            backends: Vec<BackendStatus>,
        }
        let list: Harnesses = self.request(Method::HarnessList).await?;
        Ok((list.harnesses, list.backends))
    }

    /// The tools a harness offers (the kernel's default harness for `None`), with their facts.
    pub async fn tools(&self, harness: Option<&str>) -> Result<Vec<ToolDef>, ClientError> {
        let params = ToolListParams { harness: harness.map(str::to_string) };
        let list: ToolListResult = self.request(Method::ToolList(params)).await?;
        Ok(list.tools)
    }

    /// The configured providers' models (`model.list`): frontends learn models from the
    /// kernel, never from their own environment.
    pub async fn models(&self) -> Result<Vec<ModelInfo>, ClientError> {
        #[derive(serde::Deserialize)]
        struct Models {
            models: Vec<ModelInfo>,
        }
        let list: Models = self.request(Method::ModelList).await?;
        Ok(list.models)
    }

    pub async fn respond_permission(&self, request_id: &str, option_id: &str) -> Result<Value, ClientError> {
        self.request(Method::PermissionRespond(PermissionRespondParams {
            request_id: request_id.to_string(),
            option_id: option_id.to_string(),
        }))
        .await
    }

    /// Answers a `ui_request` (for `read_text_file`: `{"content": TEXT}` or anything else to
    /// read from disk).
    pub async fn respond_ui(&self, request_id: &str, outcome: Value) -> Result<Value, ClientError> {
        self.request(Method::UiRespond(UiRespondParams { request_id: request_id.to_string(), outcome })).await
    }

    pub async fn status(&self) -> Result<KernelStatus, ClientError> {
        self.request(Method::KernelStatus).await
    }

    /// What the kernel counted since it started (`kernel.metrics`).
    pub async fn metrics(&self) -> Result<superpi_proto::method::MetricsResult, ClientError> {
        self.request(Method::KernelMetrics).await
    }

    /// Adds a cron schedule or a webhook trigger (`schedule.add`); a trigger's token and
    /// secret are in this answer only.
    pub async fn schedule_add(&self, params: ScheduleAddParams) -> Result<ScheduleAddResult, ClientError> {
        self.request(Method::ScheduleAdd(params)).await
    }

    /// The caller's schedules, each with its latest `runs` runs (`schedule.list`).
    pub async fn schedule_list(&self, runs: Option<u32>) -> Result<Vec<ScheduleInfo>, ClientError> {
        let list: ScheduleListResult = self.request(Method::ScheduleList(ScheduleListParams { runs })).await?;
        Ok(list.schedules)
    }

    pub async fn schedule_remove(&self, id: i64) -> Result<Value, ClientError> {
        self.request(Method::ScheduleRemove(ScheduleRemoveParams { id })).await
    }

    /// The caller's durable notes in every workspace, pinned first, then newest (`memory.list`).
    pub async fn memory_list(&self, limit: Option<u32>) -> Result<Vec<NoteInfo>, ClientError> {
        let list: MemoryListResult = self.request(Method::MemoryList(MemoryListParams { limit })).await?;
        Ok(list.notes)
    }

    /// Writes a note of the caller's (`memory.add`): `{"id"}`.
    pub async fn memory_add(&self, note: MemoryAddParams) -> Result<Value, ClientError> {
        self.request(Method::MemoryAdd(note)).await
    }

    /// Pins or unpins one of the caller's notes (`memory.pin`).
    pub async fn memory_pin(&self, id: i64, pinned: bool) -> Result<Value, ClientError> {
        self.request(Method::MemoryPin(MemoryPinParams { id, pinned })).await
    }

    /// Removes one of the caller's notes and its links (`memory.remove`).
    pub async fn memory_remove(&self, id: i64) -> Result<Value, ClientError> {
        self.request(Method::MemoryRemove(MemoryRemoveParams { id })).await
    }

    /// The caller's artifacts, of one conversation or of all theirs, newest first (`artifact.list`).
    pub async fn artifact_list(
        &self,
        conversation_id: Option<i64>,
    ) -> Result<Vec<superpi_proto::artifact::ArtifactInfo>, ClientError> {
        let params = superpi_proto::artifact::ArtifactListParams { conversation_id };
        let list: superpi_proto::artifact::ArtifactListResult = self.request(Method::ArtifactList(params)).await?;
        Ok(list.artifacts)
    }

    /// One of the caller's artifacts with its bytes in base64 (`artifact.read`).
    pub async fn artifact_read(
        &self,
        conversation_id: i64,
        name: &str,
    ) -> Result<superpi_proto::artifact::ArtifactReadResult, ClientError> {
        let params = superpi_proto::artifact::ArtifactReadParams { conversation_id, name: name.to_string() };
        self.request(Method::ArtifactRead(params)).await
    }

    /// Resumes a paused schedule (`schedule.resume`).
    pub async fn schedule_resume(&self, id: i64) -> Result<Value, ClientError> {
        self.request(Method::ScheduleResume(ScheduleResumeParams { id })).await
    }

    /// Delivers a webhook trigger's request (`trigger.fire`): the kernel checks its proof.
    pub async fn trigger_fire(&self, params: TriggerFireParams) -> Result<TriggerFireResult, ClientError> {
        self.request(Method::TriggerFire(params)).await
    }

    pub async fn shutdown(&self) -> Result<Value, ClientError> {
        self.request(Method::KernelShutdown).await
    }

    /// Stops the kernel and returns once it has exited: its running turns ended, its socket
    /// removed, its lock released and its process gone (at most `timeout`).
    pub async fn stop(&self, locations: &Locations, timeout: Duration) -> Result<(), ClientError> {
        let deadline = Instant::now() + timeout;
        self.shutdown().await?;
        crate::locations::wait_for_release(locations, timeout).await?;
        // The lock goes when the kernel's run ends; the process ends right after.
        let pid = self.kernel_hello().pid;
        let mut delay = Duration::from_millis(1);
        while process_runs(pid) {
            if Instant::now() >= deadline {
                return Err(ClientError::NoKernel(format!("the kernel (pid {pid}) still runs after {timeout:?}")));
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_millis(20));
        }
        Ok(())
    }
}
