use super::*;
use agent_client_protocol::ErrorCode;
use agent_client_protocol::v1::schema::{
    BlobResourceContents, EmbeddedResource, ImageContent, McpServerStdio, ResourceLink, TextContent,
    TextResourceContents,
};
use serde_json::json;
use superpi_proto::ErrorObject;

#[test]
fn session_ids_round_trip_and_junk_is_not_found() {
    assert_eq!(session_id(17), SessionId::new("conv-17"));
    assert_eq!(conversation_id(&SessionId::new("conv-17")).unwrap(), 17);
    // `conv-01` and `conv-+1` were read as conversation 1 (found by the acp_request fuzz
    // target): only the id session_id writes names a conversation.
    for junk in ["17", "conv-", "conv-x", "conv--3", "conv-0", "acp_abc", "conv-01", "conv-+1", "conv- 1"] {
        let err = conversation_id(&SessionId::new(junk)).unwrap_err();
        assert_eq!(err.code, ErrorCode::from(-32002), "{junk}");
    }
}

#[test]
fn kernel_errors_become_acp_errors() {
    let s = SessionId::new("conv-3");
    let nf = kernel_error(ClientError::Kernel(ErrorObject::new(codes::NOT_FOUND, "no such conversation")), Some(&s));
    assert_eq!(nf, not_found(&s));
    let forbidden = kernel_error(ClientError::Kernel(ErrorObject::new(codes::FORBIDDEN, "above ceiling")), Some(&s));
    assert_eq!(
        forbidden,
        Error::new(ErrorCode::INVALID_PARAMS, "above ceiling").data(json!({"message": "above ceiling"}))
    );
    let closed = kernel_error(ClientError::Closed, Some(&s));
    assert_eq!(closed.code, ErrorCode::from(-32603));
}

#[test]
fn cwd_must_be_absolute() {
    assert_eq!(workspace(Path::new("/home/me/repo")).unwrap(), "/home/me/repo");
    assert_eq!(workspace(Path::new("repo")).unwrap_err().code, ErrorCode::from(-32602));
}

#[test]
fn harness_comes_from_meta() {
    assert_eq!(harness(None).unwrap(), "superpi-code");
    let meta = json!({"harness": "superpi-planner"});
    assert_eq!(harness(meta.as_object()).unwrap(), "superpi-planner");
    let meta = json!({"superpi": {"harness": "superpi-assistant"}});
    assert_eq!(harness(meta.as_object()).unwrap(), "superpi-assistant");
    let meta = json!({"other": 1});
    assert_eq!(harness(meta.as_object()).unwrap(), "superpi-code");
    let meta = json!({"harness": 3});
    assert_eq!(harness(meta.as_object()).unwrap_err().code, ErrorCode::from(-32602));
}

#[test]
fn mcp_servers_are_attached_ignored_or_refused_by_name() {
    assert!(mcp_servers(&[], EditorMcp::Refuse).unwrap().is_empty());
    let stdio = McpServerStdio::new("my files", "/bin/files")
        .args(vec!["-r".to_string()])
        .env(vec![agent_client_protocol::v1::schema::EnvVariable::new("K", "V")]);
    let files = [McpServer::Stdio(stdio)];
    assert!(mcp_servers(&files, EditorMcp::Ignore).unwrap().is_empty());
    let err = mcp_servers(&files, EditorMcp::Refuse).unwrap_err();
    assert_eq!(err.code, ErrorCode::from(-32602));
    assert!(err.data.unwrap().to_string().contains("my files"));
    let attached = mcp_servers(&files, EditorMcp::Attach).unwrap();
    assert_eq!(attached.len(), 1);
    assert_eq!((attached[0].name.as_str(), attached[0].command.as_str()), ("my-files", "/bin/files"));
    assert_eq!(attached[0].args, vec!["-r".to_string()]);
    assert_eq!(attached[0].env.get("K").map(String::as_str), Some("V"));
    use agent_client_protocol::v1::schema::{HttpHeader, McpServerHttp, McpServerSse};
    let http = McpServerHttp::new("docs", "https://mcp.example.com/mcp")
        .headers(vec![HttpHeader::new("Authorization", "Bearer t")]);
    let sse = McpServerSse::new("old", "http://127.0.0.1:9/sse");
    let remote = mcp_servers(&[McpServer::Http(http), McpServer::Sse(sse)], EditorMcp::Attach).unwrap();
    assert_eq!(remote[0].url.as_deref(), Some("https://mcp.example.com/mcp"));
    assert_eq!(remote[0].headers.get("Authorization").map(String::as_str), Some("Bearer t"));
    assert!(!remote[0].sse && remote[0].command.is_empty());
    assert_eq!((remote[1].url.as_deref(), remote[1].sse), (Some("http://127.0.0.1:9/sse"), true));
}

#[test]
fn prompt_content_maps_text_links_and_resources() {
    let blocks = vec![
        ContentBlock::Text(TextContent::new("fix it")),
        ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///ws/main.rs")),
        ContentBlock::Resource(EmbeddedResource::new(EmbeddedResourceResource::TextResourceContents(
            TextResourceContents::new("fn main() {}", "file:///ws/main.rs"),
        ))),
    ];
    assert_eq!(
        prompt(&blocks).unwrap(),
        vec![
            KBlock::text("fix it"),
            KBlock::text("[@main.rs](file:///ws/main.rs)"),
            KBlock::text("<context uri=\"file:///ws/main.rs\">\nfn main() {}\n</context>"),
        ]
    );
    let image = vec![ContentBlock::Image(ImageContent::new("AAAA", "image/png"))];
    assert_eq!(prompt(&image).unwrap(), vec![KBlock::image("image/png", "AAAA")]);
    let by_uri = vec![ContentBlock::Image(ImageContent::new("", "image/png").uri("file:///tmp/a.png".to_string()))];
    assert_eq!(prompt(&by_uri).unwrap_err().code, ErrorCode::from(-32602));
    let blob = vec![ContentBlock::Resource(EmbeddedResource::new(EmbeddedResourceResource::BlobResourceContents(
        BlobResourceContents::new("AAAA", "file:///x.bin"),
    )))];
    assert_eq!(prompt(&blob).unwrap_err().code, ErrorCode::from(-32602));
    assert_eq!(prompt(&[]).unwrap_err().code, ErrorCode::from(-32602));
}

#[test]
fn modes_stop_at_the_ceiling() {
    let state = modes("plan", "plan");
    assert_eq!(state.current_mode_id, SessionModeId::new("plan"));
    assert_eq!(state.available_modes.len(), 1);
    let state = modes("accept-edits", "auto");
    let ids: Vec<&str> = state.available_modes.iter().map(|m| &*m.id.0).collect();
    assert_eq!(ids, ["plan", "accept-edits", "auto"]);

    assert_eq!(mode(&SessionModeId::new("plan"), "accept-edits").unwrap(), "plan");
    assert_eq!(mode(&SessionModeId::new("auto"), "accept-edits").unwrap_err().code, ErrorCode::from(-32602));
    assert_eq!(mode(&SessionModeId::new("yolo"), "auto").unwrap_err().code, ErrorCode::from(-32602));
}

#[test]
fn mode_option_is_a_select_of_the_modes_up_to_the_ceiling() {
    let expected = SessionConfigOption::select(
        "mode",
        "Mode",
        "plan",
        SessionConfigSelectOptions::Ungrouped(vec![
            SessionConfigSelectOption::new("plan", "Plan").description(MODES[0].2),
            SessionConfigSelectOption::new("accept-edits", "Accept edits").description(MODES[1].2),
        ]),
    )
    .category(SessionConfigOptionCategory::Mode);
    assert_eq!(mode_option("plan", "accept-edits"), expected);
}

#[test]
fn effort_option_is_a_thought_level_select_of_the_models_levels() {
    let levels = [Effort::Low, Effort::Medium, Effort::High];
    let option = effort_option(None, &levels).unwrap();
    assert_eq!(&*option.id.0, "effort");
    assert_eq!(option.category, Some(SessionConfigOptionCategory::ThoughtLevel));
    let SessionConfigKind::Select(select) = &option.kind else { panic!("{option:?}") };
    assert_eq!(&*select.current_value.0, "default");
    let SessionConfigSelectOptions::Ungrouped(options) = &select.options else { panic!("{select:?}") };
    let ids: Vec<&str> = options.iter().map(|o| &*o.value.0).collect();
    assert_eq!(ids, ["default", "low", "medium", "high"]);

    // A level set under another model stays listed, so the select holds its current value.
    let option = effort_option(Some(Effort::Off), &levels).unwrap();
    let SessionConfigKind::Select(select) = &option.kind else { panic!("{option:?}") };
    assert_eq!(&*select.current_value.0, "off");
    let SessionConfigSelectOptions::Ungrouped(options) = &select.options else { panic!("{select:?}") };
    assert_eq!(options.iter().map(|o| &*o.value.0).collect::<Vec<_>>(), ["default", "off", "low", "medium", "high"]);

    assert_eq!(effort_option(Some(Effort::High), &[]), None, "a model without a thinking setting has no option");
    assert_eq!(effort_choice("default").unwrap(), None);
    assert_eq!(effort_choice("high").unwrap(), Some(Effort::High));
    assert_eq!(effort_choice("max").unwrap_err().code, ErrorCode::from(-32602));
}

#[test]
fn model_option_lists_the_kernels_models_and_always_the_current_one() {
    let models = vec![
        ModelInfo { id: "gpt-x".into(), provider: "openai".into(), default: true, efforts: vec![] },
        ModelInfo { id: "mock".into(), provider: "mock".into(), default: false, efforts: vec![] },
    ];
    let listed = SessionConfigOption::select(
        "model",
        "Model",
        "mock",
        SessionConfigSelectOptions::Ungrouped(vec![
            SessionConfigSelectOption::new("gpt-x", "gpt-x").description("openai (default)"),
            SessionConfigSelectOption::new("mock", "mock").description("mock"),
        ]),
    )
    .category(SessionConfigOptionCategory::Model);
    assert_eq!(model_option("mock", &models), listed);

    // A current model the kernel no longer offers still shows, first.
    let opt = model_option("old-model", &models[..1]);
    assert_eq!(
        opt,
        SessionConfigOption::select(
            "model",
            "Model",
            "old-model",
            SessionConfigSelectOptions::Ungrouped(vec![
                SessionConfigSelectOption::new("old-model", "old-model"),
                SessionConfigSelectOption::new("gpt-x", "gpt-x").description("openai (default)"),
            ])
        )
        .category(SessionConfigOptionCategory::Model)
    );
}

#[test]
fn session_info_uses_the_workspace_and_title() {
    let info = ConversationInfo {
        conversation_id: 4,
        harness: "superpi-code".into(),
        model: "mock".into(),
        mode: "plan".into(),
        max_mode: "auto".into(),
        effort: None,
        workspace: Some("/ws".into()),
        title: Some("hello".into()),
        parent_id: None,
        created_at_ms: 0,
        status: "idle".into(),
        head_seq: 9,
        created: false,
        rules_files: Vec::new(),
        cost_usd: None,
    };
    assert_eq!(session_info(&info), SessionInfo::new("conv-4", "/ws").title("hello".to_string()));
}

#[test]
fn slash_commands_are_recognised_only_whole() {
    assert_eq!(command(&[KBlock::text("/status")]), Some(Command::Status));
    assert_eq!(command(&[KBlock::text("  /mode plan ")]), Some(Command::Mode("plan".into())));
    assert_eq!(command(&[KBlock::text("/mode")]), None);
    assert_eq!(command(&[KBlock::text("/mode plan now")]), None);
    assert_eq!(command(&[KBlock::text("/compact")]), Some(Command::Compact));
    assert_eq!(command(&[KBlock::text("/compact now")]), None);
    assert_eq!(command(&[KBlock::text("/clear")]), Some(Command::Clear));
    assert_eq!(command(&[KBlock::text("/undo")]), Some(Command::Undo));
    assert_eq!(command(&[KBlock::text("/undo 3")]), None);
    assert_eq!(command(&[KBlock::text("/unknown")]), None);
    assert_eq!(command(&[KBlock::text("status")]), None);
    assert_eq!(command(&[KBlock::text("/status"), KBlock::text("more")]), None);
    let names: Vec<String> = commands().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["status", "mode", "compact", "clear", "undo"]);
}

#[test]
fn titles_come_from_the_first_prompt_line() {
    assert_eq!(title_from_prompt(&[KBlock::text("\n  Fix the parser\nplease")]), Some("Fix the parser".into()));
    assert_eq!(title_from_prompt(&[KBlock::text("@slow 5\nhello")]), Some("hello".into()));
    let long = "x".repeat(80);
    assert_eq!(title_from_prompt(&[KBlock::text(long)]).unwrap().chars().count(), 61);
    assert_eq!(title_from_prompt(&[KBlock::text("  ")]), None);
}
