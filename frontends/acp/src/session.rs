//! One ACP session: its conversation, the watch that renders the conversation's events to
//! the editor (the pump), the prompts waiting for their turns, and the permission questions
//! open in the editor.
//!
//! Over 500 lines (650): steering (`_session/steering`) joined the prompt bookkeeping here, which
//! shares one lock with the pump and the open questions. The next change should move the pure
//! update coalescing (`coalesce`, `mergeable`) to a module of its own.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, PermissionOption, ReadTextFileRequest, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SessionId, SessionNotification, SessionUpdate, StopReason,
    TextContent, ToolCallUpdate,
};
use agent_client_protocol::{Client, RequestCancellationHandle};
use superpi_client::sync::lock;
use superpi_client::{KernelClient, Subscription};
use superpi_proto::method::{ConversationInfo, WatchParams};
use superpi_proto::question::{QuestionAnswer, QuestionRequest};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::buffers::{self, Disk, ReadAnswer, ReadRequest};
use crate::questions;
use crate::render::{Out, RenderOptions, Renderer};

/// The answer given to the kernel when the editor cancels a question, fails, or goes away.
pub const FAIL_CLOSED_OPTION: &str = "reject_once";

const KNOWN_OPTIONS: &[&str] =
    &["allow_once", "allow_always", "reject_once", "reject_always", "allow_always_project", "allow_always_user"];

/// How many ended turns nobody waited for are remembered (a prompt can see its turn end
/// before `session.submit` answered it).
const ENDED_KEPT: usize = 64;

/// The settings of a conversation this agent tracks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub mode: String,
    pub max_mode: String,
    pub model: String,
    pub harness: String,
    pub effort: Option<superpi_proto::Effort>,
}

impl Settings {
    pub fn of(info: &ConversationInfo) -> Self {
        Settings {
            mode: info.mode.clone(),
            max_mode: info.max_mode.clone(),
            model: info.model.clone(),
            harness: info.harness.clone(),
            effort: info.effort,
        }
    }
}

#[derive(Default)]
struct State {
    settings: Option<Settings>,
    /// The seq of the last stored event rendered: a new watch continues after it.
    last_seq: u64,
    pump: Option<JoinHandle<()>>,
    pump_alive: bool,
    /// The prompts waiting for each turn, in the order they came: more than one when later
    /// prompts steered the turn.
    waiting: HashMap<i64, VecDeque<oneshot::Sender<StopReason>>>,
    /// Prompts that joined each running turn and have not yet ended an earlier prompt.
    joined: HashMap<i64, usize>,
    ended: VecDeque<(i64, StopReason)>,
    questions: HashMap<String, RequestCancellationHandle>,
    /// `session/prompt` requests of this session not yet answered.
    prompts_running: usize,
    /// `_session/steering` prompts whose join is still to come: a join they cause settles no
    /// `session/prompt`.
    steerings: usize,
    cancel_requested: bool,
    /// The session has a title (stored, or sent to the editor from its first prompt).
    titled: bool,
}

pub struct Session {
    pub id: SessionId,
    pub conversation_id: i64,
    pub workspace: Option<PathBuf>,
    render: RenderOptions,
    state: Mutex<State>,
}

/// A running prompt of its session; dropping it counts it answered.
pub struct PromptGuard(Arc<Session>);

impl Drop for PromptGuard {
    fn drop(&mut self) {
        let mut st = lock(&self.0.state);
        st.prompts_running = st.prompts_running.saturating_sub(1);
        if st.prompts_running == 0 {
            st.cancel_requested = false;
        }
    }
}

/// A `_session/steering` prompt on its way; dropped without [`SteeringGuard::joins`] (the
/// kernel queued it as a turn of its own, or refused it), it is no longer counted.
pub struct SteeringGuard(Option<Arc<Session>>);

impl SteeringGuard {
    /// The kernel took it into the running turn: its join is (or was) published.
    pub fn joins(mut self) {
        self.0 = None;
    }
}

impl Drop for SteeringGuard {
    fn drop(&mut self) {
        if let Some(session) = self.0.take() {
            let mut st = lock(&session.state);
            st.steerings = st.steerings.saturating_sub(1);
        }
    }
}

impl Session {
    pub fn new(info: &ConversationInfo, render: RenderOptions) -> Arc<Self> {
        let state = State {
            settings: Some(Settings::of(info)),
            last_seq: info.head_seq,
            titled: info.title.is_some(),
            ..Default::default()
        };
        Arc::new(Session {
            id: crate::request::session_id(info.conversation_id),
            conversation_id: info.conversation_id,
            workspace: render.workspace.clone(),
            render,
            state: Mutex::new(state),
        })
    }

    /// The facts of the session's tools, which say how their calls are shown.
    pub fn tools(&self) -> &crate::tools::ToolFacts {
        &self.render.tools
    }

    pub fn settings(&self) -> Option<Settings> {
        lock(&self.state).settings.clone()
    }

    pub fn update_settings(&self, f: impl FnOnce(&mut Settings)) {
        if let Some(s) = lock(&self.state).settings.as_mut() {
            f(s);
        }
    }

    /// Counts a prompt running, and says whether another one already was (then this one
    /// steers the running turn).
    pub fn begin_prompt(self: &Arc<Self>) -> (PromptGuard, bool) {
        let mut st = lock(&self.state);
        let steers = st.prompts_running > 0;
        if !steers {
            st.cancel_requested = false;
        }
        st.prompts_running += 1;
        (PromptGuard(self.clone()), steers)
    }

    /// Counts a `_session/steering` prompt about to be submitted (before the submit: its join
    /// may be rendered before the kernel's answer arrives).
    pub fn begin_steering(self: &Arc<Self>) -> SteeringGuard {
        lock(&self.state).steerings += 1;
        SteeringGuard(Some(self.clone()))
    }

    /// The editor has been told a title.
    pub fn set_titled(&self) {
        lock(&self.state).titled = true;
    }

    /// True the first time it is asked for a session without a title.
    pub fn needs_title(&self) -> bool {
        !std::mem::replace(&mut lock(&self.state).titled, true)
    }

    pub fn cancel_requested(&self) -> bool {
        lock(&self.state).cancel_requested
    }

    pub fn prompt_running(&self) -> bool {
        lock(&self.state).prompts_running > 0
    }

    /// Marks the running prompt cancelled and takes the open questions, to be withdrawn.
    /// Says whether a prompt of this session is running (only then is its turn cancelled:
    /// a turn another frontend started is not this session's to stop).
    pub fn take_questions_for_cancel(&self) -> (bool, Vec<(String, RequestCancellationHandle)>) {
        let mut st = lock(&self.state);
        let running = st.prompts_running > 0;
        if running {
            st.cancel_requested = true;
        }
        (running, st.questions.drain().collect())
    }

    /// Resolves when turn `turn_id` ends, with its stop reason, or (`end_turn`) when a later
    /// prompt of this session joined that turn: that one waits on. A turn that ended already
    /// answers at once; with no live watch it answers `refusal` (nobody would tell).
    pub fn wait_turn(&self, turn_id: i64) -> oneshot::Receiver<StopReason> {
        let (tx, rx) = oneshot::channel();
        let mut st = lock(&self.state);
        if let Some(pos) = st.ended.iter().position(|(t, _)| *t == turn_id) {
            let (_, stop) = st.ended.remove(pos).unwrap_or((turn_id, StopReason::EndTurn));
            let _ = tx.send(stop);
        } else if !st.pump_alive {
            let _ = tx.send(StopReason::Refusal);
        } else {
            st.waiting.entry(turn_id).or_default().push_back(tx);
            settle_joins(&mut st, turn_id);
        }
        rx
    }

    /// A prompt joined turn `turn_id`: the earliest prompt waiting for it is done, unless the
    /// prompt came through `_session/steering` (then the running prompt goes on).
    fn prompt_joined(&self, turn_id: i64) {
        let mut st = lock(&self.state);
        if st.steerings > 0 {
            st.steerings -= 1;
            return;
        }
        *st.joined.entry(turn_id).or_default() += 1;
        settle_joins(&mut st, turn_id);
    }

    fn turn_ended(&self, turn_id: Option<i64>, stop: StopReason) {
        let mut st = lock(&self.state);
        let stop = if st.cancel_requested { StopReason::Cancelled } else { stop };
        let Some(turn_id) = turn_id else { return };
        st.joined.remove(&turn_id);
        if let Some(waiters) = st.waiting.remove(&turn_id) {
            for tx in waiters {
                let _ = tx.send(stop);
            }
        } else {
            st.ended.push_back((turn_id, stop));
            while st.ended.len() > ENDED_KEPT {
                st.ended.pop_front();
            }
        }
    }

    pub fn pump_alive(&self) -> bool {
        lock(&self.state).pump_alive
    }

    /// Starts watching the conversation (interactive: this agent answers its permission
    /// questions) unless a watch is live. Events after the last one rendered are replayed.
    pub async fn ensure_pump(
        self: &Arc<Self>,
        kernel: &KernelClient,
        cx: &ConnectionTo<Client>,
    ) -> Result<(), superpi_client::ClientError> {
        let from = {
            let st = lock(&self.state);
            if st.pump_alive {
                return Ok(());
            }
            st.last_seq
        };
        let sub = kernel
            .watch(WatchParams {
                conversation_id: self.conversation_id,
                from_seq: Some(from),
                window: None,
                interactive: true,
                // Asked for file texts only when this agent reads them from the editor.
                reads_files: self.render.editor_reads.is_some(),
                // Asked to show a login's URL only when the editor declared URL elicitation.
                opens_urls: self.render.opens_urls,
            })
            .await?;
        let mut st = lock(&self.state);
        if st.pump_alive {
            // Another request started one meanwhile; this watch is dropped.
            return Ok(());
        }
        st.pump_alive = true;
        let task = tokio::spawn(pump(self.clone(), kernel.clone(), cx.clone(), sub));
        st.pump = Some(task);
        Ok(())
    }

    /// Stops the watch and fails closed every open question (session/close).
    pub fn stop(&self) -> Vec<(String, RequestCancellationHandle)> {
        let mut st = lock(&self.state);
        if let Some(task) = st.pump.take() {
            task.abort();
        }
        st.pump_alive = false;
        for tx in st.waiting.drain().flat_map(|(_, waiters)| waiters) {
            let _ = tx.send(StopReason::Cancelled);
        }
        st.questions.drain().collect()
    }

    fn pump_ended(&self, cx: &ConnectionTo<Client>) {
        let mut st = lock(&self.state);
        st.pump_alive = false;
        st.pump = None;
        // The kernel that asked is gone (or the editor is): withdraw its questions.
        for (_, handle) in st.questions.drain() {
            let _ = handle.cancel();
        }
        if !st.waiting.is_empty() {
            let note = SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
                "\n\nThe connection to the superpi kernel was lost; the turn's outcome is unknown. \
                 The session stays loadable.",
            ))));
            let _ = cx.send_notification(SessionNotification::new(self.id.clone(), note));
        }
        for tx in st.waiting.drain().flat_map(|(_, waiters)| waiters) {
            let _ = tx.send(StopReason::Refusal);
        }
    }
}

/// Each prompt that joined `turn_id` ends the earliest prompt still waiting for it (once the
/// joining prompt waits too: a join can be seen before its `session.submit` answered), with
/// `end_turn`, as the ACP prompt-queueing practice has it: updates from then on belong to
/// the prompt that joined.
fn settle_joins(st: &mut State, turn_id: i64) {
    let Some(joined) = st.joined.get_mut(&turn_id) else { return };
    let Some(waiters) = st.waiting.get_mut(&turn_id) else { return };
    while *joined > 0 && waiters.len() > 1 {
        *joined -= 1;
        if let Some(earliest) = waiters.pop_front() {
            let _ = earliest.send(StopReason::EndTurn);
        }
    }
}

/// Events read off the subscription ahead of rendering. Past this the reader stops taking
/// events, and the kernel's credit window holds the rest (or the watch lags and catches up
/// from the store).
const READ_AHEAD: usize = 1024;

/// At most this many waiting events are rendered into one batch of notifications.
const BATCH: usize = 256;

/// Renders the conversation's events to the editor until the watch or the connection ends.
/// Events that are already waiting are rendered together and their adjacent text chunks
/// merged, so a fast stream costs the editor fewer, larger messages.
async fn pump(session: Arc<Session>, kernel: KernelClient, cx: ConnectionTo<Client>, mut sub: Subscription) {
    let (tx, mut rx) = tokio::sync::mpsc::channel(READ_AHEAD);
    // The reader owns the subscription; it ends with the pump, also when the pump is
    // aborted (session/close), so the kernel stops counting this watcher.
    let reader = AbortOnDrop(tokio::spawn(async move {
        while let Some(event) = sub.next().await {
            if tx.send(event).await.is_err() {
                break;
            }
        }
    }));
    let mut renderer = Renderer::new(session.render.clone());
    let mut batch = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        let mut taken = 0;
        while let Some(event) = next.take() {
            // Resume points are stored events only: a delta's seq is not durable (a
            // restarted kernel numbers on from its last stored event), so resuming after one
            // could skip the new kernel's first events.
            if event.seq > 0 && !event.body.is_transient() {
                let mut st = lock(&session.state);
                st.last_seq = st.last_seq.max(event.seq);
            }
            batch.extend(renderer.render(&event));
            taken += 1;
            if taken < BATCH {
                next = rx.try_recv().ok();
            }
        }
        for out in coalesce(std::mem::take(&mut batch)) {
            match out {
                Out::Update(update) => {
                    if cx.send_notification(SessionNotification::new(session.id.clone(), update)).is_err() {
                        // The editor is gone.
                        drop(reader);
                        session.pump_ended(&cx);
                        return;
                    }
                }
                Out::AskPermission { request_id, tool_call, options } => {
                    ask(&session, &kernel, &cx, request_id, tool_call, options);
                }
                Out::QuestionClosed { request_id } => {
                    let handle = lock(&session.state).questions.remove(&request_id);
                    if let Some(handle) = handle {
                        let _ = handle.cancel();
                    }
                }
                Out::TurnEnded { turn_id, stop_reason } => session.turn_ended(turn_id, stop_reason),
                Out::PromptJoined { turn_id } => session.prompt_joined(turn_id),
                Out::ReadFile(read) => answer_read(&session, &kernel, &cx, read),
                Out::AskQuestion { request_id, request } => ask_question(&session, &kernel, &cx, request_id, request),
                Out::OpenUrl { request_id, url, message } => {
                    open_url(&session, &kernel, &cx, request_id, &url, &message)
                }
                Out::UrlDone { request_id } => {
                    let done = agent_client_protocol::v1::schema::CompleteElicitationNotification::new(request_id);
                    if let Err(err) = cx.send_notification(done) {
                        tracing::debug!("elicitation/complete: {err:?}");
                    }
                }
            }
        }
    }
    tracing::info!(session = %session.id.0, "the kernel watch ended");
    // The client drops its subscriptions just before it marks the connection closed: wait
    // for the mark (bounded: a watch can also end on a live connection), so a request that
    // follows sees the connection gone and reconnects.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), kernel.closed()).await;
    session.pump_ended(&cx);
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Merges adjacent text chunks of the same kind (answer or thought); everything else keeps
/// its place and order. A file-read question settled later in the same batch (a replay after
/// a reconnect) is dropped: nobody waits for its answer.
pub fn coalesce(outs: Vec<Out>) -> Vec<Out> {
    let settled: std::collections::HashSet<String> = outs
        .iter()
        .filter_map(|o| match o {
            Out::QuestionClosed { request_id } => Some(request_id.clone()),
            _ => None,
        })
        .collect();
    let mut merged: Vec<Out> = Vec::with_capacity(outs.len());
    for out in outs {
        if let Out::ReadFile(read) = &out
            && settled.contains(&read.request_id)
        {
            continue;
        }
        if let (Some(Out::Update(prev)), Out::Update(next)) = (merged.last_mut(), &out)
            && let Some(text) = mergeable(prev, next)
        {
            text.push_str(&chunk_text(next));
            continue;
        }
        merged.push(out);
    }
    merged
}

fn chunk_text(update: &SessionUpdate) -> String {
    match update {
        SessionUpdate::AgentMessageChunk(c) | SessionUpdate::AgentThoughtChunk(c) => match &c.content {
            ContentBlock::Text(t) => t.text.clone(),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// The text of `prev` to append `next` to, when both are plain text chunks of one kind.
fn mergeable<'a>(prev: &'a mut SessionUpdate, next: &SessionUpdate) -> Option<&'a mut String> {
    let plain =
        |c: &ContentChunk| c.message_id.is_none() && c.meta.is_none() && matches!(c.content, ContentBlock::Text(_));
    let (prev_chunk, same_kind) = match (prev, next) {
        (SessionUpdate::AgentMessageChunk(p), SessionUpdate::AgentMessageChunk(n)) => (p, plain(n)),
        (SessionUpdate::AgentThoughtChunk(p), SessionUpdate::AgentThoughtChunk(n)) => (p, plain(n)),
        _ => return None,
    };
    if !same_kind || prev_chunk.message_id.is_some() || prev_chunk.meta.is_some() {
        return None;
    }
    match &mut prev_chunk.content {
        ContentBlock::Text(t) if t.annotations.is_none() => Some(&mut t.text),
        _ => None,
    }
}

/// The kernel option for the editor's answer: the option it selected when that is one of
/// the four, else (cancelled, failed, unknown) the call is refused.
pub fn answer_option(answer: Option<RequestPermissionResponse>) -> &'static str {
    match answer.map(|a| a.outcome) {
        Some(RequestPermissionOutcome::Selected(selected)) => {
            KNOWN_OPTIONS.iter().find(|o| **o == &*selected.option_id.0).copied().unwrap_or(FAIL_CLOSED_OPTION)
        }
        _ => FAIL_CLOSED_OPTION,
    }
}

/// Asks the editor about a permission question, off the pump, and hands the answer to the
/// kernel. A cancelled, failed or unknown answer fails closed.
fn ask(
    session: &Arc<Session>,
    kernel: &KernelClient,
    cx: &ConnectionTo<Client>,
    request_id: String,
    tool_call: ToolCallUpdate,
    options: Vec<PermissionOption>,
) {
    let sent = cx.send_request(RequestPermissionRequest::new(session.id.clone(), tool_call, options));
    lock(&session.state).questions.insert(request_id.clone(), sent.cancellation_handle());
    let session = session.clone();
    let kernel = kernel.clone();
    tokio::spawn(async move {
        let answer = sent.block_task().await;
        lock(&session.state).questions.remove(&request_id);
        if let Err(err) = &answer {
            tracing::debug!("permission request failed: {err:?}");
        }
        let option = answer_option(answer.ok());
        if let Err(err) = kernel.respond_permission(&request_id, option).await {
            // Settled already (answered elsewhere, timed out, cancelled): nothing to do.
            tracing::debug!(request_id, "permission.respond: {err}");
        }
    });
}

/// Asks the editor the model's questions, off the pump, as an `elicitation/create` form (a
/// form the editor takes: it declared `elicitation.form`), and hands the answer to the
/// kernel; without forms, the kernel is told the question cannot be asked here.
fn ask_question(
    session: &Arc<Session>,
    kernel: &KernelClient,
    cx: &ConnectionTo<Client>,
    request_id: String,
    request: QuestionRequest,
) {
    let form = session.render.elicits.then(|| questions::elicitation(&session.id, &request)).flatten();
    let sent = form.map(|form| cx.send_request(form));
    if let Some(sent) = &sent {
        lock(&session.state).questions.insert(request_id.clone(), sent.cancellation_handle());
    }
    let (session, kernel) = (session.clone(), kernel.clone());
    tokio::spawn(async move {
        let outcome = match sent {
            Some(sent) => {
                let answer = sent.block_task().await;
                lock(&session.state).questions.remove(&request_id);
                if let Err(err) = &answer {
                    tracing::debug!("elicitation/create failed: {err:?}");
                }
                questions::outcome(answer.ok())
            }
            None => QuestionAnswer::Unavailable(questions::NO_FORMS.into()).to_outcome(),
        };
        if let Err(err) = kernel.respond_ui(&request_id, outcome).await {
            tracing::debug!(request_id, "ui.respond: {err}");
        }
    });
}

/// Asks the editor to have the person open a login's URL (URL-mode `elicitation/create`),
/// off the pump, and hands their consent to the kernel.
fn open_url(
    session: &Arc<Session>,
    kernel: &KernelClient,
    cx: &ConnectionTo<Client>,
    request_id: String,
    url: &str,
    message: &str,
) {
    let sent = cx.send_request(questions::url_elicitation(&session.id, &request_id, url, message));
    lock(&session.state).questions.insert(request_id.clone(), sent.cancellation_handle());
    let (session, kernel) = (session.clone(), kernel.clone());
    tokio::spawn(async move {
        let answer = sent.block_task().await;
        lock(&session.state).questions.remove(&request_id);
        if let Err(err) = &answer {
            tracing::debug!("elicitation/create (url) failed: {err:?}");
        }
        if let Err(err) = kernel.respond_ui(&request_id, questions::url_outcome(answer.ok())).await {
            tracing::debug!(request_id, "ui.respond: {err}");
        }
    });
}

/// How long the editor may take to read a file: the kernel waits 10 s for the answer.
const EDITOR_READ_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Answers a file-read question of the kernel, off the pump: the editor's text
/// (`fs/read_text_file`, the whole file) or the disk, as the mode decides. A failed or slow
/// editor read means the disk.
fn answer_read(session: &Arc<Session>, kernel: &KernelClient, cx: &ConnectionTo<Client>, read: ReadRequest) {
    let Some(mode) = session.render.editor_reads else { return };
    let (kernel, cx, session) = (kernel.clone(), cx.clone(), session.clone());
    tokio::spawn(async move {
        // The path the kernel checked lexically, resolved as the editor will: a workspace
        // symlink to a file outside is left to the sandboxed read, which refuses it.
        let (path, workspace) = (PathBuf::from(&read.path), session.workspace.clone());
        let allowed = tokio::task::spawn_blocking(move || {
            workspace.is_some_and(|workspace| buffers::editor_may_read(&path, &workspace))
        })
        .await
        .unwrap_or(false);
        if !allowed {
            tracing::debug!(path = %read.path, "resolves outside the workspace: not asked of the editor");
            let params = serde_json::json!({ "request_id": read.request_id, "outcome": ReadAnswer::UseDisk.outcome() });
            if let Err(err) = kernel.call("ui.respond", params).await {
                tracing::debug!(request_id = %read.request_id, "ui.respond: {err}");
            }
            return;
        }
        let sent = cx.send_request(ReadTextFileRequest::new(session.id.clone(), PathBuf::from(&read.path)));
        let editor = match tokio::time::timeout(EDITOR_READ_WAIT, sent.block_task()).await {
            Ok(Ok(response)) => Some(response.content),
            Ok(Err(err)) => {
                tracing::debug!(path = %read.path, "fs/read_text_file failed: {err:?}");
                None
            }
            Err(_) => {
                tracing::debug!(path = %read.path, "fs/read_text_file took too long");
                None
            }
        };
        let disk = if editor.is_some() && buffers::needs_disk(mode) {
            let path = read.path.clone();
            tokio::task::spawn_blocking(move || Disk::read(&path)).await.unwrap_or(Disk::Unreadable)
        } else {
            // Not consulted by this mode.
            Disk::Missing
        };
        let answer = buffers::decide(mode, editor, &disk);
        tracing::debug!(path = %read.path, from_editor = matches!(answer, ReadAnswer::Content(_)), "file read answered");
        let params = serde_json::json!({ "request_id": read.request_id, "outcome": answer.outcome() });
        if let Err(err) = kernel.call("ui.respond", params).await {
            // Settled already (timed out, the turn cancelled, another frontend answered).
            tracing::debug!(request_id = %read.request_id, "ui.respond: {err}");
        }
    });
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
