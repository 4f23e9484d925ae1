//! Tools as the kernel offers them: name, schema, effects.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a tool may do. Permission policy decides from effects, and MCP annotations derive
/// from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    Read,
    FsWrite,
    Exec,
    NetRead,
    NetWrite,
    StateWrite,
}

/// A tool as offered to a model or an MCP client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    pub effects: Vec<Effect>,
}

impl ToolDef {
    /// Only reads: MCP readOnlyHint.
    pub fn is_read_only(&self) -> bool {
        self.effects.iter().all(|e| matches!(e, Effect::Read | Effect::NetRead))
    }

    /// May change or destroy what exists: MCP destructiveHint.
    pub fn is_destructive(&self) -> bool {
        self.effects.iter().any(|e| matches!(e, Effect::FsWrite | Effect::Exec | Effect::StateWrite | Effect::NetWrite))
    }

    /// Reaches beyond the workspace: MCP openWorldHint.
    pub fn is_open_world(&self) -> bool {
        self.effects.iter().any(|e| matches!(e, Effect::NetRead | Effect::NetWrite | Effect::Exec))
    }
}
