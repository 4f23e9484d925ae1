//! What a kernel offers and how it decides: harnesses, modes, models, tools and the policy
//! gate in front of the sandbox. Loaded once at start; a bad file is an error that names it.
//! A conversation's policy reads settings.json again at each turn ([`Catalog::policy_now`]),
//! so a changed rule applies to every tool from the next turn; the sandbox's settings are
//! read once, and [`Catalog::needs_restart`] says when the file no longer matches them.

use superpi_policy::{Caller, ConversationPolicy, Harness, Harnesses, Mode, effective_mode};
use superpi_proto::ErrorObject;
use superpi_proto::message::codes;
use superpi_proto::method::HarnessInfo;
use superpi_proto::tool::ToolDef;
use superpi_providers::{ModelLimits, ProvidersConfig, SharedProvider};
use superpi_sandbox::SandboxConfig;

use crate::config::KernelConfig;
use crate::sync::lock;

/// The turn's hand-over tools: registry tools (hooks and the policy see their calls like any),
/// offered by a harness's own fields rather than its loadout: `handoff` where it names
/// harnesses to hand to, `escalate` where its `model` is a cascade. Each step offers the ones
/// that apply (`turn/loadout.rs`); `tools/handover.rs` runs them.
pub(crate) const HANDOFF_TOOL: &str = "handoff";
pub(crate) const ESCALATE_TOOL: &str = "escalate";

/// The hand-over tools `harness` offers.
fn handover_tools(harness: &Harness) -> Vec<&'static str> {
    let mut names = Vec::new();
    if !harness.handoff.is_empty() {
        names.push(HANDOFF_TOOL);
    }
    if harness.cost.models.len() > 1 {
        names.push(ESCALATE_TOOL);
    }
    names
}

pub(crate) struct Catalog {
    pub config_dir: std::path::PathBuf,
    /// The config, data, runtime and managed workspaces' directories: no tool may touch them
    /// (but a managed workspace's own tools touch it).
    private_dirs: Vec<std::path::PathBuf>,
    /// The managed workspaces' root, canonical.
    workspaces_root: std::path::PathBuf,
    pub harnesses: Harnesses,
    pub settings: superpi_policy::Settings,
    pub providers: ProvidersConfig,
    pub tools: Vec<ToolDef>,
    /// The registry, for tools registered while the kernel runs (external MCP servers').
    registry: superpi_sandbox::ToolRegistry,
    /// Every agent backend: its program, or why it has none (see backend_turn.rs).
    pub backends: Vec<superpi_backends::Found>,
    /// The backends' state under the data dir, and their session ids.
    pub backend_sessions: superpi_backends::Sessions,
    /// OpenCode's servers, started on first need and kept.
    pub opencode: superpi_backends::Servers,
    /// Context windows learned from servers' refusals of over-long requests, by where a model
    /// leads ([`Catalog::learn_window`]).
    windows: std::sync::Mutex<std::collections::HashMap<String, u64>>,
}

impl Catalog {
    pub fn load(config: &KernelConfig) -> Result<Catalog, String> {
        let tools = config.tools.defs();
        // No loadout takes the hand-over tools (the built-ins would by their facts): a
        // harness's fields offer them.
        let listed: Vec<ToolDef> =
            tools.iter().filter(|t| ![HANDOFF_TOOL, ESCALATE_TOOL].contains(&t.name.as_str())).cloned().collect();
        let harnesses = Harnesses::load(&config.config_dir, &listed).map_err(|e| e.to_string())?;
        // A backend whose program is found gets its built-in harness.
        let path = std::env::var_os("PATH");
        let backends: Vec<superpi_backends::Found> = superpi_backends::BackendKind::ALL
            .into_iter()
            .map(|kind| superpi_backends::Found::find(kind, harnesses.backend_program(kind), path.as_deref()))
            .collect();
        let found: Vec<_> = backends.iter().filter(|b| b.program.is_ok()).map(|b| b.kind).collect();
        let harnesses = harnesses.with_backends(&found).with_tools(handover_tools);
        let settings = superpi_policy::Settings::load(&config.config_dir, None).map_err(|e| e.to_string())?;
        // An auth command (a program that prints a gateway token) runs on the host through the
        // sandbox crate, the one place that starts processes.
        let runner = superpi_providers::CommandRunner::new(|argv, timeout| {
            Box::pin(superpi_sandbox::run_host_command(argv, timeout))
        });
        // CONFIG_DIR/providers.toml, the environment laid over it; a bad file names file and key.
        let providers = ProvidersConfig::load(&config.config_dir, |name| std::env::var(name).ok())
            .map_err(|e| e.to_string())?
            .with_command_runner(runner);
        let registry = config.tools.clone();
        let backend_sessions = superpi_backends::Sessions::new(&config.data_dir);
        let opencode_idle_stop = harnesses
            .opencode_idle_stop_secs()
            .map_or(superpi_backends::opencode_server::IDLE_STOP, std::time::Duration::from_secs);
        // superpi's own directories, protected from every tool wherever they are (canonical,
        // as the sandbox compares what a tool touches through symlinks).
        let private_dirs: Vec<_> = [&config.config_dir, &config.data_dir, &config.runtime_dir, &config.workspaces_dir]
            .into_iter()
            .map(|dir| dir.canonicalize().unwrap_or_else(|_| dir.clone()))
            .collect();
        Ok(Catalog {
            config_dir: config.config_dir.clone(),
            workspaces_root: private_dirs[3].clone(),
            private_dirs,
            harnesses,
            settings,
            providers,
            tools,
            registry,
            backends,
            backend_sessions,
            opencode: superpi_backends::Servers::new(opencode_idle_stop),
            windows: Default::default(),
        })
    }

    /// The managed workspaces' root, canonical (made before the catalog loads).
    pub fn workspaces_root(&self) -> &std::path::Path {
        &self.workspaces_root
    }

    /// superpi's own directories (config, data, runtime, managed workspaces), canonical.
    pub fn private_dirs(&self) -> &[std::path::PathBuf] {
        &self.private_dirs
    }

    pub fn apply_sandbox_settings(&self, sandbox: &mut SandboxConfig) {
        sandbox.extra_read_paths.extend(self.settings.sandbox.extra_read_paths.iter().cloned());
        sandbox.deny_read_paths.extend(self.settings.sandbox.deny_read_paths.iter().cloned());
        sandbox.disabled = self.settings.sandbox.disabled;
    }

    /// The policy of one conversation: the user's settings tightened by the workspace's
    /// `.superpi/settings.json`. A bad workspace file is an error naming it.
    pub fn conversation_policy(
        &self,
        harness_id: &str,
        mode: &str,
        workspace: Option<&std::path::Path>,
    ) -> Result<ConversationPolicy, String> {
        let harness = self.harness(Some(harness_id)).map_err(|e| e.message)?.clone();
        // Read now, with or without a workspace: the settings of the kernel's start would
        // leave a conversation without a workspace (the assistant's web tools) on old rules.
        let settings = superpi_policy::Settings::load(&self.config_dir, workspace).map_err(|e| e.to_string())?;
        let mode = mode.parse::<Mode>().ok();
        // A managed workspace is open to its own tools, and they stay in it: the others beside
        // it are other conversations'.
        let managed = workspace.is_some_and(|w| w.starts_with(&self.workspaces_root));
        let private = self.private_dirs.iter().filter(|d| !managed || **d != self.workspaces_root).cloned().collect();
        // The stored mode was lowered for its caller when it was set; here only the harness
        // ceiling applies again.
        let policy =
            ConversationPolicy::new(harness, settings, workspace.map(|w| w.to_path_buf()), Caller::Local, mode)
                .with_private_dirs(private);
        Ok(if managed { policy.within_workspace() } else { policy })
    }

    /// A conversation's policy from the settings files as they are now, with its mode and its
    /// "always" answers: what each turn decides by. A bad file is an error naming it.
    pub fn policy_now(
        &self,
        harness_id: &str,
        mode: Mode,
        workspace: Option<&std::path::Path>,
        overrides: superpi_policy::Overrides,
    ) -> Result<ConversationPolicy, String> {
        Ok(self.conversation_policy(harness_id, mode.as_str(), workspace)?.with_overrides(overrides))
    }

    /// The settings the sandbox took at the kernel's start and no longer matches in the user's
    /// settings.json (`sandbox.*`), with what to do; `None` when they match or the file does
    /// not read (the turn reports that).
    pub fn needs_restart(&self) -> Option<String> {
        let now = superpi_policy::Settings::load(&self.config_dir, None).ok()?;
        let (then, now) = (&self.settings.sandbox, &now.sandbox);
        let changed: Vec<&str> = [
            ("sandbox.extra_read_paths", then.extra_read_paths != now.extra_read_paths),
            ("sandbox.deny_read_paths", then.deny_read_paths != now.deny_read_paths),
            ("sandbox.disabled", then.disabled != now.disabled),
        ]
        .into_iter()
        .filter_map(|(name, changed)| changed.then_some(name))
        .collect();
        (!changed.is_empty()).then(|| {
            format!(
                "settings.json changed {} since the kernel started: it applies after `superpi kernel stop` \
                 (the next command starts a kernel with it); until then tools run with the former value",
                changed.join(", ")
            )
        })
    }

    pub fn harness(&self, id: Option<&str>) -> Result<&Harness, ErrorObject> {
        self.harnesses.resolve(id).map_err(|e| ErrorObject::new(codes::INVALID_PARAMS, e.to_string()))
    }

    pub fn harness_infos(&self) -> Vec<HarnessInfo> {
        let mut infos = self.harnesses.infos();
        for info in &mut infos {
            let backend = self.harnesses.get(&info.id).ok().and_then(|h| h.backend);
            info.no_effort = backend.and_then(superpi_backends::effort_refusal).is_some();
        }
        infos
    }

    /// The tools a harness offers, as the model and MCP clients see them.
    pub fn tools_for(&self, harness: &Harness) -> Vec<ToolDef> {
        harness.loadout(&self.tools)
    }

    /// The facts of the tool `name`, live ones (external MCP servers') included.
    pub fn tool(&self, name: &str) -> Option<ToolDef> {
        self.registry.def(name)
    }

    /// The mode a conversation gets: the request lowered to the harness ceiling and, for
    /// remote callers, to the remote ceiling.
    pub fn mode_for(&self, requested: Option<&str>, harness: &Harness, remote: bool) -> Result<Mode, ErrorObject> {
        let requested = requested
            .map(|m| m.parse::<Mode>().map_err(|e| ErrorObject::new(codes::INVALID_PARAMS, e.to_string())))
            .transpose()?;
        let caller = if remote { Caller::Remote } else { Caller::Local };
        Ok(effective_mode(requested, harness, caller, &self.settings))
    }

    pub fn max_mode(&self, harness: &Harness, remote: bool) -> Mode {
        let caller = if remote { Caller::Remote } else { Caller::Local };
        effective_mode(Some(Mode::Auto), harness, caller, &self.settings)
    }

    /// The highest mode a conversation of `harness` can be set to: the harness's ceiling for
    /// this caller, lowered to the one a hand-off kept (`kept`, stored with the conversation).
    pub fn ceiling(&self, harness: &Harness, kept: Option<Mode>, remote: bool) -> Mode {
        let max = self.max_mode(harness, remote);
        kept.map_or(max, |kept| max.min(kept))
    }

    /// The model a new conversation gets when none is asked for, and whether that is the
    /// mock standing in for an unconfigured provider.
    pub fn default_model(&self) -> (String, bool) {
        superpi_providers::default_model(&self.providers)
    }

    /// The models of the configured providers, for `model.list`.
    pub fn models(&self) -> Vec<superpi_proto::method::ModelInfo> {
        superpi_providers::configured_models(&self.providers)
            .into_iter()
            .map(|m| superpi_proto::method::ModelInfo {
                efforts: superpi_providers::effort::levels(&m.name, &self.providers).to_vec(),
                id: m.name,
                provider: m.provider,
                default: m.default,
            })
            .collect()
    }

    /// Refuses (-32602) a thinking effort `model` does not take, naming the levels it does, or
    /// one the harness's agent backend would not be given (a harness no longer configured has
    /// none).
    pub fn check_effort(
        &self,
        harness: Option<&Harness>,
        model: &str,
        effort: superpi_proto::Effort,
    ) -> Result<(), ErrorObject> {
        let backend = harness.and_then(|h| h.backend).and_then(superpi_backends::effort_refusal);
        match backend.or_else(|| superpi_providers::effort::refusal(model, effort, &self.providers)) {
            Some(why) => Err(ErrorObject::new(codes::INVALID_PARAMS, why)),
            None => Ok(()),
        }
    }

    /// A model's context window and output limit: the providers file and the built-in table
    /// (`superpi_providers::limits`), the window lowered to what its server said it is.
    pub fn limits(&self, model: &str) -> ModelLimits {
        let mut limits = superpi_providers::model_limits(model, &self.providers);
        if let Some(&learned) = lock(&self.windows).get(&self.window_key(model)) {
            limits.context_window = limits.context_window.min(learned);
        }
        limits
    }

    /// Remembers that `model`'s window is `window` tokens (a server refused a longer request);
    /// true when that lowers what [`Catalog::limits`] says. Kept for this kernel's life, for
    /// every conversation with a model that leads to the same server and upstream model: a
    /// server's window is how it was started (llama.cpp's `-c`, Ollama's `num_ctx`), and a
    /// server never says there is more room, so a window kept across restarts would stay small
    /// after the server grew; a new kernel learns it again from one refusal, and recovers.
    pub fn learn_window(&self, model: &str, window: u64) -> bool {
        let before = self.limits(model).context_window;
        let key = self.window_key(model);
        let mut windows = lock(&self.windows);
        let kept = windows.entry(key).or_insert(window);
        *kept = (*kept).min(window);
        *kept < before
    }

    /// Where `model` leads (vendor, endpoint, upstream id), or its name when it leads nowhere.
    fn window_key(&self, model: &str) -> String {
        match superpi_providers::route(model, &self.providers) {
            Ok(route) => format!("{}|{}|{}", route.kind.as_str(), route.base_url, route.model),
            Err(_) => model.trim().to_string(),
        }
    }

    pub fn provider(&self, model: &str) -> Result<SharedProvider, ErrorObject> {
        superpi_providers::resolve(model, &self.providers).map_err(|e| ErrorObject::new(codes::PROVIDER, e.to_string()))
    }
}
