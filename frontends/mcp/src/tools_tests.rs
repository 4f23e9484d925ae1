use super::*;
use superpi_proto::ErrorObject;

fn def(name: &str, effects: &[Effect]) -> ToolDef {
    ToolDef {
        name: name.to_string(),
        description: format!("the {name} tool"),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        output_schema: None,
        effects: effects.to_vec(),
        ..Default::default()
    }
}

#[test]
fn the_listing_tool_is_found_by_its_facts() {
    let builtin = superpi_sandbox::ToolRegistry::builtin().defs();
    assert_eq!(listing_tool(&builtin), Some(("ls".to_string(), "path".to_string())));
    let plain: Vec<ToolDef> = builtin.iter().map(|t| def(&t.name, &t.effects)).collect();
    assert_eq!(listing_tool(&plain), None, "names alone say nothing");
}

fn hints(a: &ToolAnnotations) -> (Option<bool>, Option<bool>, Option<bool>, Option<bool>) {
    (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
}

#[test]
fn annotations_follow_effects() {
    // (readOnly, destructive, idempotent, openWorld)
    assert_eq!(hints(&annotations(&def("read", &[Effect::Read]))), (Some(true), Some(false), Some(true), Some(false)));
    assert_eq!(
        hints(&annotations(&def("write", &[Effect::FsWrite]))),
        (Some(false), Some(true), Some(true), Some(false))
    );
    assert_eq!(
        hints(&annotations(&def("edit", &[Effect::Read, Effect::FsWrite]))),
        (Some(false), Some(true), Some(true), Some(false))
    );
    assert_eq!(hints(&annotations(&def("bash", &[Effect::Exec]))), (Some(false), Some(true), Some(false), Some(true)));
    assert_eq!(
        hints(&annotations(&def("fetch", &[Effect::NetRead]))),
        (Some(true), Some(false), Some(true), Some(true))
    );
    assert_eq!(annotations(&def("find_files", &[Effect::Read])).title.as_deref(), Some("Find files"));
}

#[test]
fn a_tool_def_becomes_an_mcp_tool_with_its_schemas() {
    let mut d = def("grep", &[Effect::Read]);
    d.output_schema = Some(json!({"type": "object", "properties": {"matches": {"type": "array"}}}));
    let tool = tool_from_def(&d);
    let wire = serde_json::to_value(&tool).unwrap();
    assert_eq!(
        wire,
        json!({
            "name": "grep",
            "description": "the grep tool",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            "outputSchema": {"type": "object", "properties": {"matches": {"type": "array"}}},
            "annotations": {
                "title": "Grep",
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false
            }
        })
    );
}

#[test]
fn an_output_schema_that_is_not_an_object_is_left_out_and_a_bad_input_schema_becomes_an_object() {
    let mut d = def("ls", &[Effect::Read]);
    d.output_schema = Some(json!({"type": "string"}));
    d.input_schema = json!(null);
    let tool = tool_from_def(&d);
    assert!(tool.output_schema.is_none());
    assert_eq!(Value::Object((*tool.input_schema).clone()), json!({"type": "object"}));
}

#[test]
fn harness_task_is_described_for_mcp() {
    let tool = harness_task_tool();
    assert_eq!(tool.name, HARNESS_TASK);
    assert_eq!(tool.input_schema.get("required"), Some(&json!(["prompt"])));
    let a = tool.annotations.unwrap();
    assert_eq!(hints(&a), (Some(false), Some(true), Some(false), Some(true)));
    assert!(tool.output_schema.is_some());
}

#[test]
fn harness_task_arguments_are_checked() {
    let args = |v: Value| HarnessTaskArgs::parse(v.as_object());
    assert_eq!(
        args(json!({"prompt": "hi", "harness": "superpi-planner"})).unwrap(),
        HarnessTaskArgs { prompt: "hi".into(), harness: Some("superpi-planner".into()), output_schema: None }
    );
    // `outputSchema` goes to the kernel as the submit's `output_schema`; it must be an object.
    let schema = json!({"type": "object"});
    let with_schema = args(json!({"prompt": "hi", "outputSchema": schema})).unwrap();
    assert_eq!(with_schema.submission(4).output_schema, Some(schema));
    assert_eq!(args(json!({"prompt": "x", "outputSchema": "s"})).unwrap_err().code, ErrorCode::INVALID_PARAMS);
    assert_eq!(args(json!({})).unwrap_err().code, ErrorCode::INVALID_PARAMS);
    assert_eq!(args(json!({"prompt": "  "})).unwrap_err().code, ErrorCode::INVALID_PARAMS);
    assert_eq!(args(json!({"prompt": "x", "bogus": 1})).unwrap_err().code, ErrorCode::INVALID_PARAMS);
    assert_eq!(HarnessTaskArgs::parse(None).unwrap_err().code, ErrorCode::INVALID_PARAMS);
}

#[test]
fn results_carry_text_and_structured_content() {
    let ok = call_result(KernelToolResult {
        output: json!("3 matches"),
        is_error: false,
        structured: Some(json!({"count": 3})),
        details: Some(json!({"spill": null})),
        images: Vec::new(),
    });
    assert_eq!(
        serde_json::to_value(&ok).unwrap(),
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "3 matches"}],
            "structuredContent": {"count": 3},
            "isError": false
        })
    );
    let failed = call_result(KernelToolResult {
        output: json!("blocked by policy: write outside the workspace"),
        is_error: true,
        structured: Some(json!(["not", "an", "object"])),
        details: None,
        images: Vec::new(),
    });
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(failed.structured_content, None);
    assert_eq!(failed.content[0].as_text().unwrap().text, "blocked by policy: write outside the workspace");
    let non_string = call_result(KernelToolResult {
        output: json!({"a": 1}),
        is_error: false,
        structured: None,
        details: None,
        images: Vec::new(),
    });
    assert_eq!(non_string.content[0].as_text().unwrap().text, "{\"a\":1}");
}

#[test]
fn a_read_image_is_image_content_after_the_text() {
    let answer = json!({"output": "pixel.png: an image (image/png, 70 bytes)", "is_error": false,
                        "images": [{"media_type": "image/png", "data": "iVBORw0KGgo="}]});
    let result = call_result(serde_json::from_value(answer).unwrap());
    assert_eq!(
        serde_json::to_value(&result).unwrap()["content"],
        json!([
            {"type": "text", "text": "pixel.png: an image (image/png, 70 bytes)"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        ])
    );
}

#[test]
fn kernel_errors_map_to_mcp_errors() {
    let kernel = |code, msg: &str| ClientError::Kernel(ErrorObject::new(code, msg));
    let e = kernel_error("nope", &kernel(codes::METHOD_NOT_FOUND, "unknown tool `nope`"));
    assert_eq!((e.code, e.message.as_ref()), (ErrorCode::INVALID_PARAMS, "unknown tool: nope"));
    let e = kernel_error("read", &kernel(codes::INVALID_PARAMS, "missing field `path`"));
    assert_eq!((e.code, e.message.as_ref()), (ErrorCode::INVALID_PARAMS, "missing field `path`"));
    let e = kernel_error("x", &kernel(codes::NOT_FOUND, "no conversation 9"));
    assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND);
    let e = kernel_error("x", &kernel(codes::INTERNAL_ERROR, "boom"));
    assert_eq!((e.code, e.data), (ErrorCode::INTERNAL_ERROR, Some(json!({"kernel_code": -32603}))));
    assert_eq!(kernel_error("x", &ClientError::Closed).code, ErrorCode::INTERNAL_ERROR);
    assert!(is_tool_level_refusal(&kernel(codes::FORBIDDEN, "mode above ceiling")));
    assert!(!is_tool_level_refusal(&kernel(codes::INVALID_PARAMS, "bad")));
}

#[test]
fn an_askable_refusal_is_told_from_one_that_stays() {
    let asked = json!({"output": "blocked: `touch a` is not in the allow list", "is_error": true,
        "details": {"blocked": {"rule": "unanswered", "risk": "medium"}}});
    assert_eq!(
        askable_refusal(&asked),
        Some(("`touch a` is not in the allow list".to_string(), Some("medium".to_string())))
    );
    let denied = json!({"output": "blocked: denied", "is_error": true, "details": {"blocked": {"rule": "deny_list"}}});
    assert_eq!(askable_refusal(&denied), None);
    let ran = json!({"output": "ok", "is_error": false});
    assert_eq!(askable_refusal(&ran), None);
    let mut declined = asked.clone();
    mark_declined(&mut declined);
    assert_eq!(declined["output"], "blocked: `touch a` is not in the allow list (the user declined when asked)");
}
