//! The agent's state, shared by every handler: how to reach the kernel (lazily, and again
//! after it restarted), the sessions, and what the editor said it can do.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{ClientCapabilities, SessionConfigOption, SessionId};
use superpi_client::sync::lock;
use superpi_client::{ConnectOptions, KernelClient, LazyKernel};
use superpi_proto::method::ModelInfo;

use crate::render::RenderOptions;
use crate::request;
use crate::session::Session;
use crate::tools::ToolFacts;

/// Settings of the agent that do not come from the editor.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Context window reported in usage updates.
    pub context_window: u64,
    /// What to do with MCP servers the editor passes.
    pub editor_mcp: request::EditorMcp,
    /// When reads use the editor's buffers.
    pub editor_buffers: crate::buffers::EditorBuffers,
}

/// The agent's state, shared by every handler.
pub struct Server {
    pub(crate) connect: ConnectOptions,
    pub(crate) opts: AgentOptions,
    pub(crate) kernel: LazyKernel,
    pub(crate) sessions: Mutex<HashMap<i64, Arc<Session>>>,
    pub(crate) client_caps: Mutex<ClientCapabilities>,
}

impl Server {
    pub fn new(mut connect: ConnectOptions, opts: AgentOptions) -> Arc<Self> {
        connect.frontend = "acp".to_string();
        // An editor is a caller other than the local CLI: the kernel applies the remote
        // mode ceiling (and the harness's) to its sessions.
        connect.remote = true;
        Arc::new(Server {
            connect,
            opts,
            kernel: LazyKernel::reconnecting(),
            sessions: Mutex::new(HashMap::new()),
            client_caps: Mutex::new(ClientCapabilities::default()),
        })
    }

    /// The kernel connection, made (or made again after the kernel went away) on demand.
    pub async fn kernel(&self) -> Result<KernelClient, Error> {
        self.kernel.get(&self.connect).await.map_err(|e| request::kernel_error(e, None))
    }

    pub(crate) fn session(&self, id: &SessionId) -> Result<Arc<Session>, Error> {
        let conv = request::conversation_id(id)?;
        lock(&self.sessions).get(&conv).cloned().ok_or_else(|| request::not_found(id))
    }

    pub(crate) fn render_options(&self, workspace: Option<PathBuf>, tools: ToolFacts) -> RenderOptions {
        let caps = lock(&self.client_caps);
        let notices = caps.session.as_ref().is_some_and(|s| s.notices.is_some());
        let compaction = caps.session.as_ref().is_some_and(|s| s.compaction.is_some());
        let editor_reads = crate::buffers::reads_files(self.opts.editor_buffers, caps.fs.read_text_file)
            .then_some(self.opts.editor_buffers);
        let elicits = caps.elicitation.as_ref().is_some_and(|e| e.form.is_some());
        let opens_urls = caps.elicitation.as_ref().is_some_and(|e| e.url.is_some());
        let context_window = self.opts.context_window;
        let artifacts = Some(self.connect.locations.data_dir.join("artifacts"));
        RenderOptions {
            workspace,
            context_window,
            notices,
            compaction,
            editor_reads,
            elicits,
            opens_urls,
            tools,
            artifacts,
        }
    }

    /// A session for the conversation `info`, shown with the facts of its harness's tools
    /// (without them, if the kernel cannot say: calls then show as `other`, by name).
    pub(crate) async fn add_session(
        &self,
        kernel: &KernelClient,
        info: &superpi_proto::method::ConversationInfo,
    ) -> Arc<Session> {
        let tools = match kernel.tools(Some(&info.harness)).await {
            Ok(defs) => ToolFacts::new(defs),
            Err(err) => {
                tracing::warn!(harness = %info.harness, "no tool facts from the kernel: {err}");
                ToolFacts::default()
            }
        };
        let session = Session::new(info, self.render_options(info.workspace.as_ref().map(PathBuf::from), tools));
        if let Some(old) = lock(&self.sessions).insert(info.conversation_id, session.clone()) {
            old.stop();
        }
        session
    }

    /// The models the kernel offers (`model.list`); none when it cannot say (the option then
    /// lists only the session's current model).
    pub(crate) async fn models(&self, kernel: &KernelClient) -> Vec<ModelInfo> {
        match kernel.models().await {
            Ok(models) => models,
            Err(err) => {
                tracing::warn!("model.list failed: {err}");
                Vec::new()
            }
        }
    }

    pub(crate) async fn config_options(&self, kernel: &KernelClient, session: &Session) -> Vec<SessionConfigOption> {
        let Some(settings) = session.settings() else { return Vec::new() };
        let models = self.models(kernel).await;
        let levels = models.iter().find(|m| m.id == settings.model).map_or(&[][..], |m| m.efforts.as_slice());
        // A harness whose agent backend takes no effort (OpenCode) shows no thinking selector.
        let no_effort = match kernel.harnesses().await {
            Ok(harnesses) => harnesses.iter().any(|h| h.id == settings.harness && h.no_effort),
            Err(err) => {
                tracing::warn!("harness.list failed: {err}");
                false
            }
        };
        let effort = request::effort_option(settings.effort, if no_effort { &[] } else { levels });
        [request::mode_option(&settings.mode, &settings.max_mode), request::model_option(&settings.model, &models)]
            .into_iter()
            .chain(effort)
            .collect()
    }
}
