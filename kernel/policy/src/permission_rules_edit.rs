//! Writing permission rules: the rules an "always for this project" or "always for me" answer
//! leaves ([`suggest`]: derived from the call the question was about, never wider than it),
//! adding them to a rules file ([`append`]) and taking rules out ([`remove`]).
//!
//! Also what `superpi permissions trust|untrust` change: the trusted folders and the digests
//! of the workspace files the user accepted. Files are rewritten whole (`permission_rules_file.rs`),
//! so a reader sees the old rules or the new ones, never half a file.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;
use superpi_proto::tool::ToolDef;

use crate::error::ConfigError;
use crate::permission_rules::{
    CallPlaces, LoadedRule, PermissionRules, RuleAction, RuleEntry, RuleSource, USER_RULES_FILE, WORKSPACE_RULES_FILE,
    loaded, rule_id, trusts,
};
use crate::permission_rules_file::{self as file, RulesFile};
use crate::shell::{self, SimpleCommand};
use crate::verdict::{Decision, Remember, Scope};

/// The allow rules that would answer this question again, or `None` when the call cannot be
/// said as rules no wider than itself: a shell line becomes one exact rule per simple command
/// it was asked about (all of them literal words without a file redirection, or none); a
/// tool's call a rule per path it names (relative to the workspace), or for the host of its
/// `url`, or for the whole tool when it names neither. A shell call asked about for its
/// network has no rule (its hosts cannot be known).
pub fn suggest(
    tool: &ToolDef,
    arguments: &Value,
    decision: &Decision,
    workspace: Option<&Path>,
) -> Option<Vec<RuleEntry>> {
    let Decision::Ask { remember, .. } = decision else { return None };
    let rule = |command: Option<String>, path: Option<String>, host: Option<String>| RuleEntry {
        action: RuleAction::Allow,
        tool: Some(tool.name.clone()),
        command,
        path,
        host,
        workspace: None,
    };
    match (remember, tool.shell.as_deref()) {
        (Remember::Commands(keys), Some(arg)) => {
            let line = arguments.get(arg).and_then(Value::as_str)?;
            let cmds = shell::commands(line).ok()?;
            let mut rules: Vec<RuleEntry> = Vec::new();
            for key in keys {
                let cmd = cmds.iter().find(|c| &c.text() == key)?;
                let pattern = exact_pattern(cmd)?;
                if !rules.iter().any(|r| r.command.as_deref() == Some(&pattern)) {
                    rules.push(rule(Some(pattern), None, None));
                }
            }
            (!rules.is_empty()).then_some(rules)
        }
        (Remember::Tool(name), None) if *name == tool.name => {
            let places = CallPlaces::of(tool, arguments, workspace);
            if places.unreadable {
                return None;
            }
            let mut rules = Vec::new();
            for path in &places.paths {
                let relative = path.strip_prefix(workspace?).ok()?.to_str()?;
                if relative.is_empty() || relative.contains(['*', '?', '[', ']', '{', '}', '\\']) {
                    return None;
                }
                rules.push(rule(None, Some(relative.to_string()), None));
            }
            if let Some(host) = places.host {
                rules.push(rule(None, None, Some(host)));
            }
            if rules.is_empty() {
                rules.push(rule(None, None, None));
            }
            Some(rules)
        }
        _ => None,
    }
}

/// The exact pattern of one simple command: its words, quoted where the shell would read
/// them otherwise; `None` unless every word is literal and nothing is written to a file.
fn exact_pattern(cmd: &SimpleCommand) -> Option<String> {
    if cmd.words.is_empty() || !cmd.writes_no_file() {
        return None;
    }
    if cmd.words.iter().any(|w| !w.literal) {
        return None;
    }
    let pattern = cmd.words.iter().map(|w| quote(&w.text)).collect::<Vec<_>>().join(" ");
    // Read back, it must name this command and nothing more.
    let read = crate::pattern::CommandPattern::parse_prefix(&pattern).ok()?;
    (read.is_exact() && read.allows(&cmd.words)).then_some(pattern)
}

fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+:,./-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// One writer of rules files at a time in this process, so the digest recorded for a
/// workspace's file is the one last written (two answers at once would otherwise race).
static WRITING: Mutex<()> = Mutex::new(());

fn writing() -> MutexGuard<'static, ()> {
    WRITING.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Adds `rules` (allow rules from [`suggest`]) to the file `scope` names; a rule already there
/// is not added twice. Returns the file written. A project's rules go to the workspace's file
/// when the folder is trusted and that file is missing or is the one accepted, and its new
/// digest is recorded; otherwise to the user's file, scoped to the workspace (a file changed
/// behind the kernel's back is never accepted by the kernel's own write).
pub fn append(
    config_dir: &Path,
    workspace: Option<&Path>,
    scope: Scope,
    mut rules: Vec<RuleEntry>,
) -> Result<PathBuf, ConfigError> {
    let _one = writing();
    let user_file = config_dir.join(USER_RULES_FILE);
    let add = |file: &mut RulesFile, rules: Vec<RuleEntry>| {
        for rule in rules {
            if !file.rules.contains(&rule) {
                file.rules.push(rule);
            }
        }
    };
    let (mut user, _) = file::read_for_edit(&user_file, RuleSource::User)?;
    match (scope, workspace) {
        (Scope::Project, Some(ws)) => {
            let key = crate::paths::lexical(ws);
            let ws_file = ws.join(WORKSPACE_RULES_FILE);
            if trusts(&user.trusted_folders, ws) {
                let ours = |sha: &Option<String>| sha.is_none() || sha.as_ref() == user.rules_sha256.get(&key);
                if let Ok((mut file, sha)) = file::read_for_edit(&ws_file, RuleSource::Workspace)
                    && ours(&sha)
                {
                    add(&mut file, rules.clone());
                    // A `.superpi` that is a link or another user's is not written through.
                    if let Ok(sha256) = file::write(&ws_file, &file, RuleSource::Workspace) {
                        user.rules_sha256.insert(key, sha256);
                        file::write(&user_file, &user, RuleSource::User)?;
                        return Ok(ws_file);
                    }
                }
            }
            for rule in &mut rules {
                rule.workspace = Some(key.clone());
            }
        }
        (Scope::Project, None) => {
            return Err(ConfigError::invalid(
                &user_file,
                "",
                "a conversation without a workspace has no project rules",
            ));
        }
        (Scope::User, _) => {}
    }
    add(&mut user, rules);
    file::write(&user_file, &user, RuleSource::User)?;
    Ok(user_file)
}

/// Takes out every rule of the user's and the workspace's file whose id or pattern (command,
/// path, host, or tool of a whole-tool rule) is `key`. Returns the rules removed (none: no
/// file changed). A workspace file that was accepted stays accepted.
pub fn remove(config_dir: &Path, workspace: Option<&Path>, key: &str) -> Result<Vec<LoadedRule>, ConfigError> {
    let _one = writing();
    let loaded = PermissionRules::load(config_dir, workspace)?;
    let removed: Vec<LoadedRule> =
        loaded.all().iter().filter(|r| r.id == key || r.entry.pattern() == key).cloned().collect();
    let mut files: Vec<(&Path, RuleSource)> = removed.iter().map(|r| (r.file.as_path(), r.source)).collect();
    files.dedup();
    let user_file = config_dir.join(USER_RULES_FILE);
    for (path, source) in files {
        let (mut file, before) = file::read_for_edit(path, source)?;
        file.rules.retain(|entry| !removed.iter().any(|r| r.file == path && r.id == rule_id(entry, source)));
        let after = file::write(path, &file, source)?;
        if let (RuleSource::Workspace, Some(ws)) = (source, workspace) {
            let (mut user, _) = file::read_for_edit(&user_file, RuleSource::User)?;
            let key = crate::paths::lexical(ws);
            if before.is_some() && user.rules_sha256.get(&key) == before.as_ref() {
                user.rules_sha256.insert(key, after);
                file::write(&user_file, &user, RuleSource::User)?;
            }
        }
    }
    Ok(removed)
}

/// What `superpi permissions trust` did.
#[derive(Debug, Clone, PartialEq)]
pub struct Trusted {
    /// The folder added to `trusted_folders`, or the trusted folder that already held it.
    pub folder: PathBuf,
    pub newly: bool,
    /// The workspace's rules file as accepted (None: it has none).
    pub accepted: Option<Vec<RuleEntry>>,
    /// The agent backends' configuration files of the workspace accepted as they are now
    /// (`backend_files.rs`).
    pub backend_files: Vec<PathBuf>,
}

/// Trusts `folder` (absolute, canonical): adds it to `trusted_folders` unless a trusted
/// folder holds it, and accepts its rules file as it is now (its digest recorded; with none,
/// the digest of nothing, so a file written later is a change), and the agent backends'
/// configuration files in it (`.gemini/`, `opencode.json`, ...: those present, as they are now;
/// none recorded for one missing). A file superpi would ignore or cannot read is an error.
pub fn trust(config_dir: &Path, folder: &Path) -> Result<Trusted, ConfigError> {
    let _one = writing();
    let user_file = config_dir.join(USER_RULES_FILE);
    let (mut user, _) = file::read_for_edit(&user_file, RuleSource::User)?;
    let key = crate::paths::lexical(folder);
    let ws_file = folder.join(WORKSPACE_RULES_FILE);
    let (file, sha256) = file::read_for_edit(&ws_file, RuleSource::Workspace)?;
    for (i, entry) in file.rules.iter().enumerate() {
        loaded(entry.clone(), RuleSource::Workspace, &ws_file, i, None)?;
    }
    let holder = user.trusted_folders.iter().find(|f| key.starts_with(crate::paths::lexical(f))).cloned();
    let newly = holder.is_none();
    if newly {
        user.trusted_folders.push(key.clone());
    }
    // No file: the digest of nothing (no rules file is empty), so one written later is a change.
    user.rules_sha256.insert(key.clone(), sha256.clone().unwrap_or_else(|| file::sha256(b"")));
    let mut backend_files = Vec::new();
    for (path, digest) in crate::backend_files::digests(&key)? {
        match digest {
            Some(digest) => {
                user.backend_files_sha256.insert(path.clone(), digest);
                backend_files.push(path);
            }
            None => {
                user.backend_files_sha256.remove(&path);
            }
        }
    }
    file::write(&user_file, &user, RuleSource::User)?;
    Ok(Trusted { folder: holder.unwrap_or(key), newly, accepted: sha256.map(|_| file.rules), backend_files })
}

/// What `superpi permissions untrust` did.
#[derive(Debug, Clone, PartialEq)]
pub struct Untrusted {
    /// The folders taken out of `trusted_folders` (`folder` and those below it).
    pub folders: Vec<PathBuf>,
    /// How many accepted files, of `folder` and below, are no longer accepted.
    pub files: usize,
    /// A trusted folder above `folder` that still holds it.
    pub still_within: Option<PathBuf>,
}

/// Stops trusting `folder` and the folders below it: out of `trusted_folders`, and their
/// rules files no longer accepted.
pub fn untrust(config_dir: &Path, folder: &Path) -> Result<Untrusted, ConfigError> {
    let _one = writing();
    let user_file = config_dir.join(USER_RULES_FILE);
    let (mut user, _) = file::read_for_edit(&user_file, RuleSource::User)?;
    let key = crate::paths::lexical(folder);
    let below = |f: &PathBuf| crate::paths::lexical(f).starts_with(&key);
    let folders: Vec<PathBuf> = user.trusted_folders.iter().filter(|f| below(f)).cloned().collect();
    user.trusted_folders.retain(|f| !below(f));
    let before = user.rules_sha256.len();
    user.rules_sha256.retain(|f, _| !below(f));
    let files = before - user.rules_sha256.len();
    let before = user.backend_files_sha256.len();
    user.backend_files_sha256.retain(|f, _| !below(f));
    let files = files + (before - user.backend_files_sha256.len());
    let still_within = user.trusted_folders.iter().find(|f| key.starts_with(crate::paths::lexical(f))).cloned();
    if !folders.is_empty() || files > 0 {
        file::write(&user_file, &user, RuleSource::User)?;
    }
    Ok(Untrusted { folders, files, still_within })
}
