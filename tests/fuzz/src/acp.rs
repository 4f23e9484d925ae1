//! `superpi acp`: a line read as the official SDK reads it (its transport's parser, then the
//! schema type of the method, as its typed handlers do), then superpi's request map.

use agent_client_protocol::v1::schema::{
    LoadSessionRequest, NewSessionRequest, PromptRequest, ResumeSessionRequest, SetSessionModeRequest,
};
use agent_client_protocol::{JsonRpcMessage, RawJsonRpcMessage, TransportFrame};
use serde_json::Value;
use superpi_acp::request::{self, EditorMcp};

pub fn request(data: &[u8]) {
    // The SDK's reader takes lines as strings: what is not UTF-8 never reaches it.
    let Ok(line) = std::str::from_utf8(data) else { return };
    let TransportFrame::Single(RawJsonRpcMessage::Request(req)) = TransportFrame::parse_json(line) else { return };
    let params = req.params.map_or(Value::Null, |p| p.into_value());
    let method = &*req.method;
    if let Some(req) = parse::<NewSessionRequest>(method, &params) {
        if let Ok(workspace) = request::workspace(&req.cwd) {
            assert!(std::path::Path::new(&workspace).is_absolute());
        }
        let refused = request::mcp_servers(&req.mcp_servers, EditorMcp::Refuse);
        assert_eq!(refused.is_ok(), req.mcp_servers.is_empty(), "editor MCP servers are refused by default");
        assert!(request::mcp_servers(&req.mcp_servers, EditorMcp::Ignore).is_ok());
        if let Ok(harness) = request::harness(req.meta.as_ref()) {
            assert!(!harness.trim().is_empty());
        }
    } else if let Some(req) = parse::<LoadSessionRequest>(method, &params) {
        session(&req.session_id);
        let _ = request::mcp_servers(&req.mcp_servers, EditorMcp::Refuse);
    } else if let Some(req) = parse::<ResumeSessionRequest>(method, &params) {
        session(&req.session_id);
    } else if let Some(req) = parse::<PromptRequest>(method, &params) {
        session(&req.session_id);
        if let Ok(content) = request::prompt(&req.prompt) {
            assert!(!content.is_empty());
            let _ = request::command(&content);
            let _ = request::title_from_prompt(&content);
        }
    } else if let Some(req) = parse::<SetSessionModeRequest>(method, &params) {
        session(&req.session_id);
        for (ceiling, _, _) in request::MODES {
            if let Ok(mode) = request::mode(&req.mode_id, ceiling) {
                let rank = |m: &str| request::MODES.iter().position(|(id, _, _)| *id == m);
                assert!(rank(&mode).is_some() && rank(&mode) <= rank(ceiling), "mode {mode} above {ceiling}");
            }
        }
    }
}

fn parse<T: JsonRpcMessage>(method: &str, params: &Value) -> Option<T> {
    if !T::matches_method(method) {
        return None;
    }
    T::parse_message(method, params).ok()
}

/// A session id that names a conversation is the one that conversation's session gets.
fn session(id: &agent_client_protocol::v1::schema::SessionId) {
    if let Ok(conversation) = request::conversation_id(id) {
        assert!(conversation > 0);
        assert_eq!(&request::session_id(conversation), id, "a session id does not name one conversation");
    }
}
