//! Settings: `CONFIG_DIR/settings.json`, tightened by `WORKSPACE/.superpi/settings.json`.
//!
//! The format is documented in `kernel/policy/SETTINGS.md`. Files are strict: an unknown key,
//! a wrong type or an invalid value is an error naming the file and the key. A missing file is
//! the same as an empty one.
//!
//! A workspace file may only tighten: a repository can be cloned from anyone, so its settings
//! may add deny entries and protected paths, narrow the network, lower the remote modes,
//! shorten the question timeout, but never allow more. Its keys are a subset of the user's;
//! the others are rejected with an error saying so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::budget::Budget;
use crate::checkpoints::{CheckpointSettings, RawCheckpoints, checkpoint_settings};
use crate::error::{ConfigError, key_path};
use crate::hooks::{HookSettings, RawHooks, hook_settings};
use crate::mcp_servers::{McpServerConfig, RawMcpServer, mcp_servers};
use crate::mode::Mode;
use crate::net::{Network, NetworkPolicy, ShellNetwork, normalize_host, valid_host};
use crate::pattern::{CommandPattern, PathPattern};
use crate::subagents::{RawSubagents, SubagentSettings, subagent_settings};
use crate::web::{RawWeb, WebSettings, web_settings};

/// The user's settings file in the config dir.
pub const SETTINGS_FILE: &str = "settings.json";
/// A workspace's settings file, relative to its root.
pub const WORKSPACE_SETTINGS_FILE: &str = ".superpi/settings.json";

/// Default wait for a person's answer to a permission question.
pub const DEFAULT_QUESTION_TIMEOUT: Duration = Duration::from_secs(120);
const MAX_QUESTION_TIMEOUT_SECS: u64 = 24 * 3600;
const MAX_SCRATCH_TTL_HOURS: u64 = 366 * 24;

/// Everything the policy reads from settings files, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub permissions: Permissions,
    pub network: Network,
    pub remote: RemoteSettings,
    pub sandbox: SandboxSettings,
    /// External MCP servers by name (the user's file only).
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// What the web tools may reach and their search backend (the user's file only).
    pub web: WebSettings,
    /// Checkpoints of a turn's workspace and auto-commit (the user's file only).
    pub checkpoints: CheckpointSettings,
    /// Commands run at points of a turn (the user's file only).
    pub hooks: HookSettings,
    /// How deep, wide and long subagents go (the user's file only).
    pub subagents: SubagentSettings,
    /// Spending limits (a workspace file only lowers them).
    pub budget: Budget,
    /// How long a scratch workspace may sit unused before the kernel removes it (the user's
    /// file only).
    pub scratch_ttl: Duration,
}

/// A scratch workspace's default idle time before its sweep: a day.
pub const DEFAULT_SCRATCH_TTL_HOURS: u64 = 24;

#[derive(Debug, Clone, PartialEq)]
pub struct Permissions {
    /// Shell commands that run without asking in `accept-edits`.
    pub allow: Vec<CommandPattern>,
    /// Shell commands refused in every mode, never askable.
    pub deny: Vec<CommandPattern>,
    /// Tools that run without asking in `accept-edits` (all their calls).
    pub allow_tools: BTreeSet<String>,
    /// Tools refused in every mode, never askable.
    pub deny_tools: BTreeSet<String>,
    /// Lets file tools reach paths outside the workspace root (off by default).
    pub allow_outside_workspace: bool,
    /// Protected paths beyond the built-in ones (.env, .git, keys, credentials).
    pub protected_paths: Vec<PathPattern>,
    /// Whether `plan` lets tools that only read the network run (default true).
    pub network_in_plan_mode: bool,
    /// Whether askable calls are put to a person at all; false fails them closed at once.
    pub ask: bool,
    /// How long a permission question waits for an answer before failing closed.
    pub question_timeout: Duration,
}

/// The modes of callers other than the local CLI.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteSettings {
    pub default_mode: Mode,
    pub max_mode: Mode,
}

/// What the sandbox should know from settings (the kernel passes it on).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SandboxSettings {
    /// Absolute paths readable (and executable) inside the sandbox: toolchains and the like.
    pub extra_read_paths: Vec<PathBuf>,
    /// Absolute paths no tool reads, taken away from the home directory's grants and
    /// `extra_read_paths` (besides the sandbox's default list of secrets).
    pub deny_read_paths: Vec<PathBuf>,
    /// Turns confinement off; every call then logs a warning.
    pub disabled: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            permissions: Permissions {
                allow: Vec::new(),
                deny: Vec::new(),
                allow_tools: BTreeSet::new(),
                deny_tools: BTreeSet::new(),
                allow_outside_workspace: false,
                protected_paths: Vec::new(),
                network_in_plan_mode: true,
                ask: true,
                question_timeout: DEFAULT_QUESTION_TIMEOUT,
            },
            network: Network {
                policy: NetworkPolicy::Allow,
                shell_default: ShellNetwork::Offline,
                allow_hosts: Vec::new(),
            },
            remote: RemoteSettings { default_mode: Mode::AcceptEdits, max_mode: Mode::AcceptEdits },
            sandbox: SandboxSettings::default(),
            mcp_servers: BTreeMap::new(),
            web: WebSettings::default(),
            checkpoints: CheckpointSettings::default(),
            hooks: HookSettings::default(),
            subagents: SubagentSettings::default(),
            budget: Budget::default(),
            scratch_ttl: Duration::from_secs(DEFAULT_SCRATCH_TTL_HOURS * 3600),
        }
    }
}

impl Settings {
    /// Reads `CONFIG_DIR/settings.json`, then tightens with `WORKSPACE/.superpi/settings.json`
    /// when a workspace is given. Missing files are fine.
    pub fn load(config_dir: &Path, workspace: Option<&Path>) -> Result<Settings, ConfigError> {
        let user_path = config_dir.join(SETTINGS_FILE);
        let mut settings = match read_optional(&user_path)? {
            Some(text) => Settings::from_user_file(&text, &user_path)?,
            None => Settings::default(),
        };
        if let Some(root) = workspace {
            let ws_path = root.join(WORKSPACE_SETTINGS_FILE);
            if let Some(text) = read_optional(&ws_path)? {
                settings = settings.tightened_by_workspace_file(&text, &ws_path)?;
            }
        }
        Ok(settings)
    }

    /// The settings of a user file's text; `path` names it in errors.
    pub fn from_user_file(text: &str, path: &Path) -> Result<Settings, ConfigError> {
        let raw: UserFile = parse_json(text, path, false)?;
        let mut s = Settings::default();
        if let Some(p) = raw.permissions {
            let key = |k: &str| format!("permissions.{k}");
            if let Some(list) = p.allow {
                s.permissions.allow = command_patterns(&list, path, &key("allow"))?;
            }
            if let Some(list) = p.allow_tools {
                s.permissions.allow_tools = tool_names(list, path, &key("allow_tools"))?;
            }
            if let Some(v) = p.allow_outside_workspace {
                s.permissions.allow_outside_workspace = v;
            }
            let common = TighteningPermissions {
                deny: p.deny,
                deny_tools: p.deny_tools,
                protected_paths: p.protected_paths,
                network_in_plan_mode: p.network_in_plan_mode,
                ask: p.ask,
                question_timeout_secs: p.question_timeout_secs,
            };
            s.apply_tightening(&common, path, true)?;
        }
        if let Some(n) = raw.network {
            s.network = network(n, path)?;
        }
        if let Some(r) = raw.remote {
            s.remote.max_mode = r.max_mode.unwrap_or(s.remote.max_mode);
            s.remote.default_mode = r.default_mode.unwrap_or(s.remote.default_mode.min(s.remote.max_mode));
            if s.remote.default_mode > s.remote.max_mode {
                return Err(ConfigError::invalid(
                    path,
                    "remote.default_mode",
                    format!(
                        "the remote default mode `{}` is above the remote ceiling max_mode `{}`",
                        s.remote.default_mode, s.remote.max_mode
                    ),
                ));
            }
        }
        if let Some(sb) = raw.sandbox {
            if let Some(paths) = sb.extra_read_paths {
                absolute_paths(&paths, path, "sandbox.extra_read_paths")?;
                s.sandbox.extra_read_paths = paths;
            }
            if let Some(paths) = sb.deny_read_paths {
                absolute_paths(&paths, path, "sandbox.deny_read_paths")?;
                s.sandbox.deny_read_paths = paths;
            }
            if let Some(d) = sb.disabled {
                s.sandbox.disabled = d;
            }
        }
        if let Some(servers) = raw.mcp_servers {
            s.mcp_servers = mcp_servers(servers, path)?;
        }
        if let Some(web) = raw.web {
            s.web = web_settings(web, path)?;
        }
        if let Some(checkpoints) = raw.checkpoints {
            s.checkpoints = checkpoint_settings(checkpoints, path)?;
        }
        if let Some(hooks) = raw.hooks {
            s.hooks = hook_settings(hooks, path)?;
        }
        if let Some(subagents) = raw.subagents {
            s.subagents = subagent_settings(subagents, path)?;
        }
        if let Some(budget) = raw.budget {
            budget.check(path, "budget")?;
            s.budget = budget;
        }
        if let Some(hours) = raw.scratch_ttl_hours {
            if hours > MAX_SCRATCH_TTL_HOURS {
                let why = format!("at most {MAX_SCRATCH_TTL_HOURS} hours (a year), not {hours}");
                return Err(ConfigError::invalid(path, "scratch_ttl_hours", why));
            }
            s.scratch_ttl = Duration::from_secs(hours * 3600);
        }
        Ok(s)
    }

    /// These settings tightened by a workspace file's text; `path` names it in errors.
    pub fn tightened_by_workspace_file(mut self, text: &str, path: &Path) -> Result<Settings, ConfigError> {
        let raw: WorkspaceFile = parse_json(text, path, true)?;
        if let Some(p) = raw.permissions {
            self.apply_tightening(&p, path, false)?;
        }
        if let Some(n) = raw.network {
            // Unsaid, the workspace leaves the shell default as it is; said, the stricter wins.
            let shell_default =
                n.shell_default.map_or(self.network.shell_default, |w| w.min(self.network.shell_default));
            let ws = network(n, path)?;
            self.network = Network::tighten(&self.network, &ws);
            self.network.shell_default = shell_default;
        }
        if let Some(r) = raw.remote {
            if let Some(m) = r.max_mode {
                self.remote.max_mode = self.remote.max_mode.min(m);
            }
            if let Some(m) = r.default_mode {
                self.remote.default_mode = self.remote.default_mode.min(m);
            }
            self.remote.default_mode = self.remote.default_mode.min(self.remote.max_mode);
        }
        if let Some(budget) = raw.budget {
            budget.check(path, "budget")?;
            self.budget = self.budget.tightened_by(budget);
        }
        Ok(self)
    }

    /// The keys both kinds of file may set. From the user's file they set the value; from a
    /// workspace file each can only add restrictions.
    fn apply_tightening(&mut self, p: &TighteningPermissions, path: &Path, user: bool) -> Result<(), ConfigError> {
        let key = |k: &str| format!("permissions.{k}");
        if let Some(list) = &p.deny {
            self.permissions.deny.extend(command_patterns(list, path, &key("deny"))?);
        }
        if let Some(list) = &p.deny_tools {
            self.permissions.deny_tools.extend(tool_names(list.clone(), path, &key("deny_tools"))?);
        }
        if let Some(list) = &p.protected_paths {
            for (i, source) in list.iter().enumerate() {
                let pattern = PathPattern::parse(source)
                    .map_err(|m| ConfigError::invalid(path, format!("permissions.protected_paths[{i}]"), m))?;
                self.permissions.protected_paths.push(pattern);
            }
        }
        if let Some(v) = p.network_in_plan_mode {
            self.permissions.network_in_plan_mode = v && (user || self.permissions.network_in_plan_mode);
        }
        if let Some(v) = p.ask {
            self.permissions.ask = v && (user || self.permissions.ask);
        }
        if let Some(secs) = p.question_timeout_secs {
            if secs == 0 || secs > MAX_QUESTION_TIMEOUT_SECS {
                return Err(ConfigError::invalid(
                    path,
                    key("question_timeout_secs"),
                    format!("must be between 1 and {MAX_QUESTION_TIMEOUT_SECS} seconds, not {secs}"),
                ));
            }
            let timeout = Duration::from_secs(secs);
            self.permissions.question_timeout =
                if user { timeout } else { self.permissions.question_timeout.min(timeout) };
        }
        Ok(())
    }

    /// Whether `host` is allowed by the network allow list (an entry matches the host and its
    /// subdomains; comparison ignores case and a trailing dot).
    pub fn host_allowed(&self, host: &str) -> bool {
        self.network.host_allowed(host)
    }
}

fn read_optional(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read { path: path.to_path_buf(), source }),
    }
}

fn parse_json<T: serde::de::DeserializeOwned>(text: &str, path: &Path, workspace: bool) -> Result<T, ConfigError> {
    if !text.trim_start().starts_with('{') {
        return Err(ConfigError::invalid(path, "", "a settings file holds one JSON object: `{ ... }`"));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let mut message = e.inner().to_string();
        if workspace && message.starts_with("unknown field") {
            message.push_str(
                "; a workspace settings file may only tighten the user's settings, so it cannot hold keys that \
                 allow more (see SETTINGS.md)",
            );
        }
        ConfigError::invalid(path, key_path(e.path()), message)
    })?;
    de.end().map_err(|e| ConfigError::invalid(path, "", e.to_string()))?;
    Ok(value)
}

fn command_patterns(list: &[String], path: &Path, key: &str) -> Result<Vec<CommandPattern>, ConfigError> {
    list.iter()
        .enumerate()
        .map(|(i, s)| CommandPattern::parse(s).map_err(|m| ConfigError::invalid(path, format!("{key}[{i}]"), m)))
        .collect()
}

fn tool_names(list: Vec<String>, path: &Path, key: &str) -> Result<BTreeSet<String>, ConfigError> {
    for (i, name) in list.iter().enumerate() {
        if name.trim().is_empty() || name.trim() != name {
            return Err(ConfigError::invalid(path, format!("{key}[{i}]"), format!("`{name}` is not a tool name")));
        }
    }
    Ok(list.into_iter().collect())
}

fn network(raw: RawNetwork, path: &Path) -> Result<Network, ConfigError> {
    let policy = raw.policy.unwrap_or(NetworkPolicy::Allow);
    let mut hosts = Vec::new();
    if let Some(list) = raw.allow_hosts {
        if policy != NetworkPolicy::Allowlist {
            return Err(ConfigError::invalid(
                path,
                "network.allow_hosts",
                "allow_hosts applies only with \"policy\": \"allowlist\"",
            ));
        }
        for (i, entry) in list.iter().enumerate() {
            let host = normalize_host(entry.strip_prefix("*.").unwrap_or(entry));
            if !valid_host(&host) {
                return Err(ConfigError::invalid(
                    path,
                    format!("network.allow_hosts[{i}]"),
                    format!("`{entry}` is not a host name (write `example.com`; it covers its subdomains)"),
                ));
            }
            hosts.push(host);
        }
    }
    Ok(Network { policy, shell_default: raw.shell_default.unwrap_or_default(), allow_hosts: hosts })
}

// The files' shapes. Every struct refuses unknown keys.

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserFile {
    #[serde(rename = "$schema", default)]
    _schema: Option<String>,
    permissions: Option<UserPermissions>,
    network: Option<RawNetwork>,
    remote: Option<RawRemote>,
    sandbox: Option<RawSandbox>,
    mcp_servers: Option<BTreeMap<String, RawMcpServer>>,
    web: Option<RawWeb>,
    checkpoints: Option<RawCheckpoints>,
    hooks: Option<RawHooks>,
    subagents: Option<RawSubagents>,
    budget: Option<Budget>,
    scratch_ttl_hours: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkspaceFile {
    #[serde(rename = "$schema", default)]
    _schema: Option<String>,
    permissions: Option<TighteningPermissions>,
    network: Option<RawNetwork>,
    remote: Option<RawRemote>,
    budget: Option<Budget>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserPermissions {
    allow: Option<Vec<String>>,
    allow_tools: Option<Vec<String>>,
    allow_outside_workspace: Option<bool>,
    deny: Option<Vec<String>>,
    deny_tools: Option<Vec<String>>,
    protected_paths: Option<Vec<String>>,
    network_in_plan_mode: Option<bool>,
    ask: Option<bool>,
    question_timeout_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TighteningPermissions {
    deny: Option<Vec<String>>,
    deny_tools: Option<Vec<String>>,
    protected_paths: Option<Vec<String>>,
    network_in_plan_mode: Option<bool>,
    ask: Option<bool>,
    question_timeout_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    policy: Option<NetworkPolicy>,
    shell_default: Option<ShellNetwork>,
    allow_hosts: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRemote {
    default_mode: Option<Mode>,
    max_mode: Option<Mode>,
}

fn absolute_paths(paths: &[PathBuf], file: &Path, key: &str) -> Result<(), ConfigError> {
    match paths.iter().enumerate().find(|(_, p)| !p.is_absolute()) {
        Some((i, p)) => {
            Err(ConfigError::invalid(file, format!("{key}[{i}]"), format!("`{}` is not an absolute path", p.display())))
        }
        None => Ok(()),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSandbox {
    extra_read_paths: Option<Vec<PathBuf>>,
    deny_read_paths: Option<Vec<PathBuf>>,
    disabled: Option<bool>,
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
