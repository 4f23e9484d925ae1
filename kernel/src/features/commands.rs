//! User-defined commands: markdown files in `CONFIG_DIR/commands/` and the workspace's
//! `.superpi/commands/` (a workspace's file overrides the user's of the same name), each a
//! prompt the user calls as `/NAME ARGS`. The kernel expands them at `session.submit`, so
//! every frontend that takes prompts gets them; `command.list` lists them (ACP announces
//! them as `available_commands_update`).
//!
//! A file is `NAME.md`: optional front matter between `---` lines (`description`,
//! `argument-hint`; other keys are ignored, as other agents' command files have more), then
//! the prompt. `$ARGUMENTS` in the prompt becomes what follows the name, `$1` to `$9` its
//! whitespace-separated words; a prompt naming neither gets the arguments appended. Like
//! `AGENTS.md`, the files are configuration the kernel reads itself: regular files only (a
//! symlink is skipped, so a command cannot pull another file into a prompt), each at most
//! [`MAX_COMMAND_BYTES`].

use std::collections::BTreeMap;
use std::path::Path;

use superpi_proto::ContentBlock;
use superpi_proto::method::CommandInfo;

/// A command file longer than this is skipped.
pub(crate) const MAX_COMMAND_BYTES: u64 = 64 * 1024;

/// The directory of command files, in the config dir and in a workspace's `.superpi`.
const COMMANDS_DIR: &str = "commands";

/// A command as read from its file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UserCommand {
    pub info: CommandInfo,
    /// The prompt, front matter removed.
    pub body: String,
}

/// The commands of the config dir and of `workspace`, by name (a workspace's overriding).
pub(crate) fn load(config_dir: &Path, workspace: Option<&Path>) -> BTreeMap<String, UserCommand> {
    let mut commands = BTreeMap::new();
    read_dir(&config_dir.join(COMMANDS_DIR), "config", &mut commands);
    if let Some(workspace) = workspace {
        let dot = workspace.join(".superpi");
        // Neither directory may be a link out of the workspace.
        if is_real_dir(&dot) && is_real_dir(&dot.join(COMMANDS_DIR)) {
            read_dir(&dot.join(COMMANDS_DIR), "workspace", &mut commands);
        }
    }
    commands
}

fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_dir())
}

fn read_dir(dir: &Path, source: &str, into: &mut BTreeMap<String, UserCommand>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".md")) else {
            continue;
        };
        if !valid_name(name) {
            tracing::warn!(path = %path.display(), "a command file's name is not a command name: skipped");
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if !meta.file_type().is_file() || meta.len() > MAX_COMMAND_BYTES {
            tracing::warn!(path = %path.display(), "a command file that is not a regular file of at most 64 KiB: skipped");
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                into.insert(name.to_string(), parse(name, source, &text));
            }
            Err(err) => tracing::warn!(path = %path.display(), %err, "a command file could not be read: skipped"),
        }
    }
}

/// A name a prompt can call: letters, digits, `-`, `_`, `.` and `:`, starting with a letter or digit.
fn valid_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// A command file's front matter and prompt.
pub(crate) fn parse(name: &str, source: &str, text: &str) -> UserCommand {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (front, body) = split_front_matter(text);
    let mut fields = BTreeMap::new();
    for line in front.lines() {
        if let Some((key, value)) = line.split_once(':') {
            fields.insert(key.trim().to_string(), unquote(value.trim()).to_string());
        }
    }
    let body = body.trim().to_string();
    let description = fields
        .remove("description")
        .filter(|d| !d.is_empty())
        .or_else(|| body.lines().map(str::trim).find(|l| !l.is_empty()).map(|l| l.chars().take(80).collect()))
        .unwrap_or_else(|| format!("/{name}"));
    let argument_hint = fields.remove("argument-hint").filter(|h| !h.is_empty());
    UserCommand {
        info: CommandInfo { name: name.to_string(), description, argument_hint, source: source.into() },
        body,
    }
}

/// The front matter (between a first line `---` and the next `---` line) and the rest; no
/// front matter when the file does not open with one.
fn split_front_matter(text: &str) -> (&str, &str) {
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return ("", text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (&rest[..offset], &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    ("", text)
}

/// A front matter value without the quotes YAML allows around it.
fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|v| v.strip_suffix(quote)) {
            return inner;
        }
    }
    value
}

/// A command's prompt with its arguments: `$ARGUMENTS` all of them, `$1`..`$9` each word
/// (empty when missing); appended after a blank line when the prompt names neither. One pass,
/// so arguments holding `$1` stay as they are.
pub(crate) fn expand(body: &str, arguments: &str) -> String {
    let arguments = arguments.trim();
    let words: Vec<&str> = arguments.split_whitespace().collect();
    let mut out = String::with_capacity(body.len() + arguments.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(arguments);
            used = true;
            rest = tail;
        } else if let Some(digit) = after.chars().next().and_then(|c| c.to_digit(10)).filter(|d| *d >= 1) {
            out.push_str(words.get(digit as usize - 1).copied().unwrap_or(""));
            used = true;
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !used && !arguments.is_empty() {
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(arguments);
    }
    out
}

/// The command a prompt calls, if any: its first block is text `/NAME ARGS` naming one of
/// `commands`. Unknown names stay as they are (the model reads them).
pub(crate) fn called<'a>(
    commands: &'a BTreeMap<String, UserCommand>,
    content: &[ContentBlock],
) -> Option<(&'a UserCommand, String)> {
    let Some(ContentBlock::Text { text }) = content.first() else { return None };
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, arguments) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    commands.get(name).map(|command| (command, arguments.to_string()))
}

/// Expands a prompt that calls a user-defined command (read from the config dir and
/// `workspace` only when its first text opens with `/`). True when it did.
pub(crate) fn expand_called(config_dir: &Path, workspace: Option<&str>, content: &mut [ContentBlock]) -> bool {
    let calls = matches!(content.first(), Some(ContentBlock::Text { text }) if text.trim_start().starts_with('/'));
    calls && expand_prompt(&load(config_dir, workspace.map(Path::new)), content)
}

/// Expands a prompt that calls a command in place: its first text block becomes the
/// command's prompt with the arguments; other blocks (images) stay. True when it did.
pub(crate) fn expand_prompt(commands: &BTreeMap<String, UserCommand>, content: &mut [ContentBlock]) -> bool {
    let Some((command, arguments)) = called(commands, content) else { return false };
    let expanded = expand(&command.body, &arguments);
    content[0] = ContentBlock::text(expanded);
    true
}

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;
