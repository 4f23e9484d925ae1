use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, EmbeddedResource, ResourceContents, Tool, ToolAnnotations};
use serde_json::json;
use superpi_proto::tool::Effect;

use super::*;

fn tool(name: &str, read_only: Option<bool>) -> Tool {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let mut tool = Tool::new(name.to_string(), "Says it back.", Arc::new(schema.as_object().cloned().unwrap()));
    if let Some(hint) = read_only {
        let mut annotations = ToolAnnotations::new();
        annotations.read_only_hint = Some(hint);
        tool = tool.with_annotations(annotations);
    }
    tool
}

#[test]
fn names_keep_to_what_every_vendor_accepts() {
    assert_eq!(tool_name("fix", "echo"), "mcp__fix__echo");
    assert_eq!(tool_name("fs", "read.file/v2"), "mcp__fs__read_file_v2");
    let long = tool_name("server", &"x".repeat(100));
    assert_eq!(long.len(), 64);
}

#[test]
fn read_only_annotations_make_reads_and_everything_else_is_a_command() {
    let echo = tool_def("fix", &tool("echo", Some(true)));
    assert_eq!(echo.name, "mcp__fix__echo");
    assert_eq!(echo.effects, vec![Effect::Read]);
    assert_eq!(echo.input_schema["properties"]["text"]["type"], "string");
    assert!(echo.description.starts_with("Says it back.") && echo.description.contains("`fix`"));
    assert_eq!(tool_def("fix", &tool("write", Some(false))).effects, vec![Effect::Exec]);
    assert_eq!(tool_def("fix", &tool("write", None)).effects, vec![Effect::Exec]);
}

#[test]
fn results_join_text_keep_structure_and_describe_the_rest() {
    let mut result = CallToolResult::success(vec![
        ContentBlock::text("one"),
        ContentBlock::image("aGVsbG8=", "image/png"),
        ContentBlock::Resource(EmbeddedResource::new(ResourceContents::TextResourceContents {
            uri: "file:///a".into(),
            mime_type: None,
            text: "body".into(),
            meta: None,
        })),
    ]);
    result.structured_content = Some(json!({"n": 1}));
    let out = call_result(result);
    assert_eq!(out.output, "one\n[image: image/png, 5 bytes]\n[resource file:///a]\nbody");
    assert_eq!(out.structured, Some(json!({"n": 1})));
    assert!(!out.is_error);
    // The image itself follows for a model that sees; the text above describes it.
    assert_eq!(
        out.images,
        vec![superpi_proto::tool::ToolImage {
            media_type: "image/png".into(),
            data: "aGVsbG8=".into(),
            described: true
        }]
    );
    let failed = call_result(CallToolResult::error(vec![ContentBlock::text("no")]));
    assert!(failed.is_error && failed.output == "no");
}
