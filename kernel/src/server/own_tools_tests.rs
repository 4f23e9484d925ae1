//! The kernel's own tools are offered to every vendor's models: their schemas, as each request
//! builder translates them, must pass the rule-enforcing fakes' checks (Gemini's OpenAPI subset
//! above all), as the sandbox's tools do in providers/tests/schemas.rs.

use super::*;
use serde_json::Value;
use superpi_providers::testing::rules::{anthropic, gemini, openai};
use superpi_providers::{ModelRequest, ProviderKind, ProvidersConfig, ToolSpec, route};

#[test]
fn every_kernel_tool_passes_each_vendors_rules() {
    let tools: Vec<ToolSpec> = own_tools(&KernelSlot::default(), Path::new("/nonexistent"))
        .into_iter()
        .map(|(def, _)| ToolSpec {
            name: def.name,
            description: def.description,
            input_schema: def.input_schema,
            deferred: false,
        })
        .collect();
    assert!(tools.iter().any(|t| t.name == "subagent") && tools.iter().any(|t| t.name == "memory_write"));
    let mut config = ProvidersConfig::default();
    config.apply_env(|name| name.ends_with("_API_KEY").then(|| "k".to_string()));
    let request = ModelRequest { messages: vec![superpi_proto::Message::user_text("hi")], tools, ..Default::default() };
    for model in ["gpt-4o", "claude-sonnet-4-5", "gemini-2.5-flash"] {
        let route = route(model, &config).expect("a route");
        let (wire, check): (_, fn(&Value) -> _) = match route.kind {
            ProviderKind::Anthropic => {
                (superpi_providers::anthropic::build_request(&route, &request), anthropic::check)
            }
            ProviderKind::Gemini => (superpi_providers::gemini::build_request(&route, &request), gemini::check),
            _ => (superpi_providers::openai::build_request(&route, &request), openai::check),
        };
        let body: Value = serde_json::from_slice(&wire.body).expect("JSON");
        assert_eq!(check(&body), Ok(()), "{model}: {body:#}");
    }
}
