//! How a superpi tool call looks in an editor: its ACP kind, a title, the locations it
//! touches and, for file changes, a diff.
//!
//! Pure functions of the tool's name and JSON arguments. The argument names of the built-in
//! tools are read tolerantly (`path` or `file_path`, `oldText` or `old_string`, ...), so a
//! rename in a tool's schema degrades the display, never the call.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{Diff, ToolCallContent, ToolCallLocation, ToolKind};
use serde_json::Value;

/// The longest tool output shown in an editor's tool card; the model still gets all of it.
pub const MAX_SHOWN_OUTPUT: usize = 64 * 1024;

/// The ACP kind of a tool, which picks the editor's icon and treatment.
pub fn kind(name: &str) -> ToolKind {
    match name {
        "read" | "ls" => ToolKind::Read,
        "write" | "edit" => ToolKind::Edit,
        "bash" => ToolKind::Execute,
        "grep" | "find" | "web_search" => ToolKind::Search,
        "rm" | "delete" => ToolKind::Delete,
        "mv" | "move" | "rename" => ToolKind::Move,
        "web_fetch" | "fetch" => ToolKind::Fetch,
        "think" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

fn str_arg<'a>(args: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| args.get(*k).and_then(Value::as_str))
}

fn path_arg(args: &Value) -> Option<&str> {
    str_arg(args, &["path", "file_path", "filePath"])
}

/// A one-line, human-readable title for a call.
pub fn title(name: &str, args: &Value) -> String {
    let path = path_arg(args);
    match name {
        "read" => format!("Read {}", path.unwrap_or("file")),
        "write" => format!("Write {}", path.unwrap_or("file")),
        "edit" => format!("Edit {}", path.unwrap_or("file")),
        "ls" => format!("List {}", path.unwrap_or(".")),
        "bash" => match str_arg(args, &["command", "cmd"]) {
            Some(cmd) => format!("Run `{}`", first_line(cmd, 120)),
            None => "Run a command".to_string(),
        },
        "grep" => match str_arg(args, &["pattern", "regex", "query"]) {
            Some(p) => format!("Search for `{}`", first_line(p, 80)),
            None => "Search".to_string(),
        },
        "find" => match str_arg(args, &["pattern", "glob", "name"]) {
            Some(p) => format!("Find `{}`", first_line(p, 80)),
            None => "Find files".to_string(),
        },
        other => other.to_string(),
    }
}

fn first_line(s: &str, max_chars: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(max_chars).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// Resolves a tool's path argument against the workspace (ACP wants absolute paths).
pub fn resolve(workspace: Option<&Path>, path: &str) -> PathBuf {
    let p = Path::new(path);
    match workspace {
        Some(root) if p.is_relative() => root.join(p),
        _ => p.to_path_buf(),
    }
}

/// The files a call touches, with a line when the arguments say where.
pub fn locations(workspace: Option<&Path>, args: &Value) -> Vec<ToolCallLocation> {
    let Some(path) = path_arg(args) else { return Vec::new() };
    let line =
        args.get("offset").or_else(|| args.get("line")).and_then(Value::as_u64).and_then(|l| u32::try_from(l).ok());
    vec![ToolCallLocation::new(resolve(workspace, path)).line(line)]
}

/// The diff a successful write or edit made, from its arguments.
pub fn diffs(workspace: Option<&Path>, name: &str, args: &Value) -> Vec<ToolCallContent> {
    let Some(path) = path_arg(args) else { return Vec::new() };
    let path = resolve(workspace, path);
    match name {
        "write" => match str_arg(args, &["content", "text"]) {
            Some(content) => vec![ToolCallContent::Diff(Diff::new(path, content))],
            None => Vec::new(),
        },
        "edit" => {
            let one = |e: &Value| {
                let old = str_arg(e, &["oldText", "old_string", "old_text", "old"])?;
                let new = str_arg(e, &["newText", "new_string", "new_text", "new"])?;
                Some(ToolCallContent::Diff(Diff::new(path.clone(), new).old_text(old.to_string())))
            };
            match args.get("edits").and_then(Value::as_array) {
                Some(edits) => edits.iter().filter_map(one).collect(),
                None => one(args).into_iter().collect(),
            }
        }
        _ => Vec::new(),
    }
}

/// A tool's output as text for the editor, cut to [`MAX_SHOWN_OUTPUT`] bytes.
pub fn output_text(output: &Value) -> String {
    let text = match output {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    truncate(text, MAX_SHOWN_OUTPUT)
}

/// Cuts a string to at most `max` bytes on a character boundary, saying so.
pub fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n… (output cut for display)");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_follow_the_tool() {
        assert_eq!(kind("read"), ToolKind::Read);
        assert_eq!(kind("edit"), ToolKind::Edit);
        assert_eq!(kind("write"), ToolKind::Edit);
        assert_eq!(kind("bash"), ToolKind::Execute);
        assert_eq!(kind("grep"), ToolKind::Search);
        assert_eq!(kind("find"), ToolKind::Search);
        assert_eq!(kind("ls"), ToolKind::Read);
        assert_eq!(kind("web_fetch"), ToolKind::Fetch);
        assert_eq!(kind("mcp__x__y"), ToolKind::Other);
    }

    #[test]
    fn titles_and_locations() {
        let ws = Path::new("/ws");
        assert_eq!(title("bash", &json!({"command": "ls -la\necho hi"})), "Run `ls -la…`");
        assert_eq!(title("read", &json!({"path": "src/a.rs"})), "Read src/a.rs");
        assert_eq!(
            locations(Some(ws), &json!({"path": "src/a.rs", "offset": 10})),
            vec![ToolCallLocation::new("/ws/src/a.rs").line(10)]
        );
        assert_eq!(locations(Some(ws), &json!({"path": "/etc/x"})), vec![ToolCallLocation::new("/etc/x")]);
        assert!(locations(Some(ws), &json!({"command": "true"})).is_empty());
    }

    #[test]
    fn diffs_for_write_and_edit() {
        let ws = Path::new("/ws");
        assert_eq!(
            diffs(Some(ws), "write", &json!({"path": "a.txt", "content": "hi\n"})),
            vec![ToolCallContent::Diff(Diff::new("/ws/a.txt", "hi\n"))]
        );
        assert_eq!(
            diffs(Some(ws), "edit", &json!({"path": "a.txt", "old_string": "a", "new_string": "b"})),
            vec![ToolCallContent::Diff(Diff::new("/ws/a.txt", "b").old_text("a".to_string()))]
        );
        assert_eq!(
            diffs(Some(ws), "edit", &json!({"path": "a.txt", "edits": [{"oldText": "1", "newText": "2"}]})),
            vec![ToolCallContent::Diff(Diff::new("/ws/a.txt", "2").old_text("1".to_string()))]
        );
        assert!(diffs(Some(ws), "read", &json!({"path": "a.txt"})).is_empty());
    }

    #[test]
    fn truncation_keeps_char_boundaries() {
        let s = truncate("ééé".to_string(), 3);
        assert!(s.starts_with('é'));
        assert!(s.ends_with("(output cut for display)"));
    }
}
