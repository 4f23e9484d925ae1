//! The `skill` tool: a skill's instructions by name, a file beside them, or the list of skills
//! (`skills.rs` finds them). Registered by the kernel like the plan tool: its runner runs in the
//! kernel's process and reads only the skills directories (the user's is inside the config
//! directory, out of every confined tool's reach), each file a regular one inside its skill's
//! directory, reached from the workspace's (or config directory's) descriptor name by name
//! without following a link (`skills::Root`), so a symlinked `.superpi` cannot lead it to a
//! file the confined `read` refuses, and no path is checked and then read again. A read with no capability block, so the code and planner harnesses offer it;
//! `turn_only`, as the list of skills is given in a turn's system prompt.

use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::json;
use superpi_proto::tool::{Effect, ToolCallResult, ToolDef, ToolKind, ToolUi};
use superpi_sandbox::{RunFuture, ToolCall, ToolRunner};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::features::beneath::{self, Entry};
use crate::features::skills::{Found, SKILL_TOOL, Skill, discover, parse, roots};

/// The runner: the config directory, whose `skills` it reads besides the call's workspace's.
pub(crate) struct SkillTool {
    pub config_dir: PathBuf,
}

/// The tool's facts.
pub(crate) fn def() -> ToolDef {
    ToolDef {
        name: SKILL_TOOL.into(),
        description: "Load a skill: instructions for a particular task, listed by name in your instructions. \
                      Give `name` for its instructions; add `file` (a path the instructions name, relative to \
                      the skill) for a file that comes with it. Without `name`, lists every skill."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name"},
                "file": {"type": "string", "description": "A file of the skill, relative to its directory"}
            },
            "additionalProperties": false
        }),
        effects: vec![Effect::Read],
        // The list of skills is part of a turn's system prompt: outside a turn (`tool.call`,
        // the MCP server's tools) nobody is told which exist.
        turn_only: true,
        ui: ToolUi { kind: ToolKind::Read, title: Some("Skill {name}".into()), ..ToolUi::default() },
        ..ToolDef::default()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    name: Option<String>,
    file: Option<String>,
}

impl ToolRunner for SkillTool {
    fn run<'a>(&'a self, call: &'a ToolCall, _: CancellationToken, _: Option<mpsc::Sender<String>>) -> RunFuture<'a> {
        Box::pin(async move {
            let args: Args = match serde_json::from_value(call.arguments.clone()) {
                Ok(args) => args,
                Err(err) => return ToolCallResult::error(format!("invalid arguments: {err}")),
            };
            let found = discover(&roots(&self.config_dir, call.workspace.as_deref()));
            match answer(&found, args) {
                Ok(output) => ToolCallResult { is_error: false, ..ToolCallResult::error(output) },
                Err(why) => ToolCallResult::error(why),
            }
        })
    }
}

/// What a call answers, from the skills found.
fn answer(found: &Found, args: Args) -> Result<String, String> {
    let Some(name) = args.name else {
        if args.file.is_some() {
            return Err("`file` needs the skill's `name`".into());
        }
        return Ok(list(found));
    };
    let Some(skill) = found.skills.iter().find(|s| s.name == name) else {
        return Err(format!("no skill is named `{name}`. {}", list(found)));
    };
    match args.file {
        None => instructions(skill),
        Some(file) => beside(skill, &file),
    }
}

fn list(found: &Found) -> String {
    let mut text = if found.skills.is_empty() {
        "There are no skills.".to_string()
    } else {
        let lines: Vec<String> = found.skills.iter().map(|s| format!("- {}: {}", s.name, s.description)).collect();
        format!("Skills:\n{}", lines.join("\n"))
    };
    if !found.refused.is_empty() {
        text.push_str(&format!("\nNot read:\n- {}", found.refused.join("\n- ")));
    }
    text
}

/// A skill's instructions, and the files that come with it.
fn instructions(skill: &Skill) -> Result<String, String> {
    let text = skill.at.read(&[&skill.file_name])?.ok_or_else(|| format!("{} is gone", skill.file.display()))?;
    let body = parse(&text).body;
    let mut text = format!("# Skill: {}\n\n{}", skill.name, body.trim_end());
    let files = match skill.dir {
        Some(_) => skill.at.open()?.map(|fd| files_of(&fd)).unwrap_or_default(),
        None => Vec::new(),
    };
    if !files.is_empty() {
        text.push_str(&format!(
            "\n\nFiles of this skill (load one with `{SKILL_TOOL}`, `name` and `file`): {}",
            files.join(", ")
        ));
    }
    Ok(text)
}

/// The regular files under a skill's directory but its instructions, relative, sorted (at most
/// 200, two levels deep), walked from its descriptor without following a link.
fn files_of(dir: &OwnedFd) -> Vec<String> {
    let mut files = Vec::new();
    let mut walk: Vec<(Option<OwnedFd>, PathBuf, usize)> = vec![(None, PathBuf::new(), 0)];
    while let Some((fd, at, depth)) = walk.pop() {
        let fd = fd.as_ref().unwrap_or(dir);
        for (name, entry) in beneath::entries(fd) {
            let relative = at.join(&name);
            match entry {
                Entry::Dir if depth < 2 => {
                    if let Ok(Some(sub)) = beneath::open_dir(fd, &name, &relative) {
                        walk.push((Some(sub), relative, depth + 1));
                    }
                }
                Entry::File if relative != Path::new("SKILL.md") => files.push(relative.display().to_string()),
                _ => {}
            }
        }
    }
    files.sort();
    files.truncate(200);
    files
}

/// A file beside a skill's instructions: a relative path inside its directory, reached through
/// no symlink, a regular file of text.
fn beside(skill: &Skill, file: &str) -> Result<String, String> {
    if skill.dir.is_none() {
        return Err(format!("the skill `{}` is a single file; it has no files beside it", skill.name));
    }
    let relative = Path::new(file);
    if relative.as_os_str().is_empty() || !relative.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(format!("`{file}` is not a path inside the skill (relative, without `..`)"));
    }
    let names: Option<Vec<&str>> = relative.components().map(|c| c.as_os_str().to_str()).collect();
    let names = names.ok_or_else(|| format!("`{file}` is not UTF-8"))?;
    match skill.at.read(&names) {
        Ok(Some(text)) => Ok(text),
        Ok(None) => Err(format!("the skill `{}` has no file `{file}`", skill.name)),
        Err(why) => Err(format!("the skill `{}`'s file: {why}", skill.name)),
    }
}

#[cfg(test)]
#[path = "skill_tests.rs"]
mod tests;
