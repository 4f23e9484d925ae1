//! The built-in tools, each written out once: name, description, schemas, effects, path
//! arguments, how a user interface shows it, and its runner. Everything else reads these
//! facts through the registry.

use serde_json::{Value, json};
use superpi_proto::tool::{DiffArgs, PathAccess, PathArg, ToolKind, ToolUi};

use crate::registry::{EditorRead, Entry, Runner, ToolRegistry};
use crate::runner::{FileBody, files, search};
use crate::{Effect, ToolDef};

impl ToolRegistry {
    /// The built-in tools.
    pub fn builtin() -> Self {
        ToolRegistry::of(builtin())
    }
}

fn def(name: &str, description: &str, input: Value, output: Option<Value>, effects: &[Effect]) -> ToolDef {
    ToolDef {
        name: name.into(),
        description: description.into(),
        input_schema: input,
        output_schema: output,
        effects: effects.to_vec(),
        ..Default::default()
    }
}

/// The facts every built-in tool shares: it acts in the workspace, on these path arguments.
fn in_workspace(mut def: ToolDef, paths: &[(&str, PathAccess)]) -> ToolDef {
    def.workspace = true;
    def.paths = paths.iter().map(|(arg, access)| PathArg { arg: (*arg).into(), access: *access }).collect();
    def
}

fn ui(kind: ToolKind, title: &str) -> ToolUi {
    ToolUi { kind, title: Some(title.into()), ..Default::default() }
}

fn file_tool(def: ToolDef, body: FileBody) -> Entry {
    Entry { def, runner: Runner::File(body), editor_read: None }
}

fn builtin() -> Vec<Entry> {
    vec![
        Entry {
            def: in_workspace(
                def(
                    "read",
                    "Read a text file of the workspace (or a spilled tool output), with numbered lines. \
                     Use offset and limit to page through long files. An image file (PNG, JPEG, GIF, WebP; \
                     at most 5 MiB) is shown to you as an image. Other binary files are refused.",
                    json!({
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "File path, relative to the workspace or absolute"},
                            "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)"},
                            "limit": {"type": "integer", "minimum": 1, "description": "Most lines to read (default 2000)"}
                        },
                        "required": ["path"],
                        "additionalProperties": false
                    }),
                    Some(json!({
                        "type": "object",
                        "properties": {
                            "path": {"type": "string"},
                            "start_line": {"type": "integer"},
                            "end_line": {"type": "integer"},
                            "total_lines": {"type": "integer"},
                            "truncated": {"type": "boolean"},
                            "media_type": {"type": "string", "description": "An image file's format"},
                            "bytes": {"type": "integer", "description": "An image file's size"}
                        },
                        "required": ["path"]
                    })),
                    &[Effect::Read],
                ),
                &[("path", PathAccess::Read)],
            )
            .with_ui(ToolUi { line: Some("offset".into()), ..ui(ToolKind::Read, "Read {path}||Read file") }),
            runner: Runner::File(files::read),
            editor_read: Some(EditorRead {
                path: "path",
                offset: "offset",
                limit: "limit",
                render: files::format_read,
            }),
        },
        file_tool(
            in_workspace(
                def(
                    "write",
                    "Write a file in the workspace, replacing it if it exists. Parent directories are \
                     created. The write is atomic.",
                    json!({
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "File path, relative to the workspace or absolute"},
                            "content": {"type": "string", "description": "The whole new content"}
                        },
                        "required": ["path", "content"],
                        "additionalProperties": false
                    }),
                    Some(json!({
                        "type": "object",
                        "properties": {"path": {"type": "string"}, "bytes": {"type": "integer"}, "created": {"type": "boolean"}},
                        "required": ["path", "bytes", "created"]
                    })),
                    &[Effect::FsWrite],
                ),
                &[("path", PathAccess::Write)],
            )
            .edits()
            .with_ui(ToolUi {
                diff: Some(DiffArgs { path: "path".into(), old: None, new: "content".into() }),
                ..ui(ToolKind::Edit, "Write {path}||Write file")
            }),
            files::write,
        ),
        file_tool(
            in_workspace(
                def(
                    "edit",
                    "Replace exact text in a workspace file. old_string must match exactly once, unless \
                     replace_all is set. Include enough surrounding context to make it unique.",
                    json!({
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "File path, relative to the workspace or absolute"},
                            "old_string": {"type": "string", "description": "Exact text to replace"},
                            "new_string": {"type": "string", "description": "Replacement text"},
                            "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)"}
                        },
                        "required": ["path", "old_string", "new_string"],
                        "additionalProperties": false
                    }),
                    Some(json!({
                        "type": "object",
                        "properties": {"path": {"type": "string"}, "replacements": {"type": "integer"}},
                        "required": ["path", "replacements"]
                    })),
                    &[Effect::FsWrite],
                ),
                &[("path", PathAccess::Write)],
            )
            .edits()
            .with_ui(ToolUi {
                diff: Some(DiffArgs {
                    path: "path".into(),
                    old: Some("old_string".into()),
                    new: "new_string".into(),
                }),
                ..ui(ToolKind::Edit, "Edit {path}||Edit file")
            }),
            files::edit,
        ),
        Entry {
            def: in_workspace(
                def(
                    "bash",
                    "Run a shell command in the workspace, confined: it may write only in the workspace \
                     and $TMPDIR, and has no network unless the call sets network: true (which may need the user's consent). Output beyond the limit is saved to \
                     a file that the read tool can page through.",
                    json!({
                        "type": "object",
                        "properties": {
                            "command": {"type": "string", "description": "The command, run with bash -c"},
                            "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds before the command is killed (default 120)"},
                            "cwd": {"type": "string", "description": "Working directory inside the workspace (default: its root)"},
                            "network": {"type": "boolean", "description": "Set true only when the command needs the network, e.g. installing packages or fetching; without it the command runs offline"}
                        },
                        "required": ["command"],
                        "additionalProperties": false
                    }),
                    Some(json!({
                        "type": "object",
                        "properties": {
                            "exit_code": {"type": ["integer", "null"]},
                            "signal": {"type": ["integer", "null"]},
                            "timed_out": {"type": "boolean"},
                            "cancelled": {"type": "boolean"},
                            "total_bytes": {"type": "integer"},
                            "spill_path": {"type": ["string", "null"]}
                        },
                        "required": ["exit_code", "timed_out", "cancelled", "total_bytes"]
                    })),
                    &[Effect::Exec, Effect::FsWrite],
                ),
                &[("cwd", PathAccess::Cwd)],
            )
            .shell("command")
            .network_arg("network")
            .with_ui(ui(ToolKind::Execute, "Run `{command}`||Run a command")),
            runner: Runner::Shell,
            editor_read: None,
        },
        file_tool(
            in_workspace(
                def(
                    "grep",
                    "Search file contents with a regular expression, honouring .gitignore. Returns \
                     path:line:text lines.",
                    json!({
                        "type": "object",
                        "properties": {
                            "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax)"},
                            "path": {"type": "string", "description": "File or directory to search (default: the workspace)"},
                            "glob": {"type": "string", "description": "Only files matching this glob, e.g. *.rs"},
                            "ignore_case": {"type": "boolean"},
                            "literal": {"type": "boolean", "description": "Treat pattern as plain text"},
                            "limit": {"type": "integer", "minimum": 1, "description": "Most matches (default 100)"}
                        },
                        "required": ["pattern"],
                        "additionalProperties": false
                    }),
                    Some(json!({
                        "type": "object",
                        "properties": {
                            "matches": {"type": "array", "items": {
                                "type": "object",
                                "properties": {"path": {"type": "string"}, "line": {"type": "integer"}, "text": {"type": "string"}},
                                "required": ["path", "line", "text"]
                            }},
                            "truncated": {"type": "boolean"}
                        },
                        "required": ["matches", "truncated"]
                    })),
                    &[Effect::Read],
                ),
                &[("path", PathAccess::Read)],
            )
            .with_ui(ui(ToolKind::Search, "Search for `{pattern}`||Search")),
            search::grep,
        ),
        file_tool(
            in_workspace(
                def(
                    "find",
                    "Find files by glob pattern (e.g. **/*.rs), honouring .gitignore. Returns paths \
                     relative to the search directory.",
                    json!({
                        "type": "object",
                        "properties": {
                            "pattern": {"type": "string", "description": "Glob pattern"},
                            "path": {"type": "string", "description": "Directory to search (default: the workspace)"},
                            "limit": {"type": "integer", "minimum": 1, "description": "Most results (default 1000)"}
                        },
                        "required": ["pattern"],
                        "additionalProperties": false
                    }),
                    Some(json!({
                        "type": "object",
                        "properties": {"paths": {"type": "array", "items": {"type": "string"}}, "truncated": {"type": "boolean"}},
                        "required": ["paths", "truncated"]
                    })),
                    &[Effect::Read],
                ),
                &[("path", PathAccess::List)],
            )
            .with_ui(ui(ToolKind::Search, "Find `{pattern}`||Find files")),
            search::find,
        ),
        file_tool(
            in_workspace(
                def(
                    "ls",
                    "List a directory of the workspace, directories marked with a trailing /.",
                    json!({
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "Directory (default: the workspace)"},
                            "limit": {"type": "integer", "minimum": 1, "description": "Most entries (default 500)"}
                        },
                        "additionalProperties": false
                    }),
                    Some(json!({
                        "type": "object",
                        "properties": {"entries": {"type": "array", "items": {"type": "string"}}, "truncated": {"type": "boolean"}},
                        "required": ["entries", "truncated"]
                    })),
                    &[Effect::Read],
                ),
                &[("path", PathAccess::List)],
            )
            .with_ui(ui(ToolKind::Read, "List {path}||List .")),
            files::ls,
        ),
    ]
}

/// Builders for the facts above, so each tool reads as one expression.
trait Facts {
    fn edits(self) -> Self;
    fn shell(self, arg: &str) -> Self;
    fn network_arg(self, arg: &str) -> Self;
    fn with_ui(self, ui: ToolUi) -> Self;
}

impl Facts for ToolDef {
    fn edits(mut self) -> Self {
        self.edits = true;
        self
    }

    fn shell(mut self, arg: &str) -> Self {
        self.shell = Some(arg.into());
        self
    }

    fn network_arg(mut self, arg: &str) -> Self {
        self.network_arg = Some(arg.into());
        self
    }

    fn with_ui(mut self, ui: ToolUi) -> Self {
        self.ui = ui;
        self
    }
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;
