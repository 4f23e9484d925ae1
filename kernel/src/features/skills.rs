//! Skills: instructions the model loads when it needs them. A skill is a markdown file with
//! front matter (`name:` and `description:` lines between `---` lines) and a body of
//! instructions, either `SKILLS_DIR/NAME/SKILL.md` (the files beside it belong to the skill)
//! or `SKILLS_DIR/NAME.md`. The skills directories are `CONFIG_DIR/skills` (the user's) and
//! `WORKSPACE/.superpi/skills` (the project's, which replaces a user's skill of the same
//! name). A harness that offers the `skill` tool (`skill_tool.rs`) lists every skill's name
//! and description after its system prompt; the model loads one's instructions, or a file
//! beside them, through the tool.
//!
//! Like `AGENTS.md` (`rules.rs`), skills are configuration the kernel reads itself, unconfined,
//! at each turn: resolved beneath the config directory or the workspace without following a
//! link (a symlinked `.superpi`, `skills`, skill directory or file is refused, with a message
//! the `skill` tool's list repeats, so a workspace cannot point the kernel at a file the
//! confined `read` refuses), from directories and files owned by the user or root, each file
//! checked on the descriptor it is read from (`beneath.rs`), regular and bounded in size; a
//! file without a description is left out, with a log line.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::features::beneath::{self, Entry};

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
    /// The directory its instructions file is read from, and that file's name in it.
    pub at: Root,
    pub file_name: String,
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

/// A skills directory: a directory opened by path (the config directory or the workspace, both
/// the user's choice) and the names beneath it, each opened from its parent's descriptor
/// without following a link and owned by the user or root (`beneath.rs`). A skill's own
/// directory is one too, one name deeper.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Root {
    pub base: PathBuf,
    pub beneath: Vec<String>,
}

impl Root {
    pub(crate) fn new(base: &Path, beneath: &[&str]) -> Root {
        Root { base: base.to_path_buf(), beneath: beneath.iter().map(|n| n.to_string()).collect() }
    }

    /// Its path, for messages.
    pub(crate) fn path(&self) -> PathBuf {
        self.beneath.iter().fold(self.base.clone(), |path, name| path.join(name))
    }

    fn join(&self, name: &str) -> Root {
        let mut root = self.clone();
        root.beneath.push(name.to_string());
        root
    }

    /// Opens it: `Ok(None)` when it does not exist; an error when a name on the way is a
    /// symbolic link or another user's.
    pub(crate) fn open(&self) -> Result<Option<OwnedFd>, String> {
        let Some(mut fd) = beneath::open_root(&self.base)? else { return Ok(None) };
        let mut shown = self.base.clone();
        for name in &self.beneath {
            shown.push(name);
            match beneath::open_dir(&fd, name, &shown)? {
                Some(next) => fd = next,
                None => return Ok(None),
            }
        }
        Ok(Some(fd))
    }

    /// The text of the regular file at `relative` (plain names) beneath it, reached through no
    /// link, at most [`MAX_SKILL_BYTES`]; `Ok(None)` when there is none.
    pub(crate) fn read(&self, relative: &[&str]) -> Result<Option<String>, String> {
        let Some((file, dirs)) = relative.split_last() else { return Ok(None) };
        let Some(mut fd) = self.open()? else { return Ok(None) };
        let mut shown = self.path();
        for name in dirs {
            shown.push(name);
            match beneath::open_dir(&fd, name, &shown)? {
                Some(next) => fd = next,
                None => return Ok(None),
            }
        }
        shown.push(file);
        let Some((bytes, len)) = beneath::read_file(&fd, file, &shown, MAX_SKILL_BYTES + 1)? else {
            return Ok(None);
        };
        if len > MAX_SKILL_BYTES {
            return Err(format!("{} holds {len} bytes, more than the {MAX_SKILL_BYTES} a skill may", shown.display()));
        }
        String::from_utf8(bytes).map(Some).map_err(|_| format!("{} is not UTF-8 text", shown.display()))
    }
}

/// The skills directories, the user's first (a later one's skill replaces an earlier one's).
pub(crate) fn roots(config_dir: &Path, workspace: Option<&Path>) -> Vec<Root> {
    let mut roots = vec![Root::new(config_dir, &["skills"])];
    roots.extend(workspace.map(|w| Root::new(w, &[WORKSPACE_DIR, "skills"])));
    roots
}

/// The skills found, and what was refused (a link, another user's directory), in words.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub skills: Vec<Skill>,
    pub refused: Vec<String>,
}

/// Every skill of these directories, by name.
pub(crate) fn discover(roots: &[Root]) -> Found {
    let mut found = Found::default();
    for root in roots {
        let fd = match root.open() {
            Ok(Some(fd)) => fd,
            Ok(None) => continue,
            Err(why) => {
                found.refused.push(why);
                continue;
            }
        };
        for (name, entry) in beneath::entries(&fd) {
            match read_skill(root, &name, entry) {
                Ok(Some(skill)) => {
                    found.skills.retain(|s| s.name != skill.name);
                    found.skills.push(skill);
                }
                Ok(None) => {}
                Err(why) => found.refused.push(why),
            }
        }
    }
    for why in &found.refused {
        tracing::warn!("skill not read: {why}");
    }
    found.skills.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The skill at `name` beneath `root` (a `NAME/` directory with `SKILL.md`, or a `NAME.md`
/// file), if it is one.
fn read_skill(root: &Root, name: &str, entry: Entry) -> Result<Option<Skill>, String> {
    let (at, file_name, fallback) = match entry {
        Entry::Dir => (root.join(name), SKILL_FILE, name),
        Entry::File => match name.strip_suffix(".md") {
            Some(stem) => (root.clone(), name, stem),
            None => return Ok(None),
        },
        Entry::Link if Path::new(name).extension().is_none_or(|e| e == "md") => {
            return Err(format!(
                "{} is a symbolic link; superpi does not follow it (make it a directory or file of its own)",
                root.path().join(name).display()
            ));
        }
        Entry::Link | Entry::Other => return Ok(None),
    };
    let Some(text) = at.read(&[file_name])? else { return Ok(None) };
    let file = at.path().join(file_name);
    let parsed = parse(&text);
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
    let dir = (entry == Entry::Dir).then(|| at.path());
    Ok(Some(Skill { name, description, file, dir, at, file_name: file_name.to_string() }))
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
pub(crate) fn system_prompt(
    base: Option<String>,
    offers_tool: bool,
    config_dir: &Path,
    workspace: Option<&Path>,
) -> Option<String> {
    if !offers_tool {
        return base;
    }
    match (base, index(&discover(&roots(config_dir, workspace)).skills)) {
        (Some(base), Some(index)) => Some(format!("{base}\n\n{index}")),
        (base, index) => base.or(index),
    }
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
