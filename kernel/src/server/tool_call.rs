//! `tool.call`: one tool call outside any turn, for the MCP server's tools. The same pipeline
//! as a turn's calls (policy, path locks, sandbox); nobody can be asked, so an askable call
//! runs only on the caller's consent (`consented`) and fails closed otherwise.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use superpi_proto::ErrorObject;
use superpi_proto::message::codes;
use superpi_proto::method::ToolCallParams;
use tokio_util::sync::CancellationToken;

use crate::kernel::Kernel;
use crate::server::peer::Peer;
use crate::turn::pipeline::{self, Caller, PlannedCall};
use superpi_mcp_client::Attached;

static DIRECT_CALLS: AtomicU64 = AtomicU64::new(1);

pub(crate) async fn call(kernel: &Arc<Kernel>, peer: &Peer, p: ToolCallParams) -> Result<Value, ErrorObject> {
    let harness = kernel.catalog.harness(p.harness.as_deref())?;
    let mode = kernel.catalog.mode_for(p.mode.as_deref(), harness, peer.remote)?;
    let harness_id = harness.id.clone();
    let workspace = match p.workspace {
        Some(w) => PathBuf::from(w),
        None => std::env::current_dir().map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))?,
    };
    if !workspace.is_absolute() || !workspace.is_dir() {
        return Err(ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("workspace {} is not an absolute directory", workspace.display()),
        ));
    }
    let workspace = workspace.canonicalize().unwrap_or(workspace);
    let mut mcp = Attached::default();
    let tool = match kernel.catalog.tool(&p.name).filter(|t| harness.offers(&p.name) && !t.turn_only) {
        Some(tool) => tool,
        None => {
            // Not built in: one of the user's MCP servers' tools, its server started for this
            // workspace (shared with the workspace's conversations).
            let mut notices = Vec::new();
            if harness.offers_live_tools() {
                let config_dir = &kernel.catalog.config_dir;
                (mcp, notices) = kernel.mcp.attach(config_dir, Default::default(), &workspace, None).await;
                mcp.retain(|def| harness.offers_live(def));
            }
            let Some(route) = mcp.get(&p.name) else {
                let why = notices.iter().map(|n| format!("; {n}")).collect::<String>();
                return Err(ErrorObject::new(codes::METHOD_NOT_FOUND, format!("unknown tool `{}`{why}", p.name)));
            };
            route.def.clone()
        }
    };
    let arguments = if p.arguments.is_null() { Value::Object(Default::default()) } else { p.arguments };
    check_arguments(&tool.input_schema, &arguments)
        .map_err(|why| ErrorObject::new(codes::INVALID_PARAMS, format!("invalid arguments for {}: {why}", p.name)))?;
    let mut policy = kernel
        .catalog
        .conversation_policy(&harness_id, mode.as_str(), Some(&workspace))
        .map_err(|e| ErrorObject::new(codes::INVALID_PARAMS, e))?;
    let n = DIRECT_CALLS.fetch_add(1, Ordering::Relaxed);
    let call = PlannedCall {
        call_id: format!("direct-{}-{n}", std::process::id()),
        name: p.name,
        arguments,
        workspace: Some(workspace),
    };
    let cancel = CancellationToken::new();
    let registered = p.call_id.map(|id| kernel.direct_calls.register(&peer.principal, id, cancel.clone()));
    // The same pipeline as a turn's call; nobody can be asked, so an askable call runs only
    // when the caller brings its person's consent.
    let caller = Caller::Direct { policy: &mut policy, mcp: &mcp, consented: p.consented };
    let end = pipeline::run(kernel, caller, &call, &cancel).await;
    drop(registered);
    serde_json::to_value(end.into_result()).map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))
}

/// `tool.cancel`: ends the caller's running direct call `call_id`.
pub(crate) fn cancel(kernel: &Kernel, peer: &Peer, call_id: &str) -> bool {
    kernel.direct_calls.cancel(&peer.principal, call_id)
}

/// A light check of arguments against a tool's schema: an object, with the required keys,
/// and the declared primitive types. The tool itself validates fully.
fn check_arguments(schema: &Value, arguments: &Value) -> Result<(), String> {
    let Some(args) = arguments.as_object() else { return Err("arguments must be an object".into()) };
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if !args.contains_key(key) {
                return Err(format!("missing required field `{key}`"));
            }
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (key, value) in args {
            let Some(expected) = props.get(key).and_then(|p| p.get("type")).and_then(Value::as_str) else { continue };
            let fits = match expected {
                "string" => value.is_string(),
                "integer" => value.is_i64() || value.is_u64(),
                "number" => value.is_number(),
                "boolean" => value.is_boolean(),
                "array" => value.is_array(),
                "object" => value.is_object(),
                _ => true,
            };
            if !fits {
                return Err(format!("field `{key}` must be of type {expected}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_checked_against_required_keys_and_types() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["path"]});
        assert!(check_arguments(&schema, &json!({"path": "a"})).is_ok());
        assert!(check_arguments(&schema, &json!({})).unwrap_err().contains("path"));
        assert!(check_arguments(&schema, &json!({"path": 1})).unwrap_err().contains("string"));
        assert!(check_arguments(&schema, &json!({"path": "a", "limit": "x"})).is_err());
        assert!(check_arguments(&schema, &json!([1])).is_err());
    }
}
