//! The rules of directories below the workspace, joined to the result of a turn's tool call
//! whose path arguments are under them (features/rules.rs reads them), once while the
//! conversation's context holds them: what it holds is read back from the context the first
//! time after the conversation is loaded or compacted.

use std::path::Path;
use std::sync::Arc;

use superpi_proto::tool::{ToolCallResult, ToolDef};

use crate::conversation::Conversation;
use crate::features::rules;
use crate::kernel::Kernel;
use crate::sync::lock;

/// `result` with the nested rules of the paths in `arguments` (a call of `tool` in
/// `workspace`) that `conv` has not been shown yet.
pub(crate) fn join(
    kernel: &Kernel,
    conv: &Arc<Conversation>,
    (tool, arguments): (&ToolDef, &serde_json::Value),
    workspace: Option<&Path>,
    mut result: ToolCallResult,
) -> ToolCallResult {
    let Some(workspace) = workspace else { return result };
    if tool.paths.is_empty() {
        return result;
    }
    let mut shown = lock(&conv.rules_shown);
    let shown = shown.get_or_insert_with(|| match crate::turn::context::derive(&*kernel.store, conv.id) {
        Ok(context) => rules::shown_in(&context.entries),
        Err(err) => {
            tracing::warn!(conversation = conv.id, "reading which rules its context holds: {err}");
            Default::default()
        }
    });
    let files: Vec<_> = tool
        .path_values(arguments)
        .into_iter()
        .filter_map(|(_, path)| path)
        .flat_map(|path| rules::nested(workspace, path, shown))
        .collect();
    if !files.is_empty() {
        result.output.push_str(&rules::nested_text(&files));
    }
    result
}
