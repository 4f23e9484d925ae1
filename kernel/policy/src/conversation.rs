//! One conversation's policy state: the glue the kernel's turn loop holds.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use superpi_proto::ToolDef;

use crate::decide::{CallFacts, decide};
use crate::harness::{Harness, WorkspaceKind};
use crate::mode::Mode;
use crate::mode_choice::{Caller, effective_mode};
use crate::paths::ProtectedPaths;
use crate::permission_rules::{PermissionRules, RuleEntry, WORKSPACE_RULES_FILE};
use crate::permission_rules_file::FileNotice;
use crate::settings::Settings;
use crate::verdict::{Answer, Decision, Overrides, Rule};

/// What the policy knows of one conversation: its harness, settings, workspace, caller, mode
/// and the session's lasting answers. Pure data; the kernel owns it inside the
/// conversation's task.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationPolicy {
    harness: Harness,
    settings: Settings,
    workspace: Option<PathBuf>,
    caller: Caller,
    mode: Mode,
    overrides: Overrides,
    /// superpi's own directories: protected wherever they are.
    private_dirs: Vec<PathBuf>,
    /// The tools this conversation may use at most, whatever its harness offers: a
    /// subagent's are its parent's (none: its harness's loadout decides alone).
    tool_limit: Option<Vec<String>>,
    /// Directories its tools may write besides the workspace, checked as the workspace is.
    extra_roots: Vec<PathBuf>,
    /// The permission rules files as last read (the kernel reads them before each decision);
    /// an error refuses every call until the file is fixed.
    rules: Result<PermissionRules, String>,
}

impl ConversationPolicy {
    /// A conversation's policy with the mode `requested` (or the default) as [`effective_mode`]
    /// allows. A harness without a workspace never gets one, whatever is passed.
    pub fn new(
        harness: Harness,
        settings: Settings,
        workspace: Option<PathBuf>,
        caller: Caller,
        requested: Option<Mode>,
    ) -> Self {
        let mode = effective_mode(requested, &harness, caller, &settings);
        let workspace = if harness.workspace == WorkspaceKind::None { None } else { workspace };
        // The workspace's rules file is the user's to edit, never a file tool's.
        let mut settings = settings;
        if let Ok(own) = crate::pattern::PathPattern::parse(WORKSPACE_RULES_FILE)
            && !settings.permissions.protected_paths.contains(&own)
        {
            settings.permissions.protected_paths.push(own);
        }
        let overrides = Overrides::default();
        ConversationPolicy {
            harness,
            settings,
            workspace,
            caller,
            mode,
            overrides,
            private_dirs: Vec::new(),
            tool_limit: None,
            extra_roots: Vec::new(),
            rules: Ok(PermissionRules::default()),
        }
    }

    /// Takes the permission rules as just read (`PermissionRules::load` of this
    /// conversation's workspace, its error as text). Returns the files' notices that the
    /// rules read before did not have, for the person to be told once.
    pub fn set_rules(&mut self, rules: Result<PermissionRules, String>) -> Vec<FileNotice> {
        let before = self.rules.as_ref().map(PermissionRules::notices).unwrap_or_default();
        let new = match &rules {
            Ok(now) => now.notices().iter().filter(|n| !before.contains(n)).cloned().collect(),
            Err(_) => Vec::new(),
        };
        self.rules = rules;
        new
    }

    /// The allow rules an "always for this project / for me" answer to `decision` (a question
    /// about this call) would write, or `None` when none can be no wider than the call, or an
    /// ask rule would ask again anyway.
    pub fn lasting_rules(&self, tool: &ToolDef, arguments: &Value, decision: &Decision) -> Option<Vec<RuleEntry>> {
        let rules = self.rules.as_ref().ok()?;
        if rules.asking(tool, arguments, self.workspace.as_deref()).is_some() {
            return None;
        }
        crate::permission_rules_edit::suggest(tool, arguments, decision, self.workspace.as_deref())
    }

    /// Bounds the tools to `limit` (by name), whatever the harness offers.
    pub fn with_tool_limit(mut self, limit: Option<Vec<String>>) -> Self {
        self.tool_limit = limit;
        self
    }

    /// The tools this conversation may use at most, if bounded.
    pub fn tool_limit(&self) -> Option<&[String]> {
        self.tool_limit.as_deref()
    }

    /// Whether the tool limit, if any, lets `tool` through.
    pub fn within_limit(&self, tool: &str) -> bool {
        self.tool_limit.as_ref().is_none_or(|limit| limit.iter().any(|t| t == tool))
    }

    /// Lets path arguments name these directories besides the workspace (absolute,
    /// canonical), with the workspace's rules: a harness without a workspace gets none.
    pub fn with_extra_roots(mut self, roots: Vec<PathBuf>) -> Self {
        self.extra_roots = if self.workspace.is_some() { roots } else { Vec::new() };
        self
    }

    /// The directories path arguments may name besides the workspace.
    pub fn extra_roots(&self) -> &[PathBuf] {
        &self.extra_roots
    }

    /// Protects superpi's own directories (config, data, runtime) from every tool.
    pub fn with_private_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.private_dirs = dirs;
        self
    }

    /// Keeps path arguments inside the workspace whatever `allow_outside_workspace` says: a
    /// workspace the kernel manages lies beside other conversations' own.
    pub fn within_workspace(mut self) -> Self {
        self.settings.permissions.allow_outside_workspace = false;
        self
    }

    /// What the tools of this conversation must not touch, for the sandbox to apply where
    /// they touch it.
    pub fn protected_paths(&self) -> ProtectedPaths {
        ProtectedPaths {
            patterns: self.settings.permissions.protected_paths.clone(),
            private_dirs: self.private_dirs.clone(),
        }
    }

    /// With the network policy `allowlist`, the hosts a tool that reaches the network itself
    /// may reach on every request it makes (redirects included), for the runner to apply.
    pub fn allowed_hosts(&self) -> Option<Vec<String>> {
        self.settings.network.listed_hosts().map(<[String]>::to_vec)
    }

    /// Restores the session's lasting answers (from the store).
    pub fn with_overrides(mut self, overrides: Overrides) -> Self {
        self.overrides = overrides;
        self
    }

    /// Asks for a mode; returns the mode in force (lowered to the ceilings).
    pub fn set_mode(&mut self, requested: Mode) -> Mode {
        self.mode = effective_mode(Some(requested), &self.harness, self.caller, &self.settings);
        self.mode
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The highest mode this conversation could be set to.
    pub fn max_mode(&self) -> Mode {
        effective_mode(Some(Mode::Auto), &self.harness, self.caller, &self.settings)
    }

    pub fn harness(&self) -> &Harness {
        &self.harness
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn workspace(&self) -> Option<&Path> {
        self.workspace.as_deref()
    }

    pub fn overrides(&self) -> &Overrides {
        &self.overrides
    }

    /// The tools offered to the model: the harness loadout among `available`, within the
    /// tool limit.
    pub fn tools(&self, available: &[ToolDef]) -> Vec<ToolDef> {
        let mut tools = self.harness.loadout(available);
        tools.retain(|t| self.within_limit(&t.name));
        tools
    }

    /// The decision for a call of `tool` (its definition, as offered) with `arguments`. A
    /// tool the harness does not offer is denied whatever the rest says.
    pub fn decide(&self, tool: &ToolDef, arguments: &Value) -> Decision {
        self.decide_at_most(tool, arguments, Mode::Auto)
    }

    /// [`decide`](Self::decide) in the conversation's mode lowered to `ceiling`: the mode of
    /// whoever asked for this call (a remote caller's ceiling, whatever mode is stored).
    pub fn decide_at_most(&self, tool: &ToolDef, arguments: &Value, ceiling: Mode) -> Decision {
        if !self.harness.offers(&tool.name) && !self.harness.offers_live(tool) {
            return Decision::Deny {
                reason: format!("the harness `{}` does not offer the tool `{}`", self.harness.id, tool.name),
                rule: Rule::NotOffered,
            };
        }
        if !self.within_limit(&tool.name) {
            return Decision::Deny {
                reason: format!(
                    "`{}` is not among the tools of the conversation that started this subagent: a subagent uses at most its parent's tools",
                    tool.name
                ),
                rule: Rule::NotOffered,
            };
        }
        let rules = match &self.rules {
            Ok(rules) => rules,
            Err(err) => {
                return Decision::Deny {
                    reason: format!("no call runs while a permission rules file cannot be read: {err}"),
                    rule: Rule::PermissionRule,
                };
            }
        };
        rules.around(tool, arguments, self.workspace.as_deref(), &self.settings, |settings| {
            decide(&CallFacts {
                tool,
                arguments,
                mode: self.mode.min(ceiling),
                workspace: self.workspace.as_deref(),
                settings,
                overrides: &self.overrides,
                private_dirs: &self.private_dirs,
                extra_roots: &self.extra_roots,
            })
        })
    }

    /// Whether an `Ask` should be put to a person: settings allow asking and someone who can
    /// answer is watching. When false the kernel settles the question at once with
    /// [`answer`](Self::answer)`(decision, None)`.
    pub fn may_ask(&self, interactive_watcher: bool) -> bool {
        interactive_watcher && self.settings.permissions.ask
    }

    /// How long a question waits before failing closed.
    pub fn question_timeout(&self) -> Duration {
        self.settings.permissions.question_timeout
    }

    /// Settles a question with the answer's option id (`None` when nobody answered, on
    /// timeout or cancel). An unknown option id fails closed like no answer.
    pub fn answer(&mut self, decision: Decision, option_id: Option<&str>) -> Decision {
        decision.answer(option_id.and_then(Answer::from_option_id), &mut self.overrides)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use superpi_proto::tool::Effect;

    use super::*;
    use crate::harness::Harnesses;
    use crate::test_tools::{builtin_tools, tool};

    fn conversation(harness: &str, caller: Caller, mode: Option<Mode>) -> ConversationPolicy {
        let h = Harnesses::builtin(&builtin_tools()).get(harness).unwrap().clone();
        ConversationPolicy::new(h, Settings::default(), Some("/w".into()), caller, mode)
    }

    #[test]
    fn the_planner_refuses_a_write_whatever_mode_is_asked_for() {
        let write = tool("write", &[Effect::FsWrite]);
        let bash = tool("bash", &[Effect::Exec, Effect::FsWrite]);
        let read = tool("read", &[Effect::Read]);
        for caller in [Caller::Local, Caller::Remote] {
            for requested in [None, Some(Mode::Plan), Some(Mode::AcceptEdits), Some(Mode::Auto)] {
                let mut c = conversation("superpi-planner", caller, requested);
                assert_eq!(c.mode(), Mode::Plan);
                assert_eq!(c.set_mode(Mode::Auto), Mode::Plan);
                let d = c.decide(&write, &json!({"path": "a.txt", "content": "x"}));
                assert!(matches!(d, Decision::Deny { rule: Rule::NotOffered, .. }), "{d:?}");
                assert!(matches!(c.decide(&bash, &json!({"command": "ls"})), Decision::Deny { .. }));
                assert_eq!(c.decide(&read, &json!({"path": "a.txt"})), Decision::Allow { network: false });
            }
        }
    }

    #[test]
    fn a_tool_limit_bounds_what_the_harness_offers_and_allows() {
        let read = tool("read", &[Effect::Read]);
        let bash = tool("bash", &[Effect::Exec, Effect::FsWrite]);
        let limit = Some(vec!["read".to_string(), "ls".to_string()]);
        let c = conversation("superpi-code", Caller::Local, Some(Mode::Auto)).with_tool_limit(limit);
        let offered: Vec<String> = c.tools(&[read.clone(), bash.clone()]).into_iter().map(|t| t.name).collect();
        assert_eq!(offered, ["read"]);
        assert_eq!(c.decide(&read, &json!({"path": "a.txt"})), Decision::Allow { network: false });
        let d = c.decide(&bash, &json!({"command": "ls"}));
        assert!(
            matches!(&d, Decision::Deny { rule: Rule::NotOffered, reason } if reason.contains("at most its parent's")),
            "{d:?}"
        );
        let unlimited = conversation("superpi-code", Caller::Local, Some(Mode::Auto));
        assert!(unlimited.within_limit("bash"));
        assert_eq!(unlimited.tools(&[read, bash]).len(), 2);
    }

    #[test]
    fn the_assistant_has_no_workspace_and_no_file_tools() {
        let c = conversation("superpi-assistant", Caller::Local, None);
        assert_eq!(c.workspace(), None);
        let available: Vec<ToolDef> = ["read", "write", "bash"].iter().map(|n| tool(n, &[Effect::Read])).collect();
        assert!(c.tools(&available).is_empty());
        let d = c.decide(&available[0], &json!({"path": "/etc/passwd"}));
        assert!(matches!(d, Decision::Deny { rule: Rule::NotOffered, .. }));
    }

    #[test]
    fn modes_follow_caller_and_ceilings() {
        let mut local = conversation("superpi-code", Caller::Local, None);
        assert_eq!((local.mode(), local.max_mode()), (Mode::AcceptEdits, Mode::Auto));
        assert_eq!(local.set_mode(Mode::Auto), Mode::Auto);
        let mut remote = conversation("superpi-code", Caller::Remote, Some(Mode::Auto));
        assert_eq!((remote.mode(), remote.max_mode()), (Mode::AcceptEdits, Mode::AcceptEdits));
        assert_eq!(remote.set_mode(Mode::Plan), Mode::Plan);
        assert_eq!(remote.set_mode(Mode::Auto), Mode::AcceptEdits);
    }

    #[test]
    fn a_ceiling_lowers_the_mode_of_one_decision() {
        let mut c = conversation("superpi-code", Caller::Local, Some(Mode::Auto));
        let bash = tool("bash", &[Effect::Exec, Effect::FsWrite]);
        let args = json!({"command": "make test"});
        assert!(matches!(c.decide(&bash, &args), Decision::Allow { .. }));
        assert!(c.decide_at_most(&bash, &args, Mode::AcceptEdits).askable());
        assert!(matches!(c.decide_at_most(&bash, &args, Mode::Plan), Decision::Deny { rule: Rule::Mode, .. }));
        assert_eq!(c.mode(), Mode::Auto, "the stored mode is unchanged");
        c.set_mode(Mode::Plan);
        assert!(matches!(c.decide_at_most(&bash, &args, Mode::Auto), Decision::Deny { .. }), "a ceiling never raises");
    }

    #[test]
    fn superpis_own_directories_are_protected_inside_and_outside_the_workspace() {
        let h = Harnesses::builtin(&builtin_tools()).get("superpi-code").unwrap().clone();
        let mut settings = Settings::default();
        settings.permissions.allow_outside_workspace = true;
        let c = ConversationPolicy::new(h, settings, Some("/w".into()), Caller::Local, Some(Mode::Auto))
            .with_private_dirs(vec!["/home/u/.config/superpi".into(), "/w/.superpi-data".into()]);
        let read = tool("read", &[Effect::Read]);
        for path in ["/home/u/.config/superpi/gateway.json", ".superpi-data/superpi.sqlite", "/w/.superpi-data"] {
            let d = c.decide(&read, &json!({ "path": path }));
            assert!(matches!(d, Decision::Deny { rule: Rule::ProtectedPath, .. }), "{path}: {d:?}");
        }
        assert_eq!(c.decide(&read, &json!({"path": "/home/u/notes.txt"})), Decision::Allow { network: false });
        let protected = c.protected_paths();
        let json = serde_json::to_string(&protected).unwrap();
        assert_eq!(serde_json::from_str::<ProtectedPaths>(&json).unwrap(), protected);
        assert!(protected.reason(Path::new("/w/.superpi-data/x"), Some(Path::new("/w"))).is_some());
        assert!(protected.reason(Path::new("/w/a/.env"), Some(Path::new("/w"))).is_some());
        assert!(protected.reason(Path::new("/w/a/main.rs"), Some(Path::new("/w"))).is_none());
    }

    #[test]
    fn the_question_flow() {
        let mut c = conversation("superpi-code", Caller::Local, None);
        let bash = tool("bash", &[Effect::Exec, Effect::FsWrite]);
        let args = json!({"command": "make test"});
        assert!(c.may_ask(true) && !c.may_ask(false));
        assert_eq!(c.question_timeout(), Duration::from_secs(120));

        let asked = c.decide(&bash, &args);
        assert!(asked.askable());
        // Unanswered, or answered with an unknown option: fails closed with the same message.
        let closed = c.answer(asked.clone(), None);
        assert_eq!(closed, Decision::Deny { reason: asked.reason().unwrap().into(), rule: Rule::Unanswered });
        let closed = c.answer(asked.clone(), Some("yes please"));
        assert!(matches!(closed, Decision::Deny { rule: Rule::Unanswered, .. }));
        assert_eq!(c.answer(asked.clone(), Some("reject_once")).reason(), asked.reason());
        assert_eq!(c.answer(asked.clone(), Some("allow_once")), Decision::Allow { network: false });
        assert!(c.decide(&bash, &args).askable(), "allow_once is not remembered");
        assert_eq!(c.answer(asked, Some("allow_always")), Decision::Allow { network: false });
        assert_eq!(c.decide(&bash, &args), Decision::Allow { network: false }, "a second call is not asked");
        assert!(c.overrides().allow_commands.contains("make test"));

        let restored = conversation("superpi-code", Caller::Local, None).with_overrides(c.overrides().clone());
        assert_eq!(restored.decide(&bash, &args), Decision::Allow { network: false });
    }
}
