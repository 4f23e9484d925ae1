//! Skills: instructions the model loads when it needs them. A skill is a markdown file with
//! front matter (`name:` and `description:` lines between `---` lines) and a body of
//! instructions, either `SKILLS_DIR/NAME/SKILL.md` (the files beside it belong to the skill)
//! or `SKILLS_DIR/NAME.md`. The skills directories are `CONFIG_DIR/skills` (the user's) and
//! `WORKSPACE/.superpi/skills` (the project's, which replaces a user's skill of the same
//! name). A harness that offers the `skill` tool (`skill_tool.rs`) lists every skill's name
//! and description after its system prompt; the model loads one's instructions, or a file
//! beside them, through the tool.
//!
//! Like `AGENTS.md` (`rules.rs`), skills are configuration the kernel reads itself, at each
//! turn: only regular files (a symlink is skipped, so a skill cannot pull another file in),
//! bounded in size; a file without a description is left out, with a log line.

use std::path::{Path, PathBuf};

/// The tool that loads a skill.
pub(crate) const SKILL_TOOL: &str = "skill";
/// The skills directory inside a workspace.
pub(crate) const WORKSPACE_SKILLS: &str = ".superpi/skills";
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

/// The skills directories, the user's first (a later one's skill replaces an earlier one's).
pub(crate) fn roots(config_dir: &Path, workspace: Option<&Path>) -> Vec<PathBuf> {
    let mut roots = vec![config_dir.join("skills")];
    roots.extend(workspace.map(|w| w.join(WORKSPACE_SKILLS)));
    roots
}

/// Every skill of these directories, by name.
pub(crate) fn discover(roots: &[PathBuf]) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root) else { continue };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            let Some(skill) = read_skill(&path) else { continue };
            skills.retain(|s| s.name != skill.name);
            skills.push(skill);
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills
}

/// The skill at `path` (a `NAME/` directory with `SKILL.md`, or a `NAME.md` file), if it is one.
fn read_skill(path: &Path) -> Option<Skill> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let (file, dir, fallback) = if meta.is_dir() {
        (path.join(SKILL_FILE), Some(path.to_path_buf()), path.file_name()?.to_str()?.to_string())
    } else if meta.is_file() && path.extension().is_some_and(|e| e == "md") {
        (path.to_path_buf(), None, path.file_stem()?.to_str()?.to_string())
    } else {
        return None;
    };
    let text = read_regular(&file).ok()?;
    let parsed = parse(&text);
    let name = parsed.name.unwrap_or(fallback);
    if !valid_name(&name) {
        tracing::warn!("skill {}: `{name}` is not a skill name (letters, digits, - _ .)", file.display());
        return None;
    }
    let Some(description) = parsed.description else {
        tracing::warn!("skill {}: no `description:` in its front matter, so it is not listed", file.display());
        return None;
    };
    let description: String = description.chars().take(MAX_DESCRIPTION_CHARS).collect();
    Some(Skill { name, description, file, dir })
}

/// A regular file's text (not through a symlink), at most [`MAX_SKILL_BYTES`].
pub(crate) fn read_regular(path: &Path) -> Result<String, String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.file_type().is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if meta.len() > MAX_SKILL_BYTES {
        return Err(format!(
            "{} holds {} bytes, more than the {MAX_SKILL_BYTES} a skill may",
            path.display(),
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", path.display()))
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
    match (base, index(&discover(&roots(config_dir, workspace)))) {
        (Some(base), Some(index)) => Some(format!("{base}\n\n{index}")),
        (base, index) => base.or(index),
    }
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
