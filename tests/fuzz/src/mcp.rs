//! `superpi mcp`: a line read by its stdio transport (rmcp's message types), then what the
//! handler does with the requests it reads itself (tool arguments, prompt names, resource
//! URIs).

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, ServerJsonRpcMessage};
use serde_json::Value;
use superpi_mcp::catalog;
use superpi_mcp::server::{Verdict, classify_line};
use superpi_mcp::tools::{HARNESS_TASK, HarnessTaskArgs};
use superpi_policy::Harnesses;

pub fn request(data: &[u8]) {
    match classify_line(data) {
        Verdict::Message(message) => handle(*message),
        Verdict::Reply(reply) => check_reply(&reply),
        Verdict::Ignore => {}
    }
}

/// An answer to a line that is no message is one JSON-RPC error object.
fn check_reply(reply: &ServerJsonRpcMessage) {
    let JsonRpcMessage::Error(_) = reply else { panic!("a bad line was answered with {reply:?}") };
    let json = serde_json::to_value(reply).unwrap_or(Value::Null);
    assert_eq!(json.get("jsonrpc"), Some(&Value::from("2.0")));
    let code = json.pointer("/error/code").and_then(Value::as_i64);
    assert!(matches!(code, Some(-32700 | -32600 | -32602)), "unexpected error {json}");
}

fn handle(message: ClientJsonRpcMessage) {
    let JsonRpcMessage::Request(req) = message else { return };
    match req.request {
        ClientRequest::CallToolRequest(call) if call.params.name == HARNESS_TASK => {
            if let Ok(args) = HarnessTaskArgs::parse(call.params.arguments.as_ref()) {
                assert!(!args.prompt.trim().is_empty());
            }
        }
        ClientRequest::GetPromptRequest(get) => {
            let harnesses = Harnesses::builtin(&superpi_sandbox::ToolRegistry::builtin().defs()).infos();
            let _ = catalog::get_prompt(&get.params.name, get.params.arguments.as_ref(), &harnesses);
        }
        ClientRequest::ReadResourceRequest(read) => {
            if let Some((id, after)) = catalog::parse_transcript_uri(&read.params.uri) {
                let uri =
                    after.map_or_else(|| catalog::transcript_uri(id), |seq| catalog::transcript_after_uri(id, seq));
                assert_eq!(uri, read.params.uri, "two URIs name one transcript");
            }
        }
        _ => {}
    }
}
