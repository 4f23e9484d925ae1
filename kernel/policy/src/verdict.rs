//! The verdict types of a decision (`decide.rs`), and a session's lasting answers.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// How risky an askable call is, for the person who answers (`permission_request.risk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

/// Which rule refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// The harness does not offer this tool (a model called a tool it was not given).
    NotOffered,
    /// `permissions.deny_tools`.
    DeniedTool,
    /// `permissions.deny` matched a shell command.
    DenyList,
    /// A reject_always answer earlier in the session.
    SessionReject,
    /// The mode blocks this kind of call (`plan` blocks every non-read).
    Mode,
    /// The workspace boundary (or no workspace at all).
    Workspace,
    /// A protected path (.env, .git, keys, credentials, `protected_paths`).
    ProtectedPath,
    /// The network policy.
    Network,
    /// An askable call that nobody answered (no interactive watcher, timeout, cancel, or an
    /// answer that is not one of the options): it fails closed.
    Unanswered,
    /// A person answered reject_once or reject_always.
    Rejected,
    /// A `before_tool` hook refused it, or could not say (it failed or timed out).
    Hook,
    /// A deny rule of a permission rules file (`permissions.json`), or a rules file that
    /// cannot be read (which refuses every call until it is fixed).
    PermissionRule,
}

/// What allow_always or reject_always would remember for the session.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Remember {
    /// The whole tool.
    Tool(String),
    /// These shell commands, each as its words joined by spaces (or a whole line that could
    /// not be read).
    Commands(Vec<String>),
    /// Nothing: the question is about this call alone (a `before_tool` hook asked it about a
    /// call the policy allows), so an "always" answer must not reach the tool's other calls.
    ThisCall,
}

/// The verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it; `network` says whether the sandbox grants it network.
    Allow { network: bool },
    /// A person may lift the block. `reason` is also the message of the refusal when nobody
    /// answers; `network` applies when the answer allows; `remember` is what an
    /// allow_always/reject_always answer records.
    Ask { reason: String, risk: Risk, network: bool, remember: Remember },
    /// Refused, never askable.
    Deny { reason: String, rule: Rule },
}

impl Decision {
    /// Only `Ask` can be lifted by a person.
    pub fn askable(&self) -> bool {
        matches!(self, Decision::Ask { .. })
    }

    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow { .. })
    }

    /// The message of a refusal (or of the question); `None` for `Allow`.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Decision::Allow { .. } => None,
            Decision::Ask { reason, .. } | Decision::Deny { reason, .. } => Some(reason),
        }
    }

    /// Settles an `Ask` with a person's answer, recording allow_always/reject_always in
    /// `overrides`. `None` (nobody can answer, timeout, cancel, or an option id that
    /// [`Answer::from_option_id`] does not know) fails closed with the same message as the
    /// question. Any other decision is returned unchanged.
    pub fn answer(self, answer: Option<Answer>, overrides: &mut Overrides) -> Decision {
        let Decision::Ask { reason, network, remember, .. } = self else { return self };
        match answer {
            // A rule for later is the kernel's to write (`permission_rules_edit`).
            Some(Answer::AllowOnce | Answer::AllowProject | Answer::AllowUser) => Decision::Allow { network },
            Some(Answer::AllowAlways) => {
                overrides.record(Answer::AllowAlways, &remember);
                Decision::Allow { network }
            }
            Some(a @ (Answer::RejectOnce | Answer::RejectAlways)) => {
                overrides.record(a, &remember);
                Decision::Deny { reason, rule: Rule::Rejected }
            }
            None => Decision::Deny { reason, rule: Rule::Unanswered },
        }
    }
}

/// Where an "always for this project / for me" answer's rules go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// This workspace: its `.superpi/permissions.json` when the user trusts its folder, else
    /// the user's file with the rule scoped to the workspace.
    Project,
    /// The user's file, for every project.
    User,
}

/// A person's answer: the four permission options, and the two that write a rule for later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Answer {
    AllowOnce,
    /// For the rest of the conversation.
    AllowAlways,
    RejectOnce,
    RejectAlways,
    /// A rule in this project's rules file (every later conversation in it).
    AllowProject,
    /// A rule in the user's rules file (every project).
    AllowUser,
}

impl Answer {
    /// The answer of a `permission.respond` option id; `None` for anything else (which fails
    /// closed).
    pub fn from_option_id(id: &str) -> Option<Answer> {
        match id {
            "allow_once" => Some(Answer::AllowOnce),
            "allow_always" => Some(Answer::AllowAlways),
            "reject_once" => Some(Answer::RejectOnce),
            "reject_always" => Some(Answer::RejectAlways),
            "allow_always_project" => Some(Answer::AllowProject),
            "allow_always_user" => Some(Answer::AllowUser),
            _ => None,
        }
    }

    pub fn option_id(self) -> &'static str {
        match self {
            Answer::AllowOnce => "allow_once",
            Answer::AllowAlways => "allow_always",
            Answer::RejectOnce => "reject_once",
            Answer::RejectAlways => "reject_always",
            Answer::AllowProject => "allow_always_project",
            Answer::AllowUser => "allow_always_user",
        }
    }

    /// Whether the answer lets the call run.
    pub fn allows(self) -> bool {
        matches!(self, Answer::AllowOnce | Answer::AllowAlways | Answer::AllowProject | Answer::AllowUser)
    }

    /// Where the answer writes a rule, if it does.
    pub fn rule_scope(self) -> Option<Scope> {
        match self {
            Answer::AllowProject => Some(Scope::Project),
            Answer::AllowUser => Some(Scope::User),
            _ => None,
        }
    }
}

/// A session's answers that last: allow_always and reject_always. Kept by the kernel per
/// conversation (serialisable, so it can be stored); never written to a settings file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overrides {
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub allow_tools: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub deny_tools: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub allow_commands: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub deny_commands: BTreeSet<String>,
}

impl Overrides {
    /// Records a lasting answer; `*_once` answers record nothing. A later answer about the
    /// same tool or command replaces an earlier one.
    pub fn record(&mut self, answer: Answer, remember: &Remember) {
        let (add, remove) = match answer {
            Answer::AllowAlways => (true, false),
            Answer::RejectAlways => (false, true),
            Answer::AllowOnce | Answer::RejectOnce | Answer::AllowProject | Answer::AllowUser => return,
        };
        let (allow, deny, keys) = match remember {
            Remember::Tool(t) => (&mut self.allow_tools, &mut self.deny_tools, vec![t.clone()]),
            Remember::Commands(c) => (&mut self.allow_commands, &mut self.deny_commands, c.clone()),
            Remember::ThisCall => return,
        };
        for key in keys {
            if add {
                deny.remove(&key);
                allow.insert(key);
            } else if remove {
                allow.remove(&key);
                deny.insert(key);
            }
        }
    }

    /// What an earlier lasting answer says about `what`: `Some(false)` when it (or one of its
    /// commands) was rejected always, `Some(true)` when it (every command of it) was allowed
    /// always, else `None` (ask). For calls that are not superpi's own tools (an agent
    /// backend's approval requests), whose policy is the backend's.
    pub fn recall(&self, what: &Remember) -> Option<bool> {
        match what {
            Remember::Tool(tool) if self.deny_tools.contains(tool) => Some(false),
            Remember::Tool(tool) => self.allow_tools.contains(tool).then_some(true),
            Remember::Commands(commands) if commands.iter().any(|c| self.deny_commands.contains(c)) => Some(false),
            Remember::Commands(commands) => {
                (!commands.is_empty() && commands.iter().all(|c| self.allow_commands.contains(c))).then_some(true)
            }
            Remember::ThisCall => None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.allow_tools.is_empty()
            && self.deny_tools.is_empty()
            && self.allow_commands.is_empty()
            && self.deny_commands.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lasting_answer_is_recalled_and_a_later_one_replaces_it() {
        let mut o = Overrides::default();
        let tool = Remember::Tool("claude-code.Write".into());
        let commands = Remember::Commands(vec!["make test".into(), "ls".into()]);
        assert_eq!((o.recall(&tool), o.recall(&commands)), (None, None));
        o.record(Answer::AllowAlways, &tool);
        o.record(Answer::AllowAlways, &Remember::Commands(vec!["make test".into()]));
        assert_eq!(o.recall(&tool), Some(true));
        // Only some of the commands allowed: asked again.
        assert_eq!(o.recall(&commands), None);
        o.record(Answer::AllowAlways, &commands);
        assert_eq!(o.recall(&commands), Some(true));
        o.record(Answer::RejectAlways, &Remember::Commands(vec!["ls".into()]));
        assert_eq!(o.recall(&commands), Some(false));
        o.record(Answer::RejectAlways, &tool);
        assert_eq!(o.recall(&tool), Some(false));
        o.record(Answer::AllowOnce, &tool);
        assert_eq!(o.recall(&tool), Some(false), "a once answer remembers nothing");
        assert_eq!(o.recall(&Remember::Commands(Vec::new())), None);
    }

    #[test]
    fn an_always_answer_to_a_question_about_one_call_remembers_nothing() {
        // A hook asked about one bash call: "always" must not allow the shell tool's other
        // calls (an `rm -rf` the policy would ask about) for the rest of the conversation.
        let ask = Decision::Ask {
            reason: "the hook asks".into(),
            risk: Risk::Medium,
            network: false,
            remember: Remember::ThisCall,
        };
        let mut o = Overrides::default();
        assert_eq!(ask.clone().answer(Some(Answer::AllowAlways), &mut o), Decision::Allow { network: false });
        assert!(o.is_empty(), "{o:?}");
        assert!(matches!(ask.answer(Some(Answer::RejectAlways), &mut o), Decision::Deny { .. }));
        assert!(o.is_empty() && o.recall(&Remember::ThisCall).is_none(), "{o:?}");
    }
}
