use super::*;
use superpi_proto::method::{ConversationInfo, HistoryResult};
use superpi_proto::{EntryKind, Message};

fn harness(id: &str, name: &str) -> HarnessInfo {
    HarnessInfo {
        id: id.into(),
        name: name.into(),
        description: format!("{name} does things"),
        default_mode: "accept-edits".into(),
        max_mode: "auto".into(),
        tools: vec!["read".into()],
        workspace: "repo".into(),
        backend: None,
        no_effort: false,
        capabilities: Vec::new(),
    }
}

fn harnesses() -> Vec<HarnessInfo> {
    vec![harness("superpi-code", "Code"), harness("superpi-planner", "Planner")]
}

#[test]
fn one_prompt_per_harness_plus_the_planner_alias() {
    let prompts = prompts(&harnesses());
    let wire = serde_json::to_value(&prompts).unwrap();
    assert_eq!(
        wire,
        json!([
            {"name": "superpi-code", "title": "Code", "description": "Code does things",
             "arguments": [{"name": "goal", "description": "What the harness should achieve.", "required": true}]},
            {"name": "superpi-planner", "title": "Planner", "description": "Planner does things",
             "arguments": [{"name": "goal", "description": "What the harness should achieve.", "required": true}]},
            {"name": "plan_architecture", "title": "Planner", "description": "Alias of superpi-planner: Planner does things",
             "arguments": [{"name": "goal", "description": "What the harness should achieve.", "required": true}]}
        ])
    );
    // Without the planner, no alias.
    assert_eq!(super::prompts(&[harness("superpi-code", "Code")]).len(), 1);
}

#[test]
fn get_prompt_names_the_harness_and_the_goal() {
    let args = json!({"goal": "split the parser"});
    let result = get_prompt("plan_architecture", args.as_object(), &harnesses()).unwrap();
    assert_eq!(result.description.as_deref(), Some("Planner: Planner does things"));
    assert_eq!(result.messages.len(), 1);
    let text = serde_json::to_value(&result.messages[0]).unwrap();
    assert_eq!(text["role"], "user");
    let body = text["content"]["text"].as_str().unwrap();
    assert!(body.contains("harness \"superpi-planner\""), "{body}");
    assert!(body.ends_with("Goal: split the parser"), "{body}");

    assert_eq!(
        get_prompt("nope", args.as_object(), &harnesses()).unwrap_err().code,
        rmcp::model::ErrorCode::INVALID_PARAMS
    );
    let empty = json!({"goal": " "});
    assert_eq!(
        get_prompt("superpi-code", empty.as_object(), &harnesses()).unwrap_err().code,
        rmcp::model::ErrorCode::INVALID_PARAMS
    );
    assert!(get_prompt("superpi-code", None, &harnesses()).is_err());
}

#[test]
fn transcript_uris_round_trip_and_reject_the_rest() {
    assert_eq!(transcript_uri(42), "superpi://conversation/42/transcript");
    assert_eq!(parse_transcript_uri("superpi://conversation/42/transcript"), Some((42, None)));
    assert_eq!(transcript_after_uri(42, 7), "superpi://conversation/42/transcript?after_seq=7");
    assert_eq!(parse_transcript_uri(&transcript_after_uri(42, 7)), Some((42, Some(7))));
    for bad in [
        "superpi://conversation/42/transcript?after_seq=",
        "superpi://conversation/42/transcript?after_seq=-1",
        "superpi://conversation/42/transcript?other=1",
        "superpi://conversation/42?after_seq=1/transcript",
        "superpi://conversation//transcript",
        "superpi://conversation/-1/transcript",
        "superpi://conversation/4x/transcript",
        "superpi://conversation/42",
        "superpi://conversation/99999999999999999999/transcript",
        "file:///etc/passwd",
    ] {
        assert_eq!(parse_transcript_uri(bad), None, "{bad}");
    }
}

#[test]
fn resources_list_the_workspace_and_the_started_conversations() {
    let list = resources(&[(3, "superpi-code".into())]);
    let uris: Vec<&str> = list.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, vec![CONTEXT_URI, TOOLS_URI, "superpi://conversation/3/transcript"]);
    assert_eq!(list[2].mime_type.as_deref(), Some(JSON_LINES));
    let templates = resource_templates();
    assert_eq!(templates[0].uri_template, TRANSCRIPT_TEMPLATE);
}

#[test]
fn a_transcript_is_one_json_line_per_entry() {
    let history = HistoryResult {
        conversation: ConversationInfo {
            conversation_id: 3,
            harness: "superpi-code".into(),
            model: "mock".into(),
            mode: "accept-edits".into(),
            max_mode: "accept-edits".into(),
            effort: None,
            workspace: None,
            title: None,
            parent_id: None,
            created_at_ms: 1,
            status: "idle".into(),
            head_seq: 5,
            created: false,
            rules_files: Vec::new(),
            cost_usd: None,
        },
        more: false,
        last_compaction: None,
        last_plan: None,
        entries: vec![
            Entry {
                seq: 1,
                kind: EntryKind::User,
                turn_id: Some(1),
                message: Message::user_text("hi"),
                created_at_ms: 10,
            },
            Entry {
                seq: 4,
                kind: EntryKind::Assistant,
                turn_id: Some(1),
                message: Message {
                    role: superpi_proto::Role::Assistant,
                    content: vec![superpi_proto::ContentBlock::text("hello")],
                    usage: None,
                    stop_reason: None,
                },
                created_at_ms: 11,
            },
        ],
    };
    let text: String = history.entries.iter().map(|e| transcript_line(e) + "\n").collect();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        lines,
        vec![
            json!({"seq": 1, "kind": "user", "turn_id": 1, "role": "user",
                   "content": [{"type": "text", "text": "hi"}], "created_at_ms": 10}),
            json!({"seq": 4, "kind": "assistant", "turn_id": 1, "role": "assistant",
                   "content": [{"type": "text", "text": "hello"}], "created_at_ms": 11}),
        ]
    );
    assert!(text.ends_with('\n'));
}

#[test]
fn the_context_document_names_workspace_and_harnesses() {
    let doc = context_document("/w", None, &harnesses(), Some("a.txt\nsrc/"));
    assert_eq!(doc["workspace"], "/w");
    assert_eq!(doc["default_harness"], Value::Null);
    assert_eq!(doc["harnesses"][1]["id"], "superpi-planner");
    assert_eq!(doc["entries"], "a.txt\nsrc/");
}
