//! The JSON-Schema translation of each vendor: any tool schema (MCP servers publish whatever
//! their libraries emit) goes into a real request body, which must keep that vendor's rules as
//! superpi-providers' fakes enforce them (`testing::rules`).

use serde_json::Value;
use superpi_proto::Message;
use superpi_providers::router::{Auth, Route};
use superpi_providers::testing::rules;
use superpi_providers::{ModelRequest, ProviderKind, ToolSpec, anthropic, gemini, openai};

pub fn openai(data: &[u8]) {
    let Some((route, request)) = request(ProviderKind::Openai, "gpt-4o", data) else { return };
    check("openai", rules::openai::check(&body(&openai::build_request(&route, &request).body)));
}

pub fn anthropic(data: &[u8]) {
    let Some((route, request)) = request(ProviderKind::Anthropic, "claude-sonnet-4-5", data) else { return };
    check("anthropic", rules::anthropic::check(&body(&anthropic::build_request(&route, &request).body)));
}

pub fn gemini(data: &[u8]) {
    let Some((route, request)) = request(ProviderKind::Gemini, "gemini-2.5-flash", data) else { return };
    check("gemini", rules::gemini::check(&body(&gemini::build_request(&route, &request).body)));
}

/// A request of one user message and one tool whose schema is the input (when it is JSON).
fn request(kind: ProviderKind, model: &str, data: &[u8]) -> Option<(Route, ModelRequest)> {
    let schema: Value = serde_json::from_slice(data).ok()?;
    let route = Route {
        kind,
        name: model.to_string(),
        model: model.to_string(),
        base_url: "http://127.0.0.1:9".to_string(),
        auth: Auth::None,
        thinking_budget: None,
        reasoning_effort: None,
        reasoning: false,
        responses: false,
        tool_search: false,
    };
    let request = ModelRequest {
        model: model.to_string(),
        system: Some("fuzz".to_string()),
        messages: vec![Message::user_text("call the tool")],
        tools: vec![ToolSpec {
            name: "probe_tool".into(),
            description: "a tool".into(),
            input_schema: schema,
            deferred: false,
        }],
        max_tokens: Some(64),
        effort: None,
        output_schema: None,
    };
    Some((route, request))
}

fn body(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("a request body that is not JSON: {e}"))
}

fn check(vendor: &str, verdict: Result<(), rules::Violation>) {
    if let Err(violation) = verdict {
        panic!("{vendor} would refuse the request: {}", violation.body());
    }
}
