//! What the kernel's own block tools (`memory_tool`, `schedule_tool`) share: their facts'
//! common part, the reading of arguments and a successful result.

use serde_json::Value;
use superpi_proto::tool::{Capability, Effect, ToolCallResult, ToolDef, ToolUi};

/// A block tool's facts: offered to models only (`turn_only`: a call needs its conversation),
/// by the harnesses that take `capability`.
pub(crate) fn block_tool(
    capability: Capability,
    name: &str,
    description: &str,
    input_schema: Value,
    effects: Vec<Effect>,
    ui: ToolUi,
) -> ToolDef {
    ToolDef {
        name: name.into(),
        description: description.into(),
        input_schema,
        effects,
        ui,
        turn_only: true,
        capability: Some(capability),
        ..ToolDef::default()
    }
}

/// A call's arguments, or why they are not the tool's.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(arguments: &Value) -> Result<T, String> {
    serde_json::from_value(arguments.clone()).map_err(|e| format!("invalid arguments: {e}"))
}

/// A result the model reads (`output`) with its structured form.
pub(crate) fn ok(output: String, structured: Value) -> ToolCallResult {
    ToolCallResult { output, is_error: false, structured: Some(structured), details: None, images: Vec::new() }
}
