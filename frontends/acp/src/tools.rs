//! How a superpi tool call looks in an editor: its ACP kind, a title, the locations it
//! touches and, for file changes, a diff.
//!
//! Pure functions of the tool's facts (its [`ToolDef`], as the kernel's `tool.list` gives
//! them) and its JSON arguments. No tool is known by name here: a tool without facts (one the
//! kernel no longer offers) shows as `other`, titled with its name.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::v1::schema::{Diff, ToolCallContent, ToolCallLocation, ToolKind};
use serde_json::Value;
use superpi_proto::ToolDef;
use superpi_proto::tool::{PathAccess, ToolKind as Kind};

/// The longest tool output shown in an editor's tool card; the model still gets all of it.
pub const MAX_SHOWN_OUTPUT: usize = 64 * 1024;

/// The facts of the tools a session's harness offers, by name.
#[derive(Debug, Clone, Default)]
pub struct ToolFacts(Arc<HashMap<String, ToolDef>>);

impl ToolFacts {
    pub fn new(defs: Vec<ToolDef>) -> Self {
        ToolFacts(Arc::new(defs.into_iter().map(|d| (d.name.clone(), d)).collect()))
    }

    pub fn get(&self, name: &str) -> Option<&ToolDef> {
        self.0.get(name)
    }
}

/// The ACP kind of a tool, which picks the editor's icon and treatment.
pub fn kind(def: Option<&ToolDef>) -> ToolKind {
    match def.map(|d| d.ui.kind).unwrap_or_default() {
        Kind::Read => ToolKind::Read,
        Kind::Edit => ToolKind::Edit,
        Kind::Delete => ToolKind::Delete,
        Kind::Move => ToolKind::Move,
        Kind::Search => ToolKind::Search,
        Kind::Execute => ToolKind::Execute,
        Kind::Think => ToolKind::Think,
        Kind::Fetch => ToolKind::Fetch,
        Kind::Other => ToolKind::Other,
    }
}

/// A one-line, human-readable title for a call.
pub fn title(name: &str, def: Option<&ToolDef>, args: &Value) -> String {
    match def {
        Some(def) => def.title(args),
        None => name.to_string(),
    }
}

/// Resolves a tool's path argument against the workspace (ACP wants absolute paths).
pub fn resolve(workspace: Option<&Path>, path: &str) -> PathBuf {
    let p = Path::new(path);
    match workspace {
        Some(root) if p.is_relative() => root.join(p),
        _ => p.to_path_buf(),
    }
}

/// The files a call touches (its path arguments, not a working directory), the first with
/// a line when the arguments say where.
pub fn locations(workspace: Option<&Path>, def: Option<&ToolDef>, args: &Value) -> Vec<ToolCallLocation> {
    let Some(def) = def else { return Vec::new() };
    let line =
        def.ui.line.as_ref().and_then(|key| args.get(key)).and_then(Value::as_u64).and_then(|l| u32::try_from(l).ok());
    def.path_values(args)
        .into_iter()
        .filter(|(access, _)| *access != PathAccess::Cwd)
        .filter_map(|(_, path)| path)
        .enumerate()
        .map(|(i, path)| ToolCallLocation::new(resolve(workspace, path)).line(if i == 0 { line } else { None }))
        .collect()
}

/// The diff a successful file change made, from its arguments as the tool's facts name them.
pub fn diffs(workspace: Option<&Path>, def: Option<&ToolDef>, args: &Value) -> Vec<ToolCallContent> {
    let Some(spec) = def.and_then(|d| d.ui.diff.as_ref()) else { return Vec::new() };
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let (Some(path), Some(new)) = (text(&spec.path), text(&spec.new)) else { return Vec::new() };
    let mut diff = Diff::new(resolve(workspace, path), new);
    if let Some(old) = &spec.old {
        match text(old) {
            Some(old) => diff = diff.old_text(old.to_string()),
            None => return Vec::new(),
        }
    }
    vec![ToolCallContent::Diff(diff)]
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
#[path = "tools_tests.rs"]
mod tests;
