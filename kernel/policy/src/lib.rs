//! superpi-policy: harnesses, permission modes, settings and the decision whether a tool call
//! may run, may be asked for, or is refused.
//!
//! Owns: the harness registry (built-ins plus `harnesses.toml`), [`Mode`] and
//! [`effective_mode`], [`Settings`] (`settings.json` of the config dir and of a workspace),
//! [`PermissionRules`] (`permissions.json` of both, the rules "always" answers leave, and the
//! digests that keep a workspace's file from granting what the user did not accept) and
//! [`decide`], a pure function of a call's facts. Everything here is data and pure
//! functions; the only I/O is reading those files, and rewriting a rules file.
//!
//! Must not know: the kernel's event loop, the store, sockets, frontends, or how a tool runs.
//! The kernel asks a person, waits, times out and stores session overrides; the sandbox
//! enforces the grants. This crate only says what the rules are.
//!
//! How the kernel uses it:
//!
//! ```
//! use serde_json::json;
//! use superpi_policy::{Caller, ConversationPolicy, Decision, Harnesses, Mode, Settings};
//! use superpi_proto::{ToolDef, tool::Effect};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let config_dir = std::env::temp_dir().join("superpi-policy-doc-none");
//! # let workspace = std::path::PathBuf::from("/work/repo");
//! // The tools' facts come from the sandbox's registry.
//! let tools = superpi_sandbox::ToolRegistry::builtin().defs();
//! // At start: a bad file is an error naming the file and the key.
//! let harnesses = Harnesses::load(&config_dir, &tools)?;
//! // Per conversation: the user's settings, tightened by the workspace's.
//! let settings = Settings::load(&config_dir, Some(&workspace))?;
//! let harness = harnesses.resolve(Some("superpi-code"))?.clone();
//! let mut policy = ConversationPolicy::new(harness, settings, Some(workspace), Caller::Remote, Some(Mode::Auto));
//! assert_eq!(policy.mode(), Mode::AcceptEdits); // a remote request only tightens
//!
//! // Per tool call, from the tool's facts (here a shell tool: its `command` is read).
//! let bash = ToolDef {
//!     name: "bash".into(),
//!     effects: vec![Effect::Exec, Effect::FsWrite],
//!     workspace: true,
//!     shell: Some("command".into()),
//!     ..Default::default()
//! };
//! let decision = policy.decide(&bash, &json!({"command": "make test"}));
//! let decision = match decision {
//!     Decision::Ask { .. } if policy.may_ask(true) => {
//!         // Publish permission_request { reason, risk }, wait up to policy.question_timeout()
//!         // for permission.respond; None on timeout or cancel.
//!         policy.answer(decision, Some("allow_always"))
//!     }
//!     Decision::Ask { .. } => policy.answer(decision, None), // nobody can answer: fails closed
//!     other => other,
//! };
//! assert_eq!(decision, Decision::Allow { network: true }); // run it, with network
//! assert!(policy.decide(&bash, &json!({"command": "make test"})).is_allowed()); // not asked again
//! # Ok(())
//! # }
//! ```

pub mod backend;
pub mod backend_files;
pub mod budget;
pub mod checkpoints;
pub mod conversation;
pub mod decide;
pub mod error;
pub mod harness;
pub mod hooks;
pub mod mcp_servers;
pub mod mode;
pub mod mode_choice;
pub mod net;
/// The protected-path rules, kept in their own crate (superpi-paths) and named here as before.
pub use superpi_paths as paths;
pub mod pattern;
pub mod permission_rules;
pub mod permission_rules_edit;
pub mod permission_rules_file;
pub mod read_only;
pub mod settings;
pub mod shell;
mod shell_compound;
mod shell_parser;
mod shell_words;
pub mod subagents;
pub mod verdict;
pub mod web;

#[cfg(test)]
mod props_tests;
#[cfg(test)]
mod test_tools;

pub use backend::{BackendKind, UnknownBackend};
pub use budget::{Budget, CostRules};
pub use checkpoints::CheckpointSettings;
pub use conversation::ConversationPolicy;
pub use decide::{Answer, CallFacts, Decision, Overrides, Remember, Risk, Rule, decide};
pub use error::ConfigError;
pub use harness::{Harness, Harnesses, LIBRARIAN, UnknownHarness, WorkspaceKind};
pub use hooks::{Hook, HookPoint, HookSettings};
pub use mcp_servers::{McpOAuth, McpServerConfig, McpTransport};
pub use mode::{Mode, UnknownMode};
pub use mode_choice::{Caller, effective_mode};
pub use net::{Network, NetworkPolicy, ShellNetwork, host_listed};
pub use paths::ProtectedPaths;
pub use permission_rules::{LoadedRule, PermissionRules, RuleAction, RuleEntry, RuleSource};
pub use permission_rules_file::FileNotice;
pub use settings::{Permissions, RemoteSettings, SandboxSettings, Settings};
pub use subagents::SubagentSettings;
pub use verdict::Scope;
pub use web::{SearchBackend, SearchKind, WebSettings};
