//! Skills: instructions the model loads when it needs them. A skill is a markdown file with
//! front matter (`name:` and `description:` lines between `---` lines) and a body of
//! instructions, either `SKILLS_DIR/NAME/SKILL.md` (the files beside it belong to the skill)
//! or `SKILLS_DIR/NAME.md`. The skills directories are `CONFIG_DIR/skills` (the user's) and
//! `WORKSPACE/.superpi/skills` (the project's, which replaces a user's skill of the same
//! name). A harness that offers the `skill` tool (`tools/skill.rs`) lists every skill's name
//! and description after its system prompt; the model loads one's instructions, or a file
//! beside them, through the tool.
//!
//! The user's skills directory is configuration the kernel reads itself (it lies in the config
//! directory, out of every confined tool's reach). A workspace's is not: whoever wrote the
//! repository, or the agent's own tools, wrote it, so it is read by the confined tool runner
//! with the conversation's confinement (`Sandbox::read_tree`: landlock, seccomp, the protected
//! paths), in one call at a turn's start when the workspace has a `.superpi/skills` (a stat tells)
//! and one per `skill` call; the kernel then works from that answer and reads nothing of the
//! workspace by path. Both are read the same way (superpi-sandbox's `read_tree`): resolved
//! beneath the directory without following a link (a symlinked `.superpi`, `skills`, skill
//! directory or file is refused, with a message the `skill` tool's list repeats), from
//! directories and files owned by the user or root, regular, of one name, bounded in size; a
//! file without a description is left out, with a log line.

use std::path::{Path, PathBuf};

use superpi_policy::ProtectedPaths;
use superpi_sandbox::{Sandbox, Tree, TreeKind, TreeRead};
use tokio_util::sync::CancellationToken;

/// The tool that loads a skill.
pub(crate) const SKILL_TOOL: &str = "skill";
/// The directory inside a workspace that holds `skills/`.
const WORKSPACE_DIR: &str = ".superpi";
/// A skill directory's instructions file.
const SKILL_FILE: &str = "SKILL.md";
/// The most bytes of a skill's file read.
pub(crate) const MAX_SKILL_BYTES: u64 = 256 * 1024;
/// The most characters of a name and of a description.
const MAX_NAME_CHARS: usize = 64;
const MAX_DESCRIPTION_CHARS: usize = 1024;
/// The most bytes of the list of skills in the system prompt.
const INDEX_BUDGET_BYTES: usize = 8 * 1024;

/// One skill found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Skill {
    pub name: String,
    pub description: String,
    /// Its instructions file.
    pub file: PathBuf,
    /// Its directory, whose other files belong to it (`NAME/SKILL.md`); none for `NAME.md`.
    pub dir: Option<PathBuf>,
    /// Which of the skills directories read holds it (`Found::trees`), and its directory's
    /// name there (none for `NAME.md`).
    pub tree: usize,
    pub at: Option<String>,
    /// Its instructions file's path in that directory.
    pub relative: String,
}

/// A skill file's front matter and body.
#[derive(Debug, PartialEq)]
pub(crate) struct Parsed {
    pub name: Option<String>,
    pub description: Option<String>,
    pub body: String,
}

/// Splits a skill file into its front matter's `name` and `description` and its body. Other
/// keys are ignored (files written for other agents carry more); a file without front matter is
/// all body.
pub(crate) fn parse(text: &str) -> Parsed {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut parsed = Parsed { name: None, description: None, body: text.to_string() };
    let Some(rest) = text.strip_prefix("---").and_then(|r| r.strip_prefix('\n').or(r.strip_prefix("\r\n"))) else {
        return parsed;
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        let line = line.trim_end();
        if line == "---" {
            parsed.body = rest[offset..].trim_start_matches(['\r', '\n']).to_string();
            return parsed;
        }
        let Some((key, value)) = line.split_once(':') else { continue };
        let value = unquote(value.trim());
        match key.trim() {
            "name" if !value.is_empty() => parsed.name = Some(value.to_string()),
            "description" if !value.is_empty() => parsed.description = Some(value.to_string()),
            _ => {}
        }
    }
    // No closing line: not front matter after all.
    Parsed { name: None, description: None, body: text.to_string() }
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|v| v.strip_suffix(quote)) {
            return inner;
        }
    }
    value
}

/// Whether `name` can name a skill: letters, digits, `-`, `_` and `.`, not starting with `.`.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// How many names deep a skills directory is read: `NAME/a/b/FILE`, a skill's files two
/// directories down.
const DEPTH: usize = 4;

/// What the tree read of a skills directory `beneath` its base asks for: every skill's
/// instructions, and `file` of every skill directory when the `skill` tool loads one.
pub(crate) fn tree_read(beneath: &[&str], file: Option<&str>) -> TreeRead {
    let mut texts = vec!["*.md".to_string(), format!("*/{SKILL_FILE}")];
    texts.extend(file.map(|f| format!("*/{f}")));
    TreeRead {
        beneath: beneath.iter().map(|n| n.to_string()).collect(),
        depth: DEPTH,
        texts,
        max_file_bytes: MAX_SKILL_BYTES,
    }
}

/// Whether `workspace` has a `.superpi/skills` to read, by a stat of each name: no confined
/// process starts for a workspace without one. A `.superpi` that is not a directory (a link)
/// counts, so the runner refuses it in words.
pub(crate) fn workspace_has_skills(workspace: &Path) -> bool {
    match std::fs::symlink_metadata(workspace.join(WORKSPACE_DIR)) {
        Ok(meta) if meta.is_dir() => std::fs::symlink_metadata(workspace.join(WORKSPACE_DIR).join("skills")).is_ok(),
        Ok(_) => true,
        Err(_) => false,
    }
}

/// Where a conversation's skills are read from, and with what.
pub(crate) struct Reader<'a> {
    pub sandbox: &'a Sandbox,
    pub config_dir: &'a Path,
    pub workspace: Option<&'a Path>,
    /// The conversation's protected paths, which the confined runner applies.
    pub protected: ProtectedPaths,
}

impl Reader<'_> {
    /// The user's skills directory (read here) and the workspace's (read by the confined
    /// runner), with `file` of each skill directory besides the instructions.
    pub(crate) async fn read(&self, file: Option<&str>, cancel: &CancellationToken) -> Found {
        let users =
            superpi_sandbox::read_tree(self.config_dir, &tree_read(&["skills"], file), &ProtectedPaths::default());
        let mut read = vec![users];
        if let Some(workspace) = self.workspace.filter(|w| workspace_has_skills(w)) {
            let request = tree_read(&[WORKSPACE_DIR, "skills"], file);
            read.push(self.sandbox.read_tree(workspace, &request, self.protected.clone(), cancel.child_token()).await);
        }
        discover(read)
    }
}

/// The skills found, the skills directories they come from, and what was refused (a link,
/// another user's directory, a protected file), in words.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub skills: Vec<Skill>,
    pub trees: Vec<Tree>,
    pub refused: Vec<String>,
}

impl Found {
    /// The text of `relative` in the skills directory `tree`: `Ok(None)` when there is none.
    pub(crate) fn text(&self, tree: usize, relative: &str) -> Result<Option<&str>, String> {
        self.trees.get(tree).map_or(Ok(None), |t| t.text(relative))
    }
}

/// Every skill of these skills directories as read, by name (a later directory's replaces an
/// earlier one's of the same name).
pub(crate) fn discover(read: Vec<Result<Option<Tree>, String>>) -> Found {
    let mut found = Found::default();
    for tree in read {
        let tree = match tree {
            Ok(Some(tree)) => tree,
            Ok(None) => continue,
            Err(why) => {
                found.refused.push(why);
                continue;
            }
        };
        found.refused.extend(tree.cut.clone());
        for entry in tree.entries.iter().filter(|e| !e.path.contains('/')) {
            match read_skill(&tree, found.trees.len(), &entry.path, &entry.kind) {
                Ok(Some(skill)) => {
                    found.skills.retain(|s| s.name != skill.name);
                    found.skills.push(skill);
                }
                Ok(None) => {}
                Err(why) => found.refused.push(why),
            }
        }
        found.trees.push(tree);
    }
    for why in &found.refused {
        tracing::warn!("skill not read: {why}");
    }
    found.skills.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The skill at `name` in the skills directory `tree` (number `index`): a `NAME/` directory
/// with `SKILL.md`, or a `NAME.md` file, if it is one.
fn read_skill(tree: &Tree, index: usize, name: &str, kind: &TreeKind) -> Result<Option<Skill>, String> {
    let (at, relative, fallback) = match kind {
        TreeKind::Dir => (Some(name.to_string()), format!("{name}/{SKILL_FILE}"), name),
        TreeKind::File { .. } => match name.strip_suffix(".md") {
            Some(stem) => (None, name.to_string(), stem),
            None => return Ok(None),
        },
        // A refused entry that could be a skill is said; another (`notes.txt`) is no skill.
        TreeKind::Refused(why) if Path::new(name).extension().is_none_or(|e| e == "md") => {
            return Err(why.clone());
        }
        TreeKind::Refused(_) => return Ok(None),
    };
    let Some(text) = tree.text(&relative)? else { return Ok(None) };
    let file = tree.path.join(&relative);
    let parsed = parse(text);
    let name = parsed.name.unwrap_or_else(|| fallback.to_string());
    if !valid_name(&name) {
        tracing::warn!("skill {}: `{name}` is not a skill name (letters, digits, - _ .)", file.display());
        return Ok(None);
    }
    let Some(description) = parsed.description else {
        tracing::warn!("skill {}: no `description:` in its front matter, so it is not listed", file.display());
        return Ok(None);
    };
    let description: String = description.chars().take(MAX_DESCRIPTION_CHARS).collect();
    let dir = at.as_ref().map(|at| tree.path.join(at));
    Ok(Some(Skill { name, description, file, dir, tree: index, at, relative }))
}

/// The list of skills for the system prompt, within its budget; `None` without skills.
pub(crate) fn index(skills: &[Skill]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut text = format!(
        "Skills: instructions for particular tasks, loaded with the `{SKILL_TOOL}` tool by name when a task \
         calls for one (load it before you start such a task).\n"
    );
    for (i, skill) in skills.iter().enumerate() {
        let line = format!("- {}: {}\n", skill.name, skill.description.replace('\n', " "));
        if text.len() + line.len() > INDEX_BUDGET_BYTES {
            text.push_str(&format!("- ... and {} more (the `{SKILL_TOOL}` tool lists them all)\n", skills.len() - i));
            break;
        }
        text.push_str(&line);
    }
    Some(text.trim_end().to_string())
}

/// The system prompt with the list of skills after it, for a harness that offers the tool.
pub(crate) async fn system_prompt(
    base: Option<String>,
    offers_tool: bool,
    reader: &Reader<'_>,
    cancel: &CancellationToken,
) -> Option<String> {
    if !offers_tool {
        return base;
    }
    match (base, index(&reader.read(None, cancel).await.skills)) {
        (Some(base), Some(index)) => Some(format!("{base}\n\n{index}")),
        (base, index) => base.or(index),
    }
}

/// Tests' read of both skills directories in this process, by the function the confined runner
/// runs for the workspace's.
#[cfg(test)]
pub(crate) fn read_here(config_dir: &Path, workspace: Option<&Path>, file: Option<&str>) -> Found {
    let here = |base: &Path, beneath: &[&str]| {
        superpi_sandbox::read_tree(base, &tree_read(beneath, file), &ProtectedPaths::default())
    };
    let mut read = vec![here(config_dir, &["skills"])];
    read.extend(workspace.map(|w| here(w, &[WORKSPACE_DIR, "skills"])));
    discover(read)
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
