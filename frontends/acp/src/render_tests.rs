use super::*;
use agent_client_protocol::v1::schema::{Diff, ToolCallLocation, ToolKind};
use serde_json::json;
use superpi_proto::event::PermissionRequestFields;
use superpi_proto::{PlanEntry as KPlanEntry, Usage};

fn renderer() -> Renderer {
    let mut r = Renderer::new(RenderOptions {
        workspace: Some(PathBuf::from("/ws")),
        context_window: 1000,
        notices: false,
        compaction: false,
        editor_reads: None,
        elicits: false,
        opens_urls: false,
        tools: crate::tools::ToolFacts::new(superpi_sandbox::ToolRegistry::builtin().defs()),
        artifacts: Some(PathBuf::from("/data/artifacts")),
    });
    assert_eq!(r.render(&Event::turn_started(C, 3)), vec![]);
    r
}

fn msg(s: &str) -> Out {
    Out::Update(SessionUpdate::AgentMessageChunk(chunk(s)))
}

fn thought(s: &str) -> Out {
    Out::Update(SessionUpdate::AgentThoughtChunk(chunk(s)))
}

fn update(id: &str, fields: ToolCallUpdateFields) -> Out {
    Out::Update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_string(), fields)))
}

const C: i64 = 7;
const T: Option<i64> = Some(3);

#[test]
fn turn_started_resets_and_says_nothing() {
    let mut r = renderer();
    assert_eq!(r.render(&Event::turn_started(C, 3)), vec![]);
}

#[test]
fn text_delta_is_an_agent_message_chunk() {
    let mut r = renderer();
    assert_eq!(r.render(&Event::text_delta(C, T, 0, "Hel")), vec![msg("Hel")]);
    assert_eq!(r.render(&Event::text_delta(C, T, 0, "")), vec![]);
}

#[test]
fn thinking_delta_is_an_agent_thought_chunk() {
    let mut r = renderer();
    assert_eq!(r.render(&Event::thinking_delta(C, T, 0, "hmm")), vec![thought("hmm")]);
}

#[test]
fn toolcall_delta_announces_a_pending_call_once() {
    let mut r = renderer();
    let first = Event::toolcall_delta(C, T, 1, Some("{".into()), json!({}), Some("c1".into()), Some("bash".into()));
    assert_eq!(
        r.render(&first),
        vec![Out::Update(SessionUpdate::ToolCall(
            ToolCall::new("c1", "Run a command")
                .kind(ToolKind::Execute)
                .status(ToolCallStatus::Pending)
                .raw_input(json!({}))
        ))]
    );
    let more = Event::toolcall_delta(C, T, 1, Some("\"a".into()), Value::Null, Some("c1".into()), Some("bash".into()));
    assert_eq!(r.render(&more), vec![]);
    assert_eq!(r.render(&Event::toolcall_delta(C, T, 1, Some("x".into()), Value::Null, None, None)), vec![]);
}

#[test]
fn partial_args_show_a_write_as_it_is_generated() {
    let mut r = renderer();
    let first = Event::toolcall_delta(C, T, 0, Some("{".into()), json!({}), Some("w1".into()), Some("write".into()));
    assert_eq!(r.render(&first).len(), 1);
    // A delta without arguments so far says nothing; one with them updates the call, and a
    // write shows its text so far as a diff.
    assert_eq!(r.render(&Event::toolcall_delta(C, T, 0, Some("\"".into()), Value::Null, None, None)), vec![]);
    let so_far = json!({"path": "a.txt", "content": "line 1\nli"});
    assert_eq!(
        r.render(&Event::toolcall_delta(C, T, 0, Some("x".into()), so_far.clone(), None, None)),
        vec![update(
            "w1",
            ToolCallUpdateFields::new()
                .title("Write a.txt".to_string())
                .kind(ToolKind::Edit)
                .locations(vec![ToolCallLocation::new("/ws/a.txt")])
                .raw_input(so_far)
                .content(vec![ToolCallContent::Diff(Diff::new("/ws/a.txt", "line 1\nli"))])
        )]
    );
    // Another message's block of the same index is not this call.
    r.render(&Event::message_completed(C, T, Role::Assistant, vec![], None));
    assert_eq!(r.render(&Event::toolcall_delta(C, T, 0, None, json!({"path": "b"}), None, None)), vec![]);
}

#[test]
fn message_completed_fills_what_the_deltas_missed() {
    let mut r = renderer();
    r.render(&Event::thinking_delta(C, T, 0, "plan"));
    r.render(&Event::text_delta(C, T, 1, "Hello, "));
    let done = Event::message_completed(
        C,
        T,
        Role::Assistant,
        vec![
            KBlock::Thinking { thinking: "plan".into(), signature: None, redacted: false },
            KBlock::text("Hello, world"),
            KBlock::ToolCall { id: "c9".into(), name: "read".into(), arguments: json!({"path": "a.rs"}) },
        ],
        Some(Usage { input_tokens: 1, output_tokens: 2, ..Default::default() }),
    );
    assert_eq!(
        r.render(&done),
        vec![
            msg("world"),
            Out::Update(SessionUpdate::ToolCall(
                ToolCall::new("c9", "Read a.rs")
                    .kind(ToolKind::Read)
                    .status(ToolCallStatus::Pending)
                    .locations(vec![ToolCallLocation::new("/ws/a.rs")])
                    .raw_input(json!({"path": "a.rs"}))
            )),
        ]
    );
    // Without any delta the whole text goes out; a user message is not echoed.
    assert_eq!(
        r.render(&Event::message_completed(C, T, Role::Assistant, vec![KBlock::text("all")], None)),
        vec![msg("all")]
    );
    // A user message inside the started turn is a prompt that steered it.
    assert_eq!(
        r.render(&Event::message_completed(C, T, Role::User, vec![KBlock::text("hi")], None)),
        vec![Out::PromptJoined { turn_id: 3 }]
    );
    // A turn's own prompt comes before its start.
    r.render(&Event::turn_completed(C, 3, None, "end_turn"));
    let prompt = Event::message_completed(C, Some(4), Role::User, vec![KBlock::text("next")], None);
    assert_eq!(r.render(&prompt), vec![]);
}

#[test]
fn stream_reset_does_not_repeat_shown_text() {
    let mut r = renderer();
    assert_eq!(r.render(&Event::text_delta(C, T, 0, "Hello")), vec![msg("Hello")]);
    assert_eq!(r.render(&Event::stream_reset(C, T, 100)), vec![]);
    assert_eq!(r.render(&Event::text_delta(C, T, 0, "Hel")), vec![]);
    assert_eq!(r.render(&Event::text_delta(C, T, 0, "lo there")), vec![msg(" there")]);
    assert_eq!(r.render(&Event::text_delta(C, T, 0, "!")), vec![msg("!")]);
    assert_eq!(
        r.render(&Event::message_completed(C, T, Role::Assistant, vec![KBlock::text("Hello there!")], None)),
        vec![]
    );
}

#[test]
fn tool_started_moves_an_announced_call_in_progress() {
    let mut r = renderer();
    r.render(&Event::toolcall_delta(C, T, 0, None, json!({}), Some("c1".into()), Some("edit".into())));
    let args = json!({"path": "a.txt", "old_string": "a", "new_string": "b"});
    assert_eq!(
        r.render(&Event::tool_started(C, T, "c1", "edit", args.clone(), vec![])),
        vec![update(
            "c1",
            ToolCallUpdateFields::new()
                .title("Edit a.txt".to_string())
                .kind(ToolKind::Edit)
                .locations(vec![ToolCallLocation::new("/ws/a.txt")])
                .status(ToolCallStatus::InProgress)
                .raw_input(args)
        )]
    );
    // A call nobody announced is announced in progress.
    assert_eq!(
        r.render(&Event::tool_started(C, T, "c2", "ls", json!({}), vec![])),
        vec![Out::Update(SessionUpdate::ToolCall(
            ToolCall::new("c2", "List .").kind(ToolKind::Read).status(ToolCallStatus::InProgress).raw_input(json!({}))
        ))]
    );
}

#[test]
fn a_call_a_hook_rewrote_names_the_keys_in_its_meta() {
    let mut r = renderer();
    let out = r.render(&Event::tool_started(C, T, "c3", "ls", json!({"path": "src"}), vec!["path".into()]));
    let mut meta = agent_client_protocol::v1::schema::Meta::new();
    meta.insert("superpi".into(), json!({"overwritten_keys": ["path"]}));
    assert_eq!(
        out,
        vec![Out::Update(SessionUpdate::ToolCall(
            ToolCall::new("c3", "List src")
                .kind(ToolKind::Read)
                .status(ToolCallStatus::InProgress)
                .locations(vec![ToolCallLocation::new("/ws/src")])
                .raw_input(json!({"path": "src"}))
                .meta(meta)
        ))]
    );
}

#[test]
fn tool_output_shows_the_output_so_far() {
    let mut r = renderer();
    r.render(&Event::tool_started(C, T, "c1", "bash", json!({"command": "yes"}), vec![]));
    r.render(&Event::tool_output(C, T, "c1", "bash", "y\n"));
    assert_eq!(
        r.render(&Event::tool_output(C, T, "c1", "bash", "y\n")),
        vec![update("c1", ToolCallUpdateFields::new().content(vec![ToolCallContent::from(text("y\ny\n"))]))]
    );
}

#[test]
fn tool_blocked_says_why() {
    let mut r = renderer();
    assert_eq!(
        r.render(&Event::tool_blocked(C, T, "c1", "bash", "plan mode")),
        vec![update(
            "c1",
            ToolCallUpdateFields::new().content(vec![ToolCallContent::from(text("Blocked: plan mode"))])
        )]
    );
}

#[test]
fn tool_completed_shows_a_diff_or_the_output() {
    let mut r = renderer();
    let args = json!({"path": "a.txt", "content": "new\n"});
    r.render(&Event::tool_started(C, T, "w1", "write", args, vec![]));
    assert_eq!(
        r.render(&Event::tool_completed(C, T, "w1", "write", false, json!("wrote 4 bytes"))),
        vec![update(
            "w1",
            ToolCallUpdateFields::new()
                .status(ToolCallStatus::Completed)
                .content(vec![ToolCallContent::Diff(Diff::new("/ws/a.txt", "new\n"))])
                .raw_output(json!("wrote 4 bytes"))
        )]
    );
    r.render(&Event::tool_started(C, T, "b1", "bash", json!({"command": "false"}), vec![]));
    let done = Event::tool_completed(C, T, "b1", "bash", true, json!("exit 1"))
        .with_tool_channels(Some(json!({"exit_code": 1})), None);
    assert_eq!(
        r.render(&done),
        vec![update(
            "b1",
            ToolCallUpdateFields::new()
                .status(ToolCallStatus::Failed)
                .content(vec![ToolCallContent::from(text("exit 1"))])
                .raw_output(json!({"exit_code": 1}))
        )]
    );
    // Completion of a call this renderer never saw start: the whole call, final.
    assert_eq!(
        r.render(&Event::tool_completed(C, T, "x1", "grep", false, json!(""))),
        vec![Out::Update(SessionUpdate::ToolCall(
            ToolCall::new("x1", "Search")
                .kind(ToolKind::Search)
                .status(ToolCallStatus::Completed)
                .raw_output(json!(""))
        ))]
    );
}

#[test]
fn permission_request_asks_with_the_four_options() {
    let mut r = renderer();
    let args = json!({"command": "rm -rf build"});
    let event = Event::permission_request(
        C,
        T,
        PermissionRequestFields {
            request_id: "q1".into(),
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            arguments: args.clone(),
            reason: "not in the allow list".into(),
            risk: None,
        },
    );
    assert_eq!(
        r.render(&event),
        vec![Out::AskPermission {
            request_id: "q1".into(),
            tool_call: ToolCallUpdate::new(
                "c1",
                ToolCallUpdateFields::new()
                    .title("Run `rm -rf build`".to_string())
                    .kind(ToolKind::Execute)
                    .locations(vec![])
                    .status(ToolCallStatus::Pending)
                    .content(vec![ToolCallContent::from(text("not in the allow list"))])
                    .raw_input(args)
            ),
            options: vec![
                PermissionOption::new("allow_once", "Allow once", PermissionOptionKind::AllowOnce),
                PermissionOption::new("allow_always", "Allow always", PermissionOptionKind::AllowAlways),
                PermissionOption::new("reject_once", "Reject once", PermissionOptionKind::RejectOnce),
                PermissionOption::new("reject_always", "Reject always", PermissionOptionKind::RejectAlways),
            ],
        }]
    );
}

#[test]
fn ui_request_is_not_shown() {
    let mut r = renderer();
    assert_eq!(r.render(&Event::ui_request(C, T, "u1", serde_json::Map::new())), vec![]);
}

#[test]
fn a_file_read_question_is_answered_only_by_an_agent_that_reads_and_never_shown() {
    let read = json!({"kind": "read_text_file", "path": "/ws/note.txt", "tool_call_id": "t1", "limit": 5});
    let read = read.as_object().cloned().unwrap();
    // This agent did not offer to read files (mode `never`, or the editor cannot).
    let mut r = renderer();
    assert_eq!(r.render(&Event::ui_request(C, T, "u1", read.clone())), vec![]);

    let mut r = Renderer::new(RenderOptions {
        editor_reads: Some(crate::buffers::EditorBuffers::UnsavedOnly),
        ..Default::default()
    });
    assert_eq!(
        r.render(&Event::ui_request(C, T, "u1", read)),
        vec![Out::ReadFile(crate::buffers::ReadRequest {
            request_id: "u1".into(),
            path: "/ws/note.txt".into(),
            tool_call_id: Some("t1".into()),
        })]
    );
    // Other kinds of question are not this agent's.
    let other = json!({"kind": "confirm", "path": "/ws/note.txt"}).as_object().cloned().unwrap();
    assert_eq!(r.render(&Event::ui_request(C, T, "u2", other)), vec![]);
}

#[test]
fn ui_resolved_withdraws_the_question() {
    let mut r = renderer();
    assert_eq!(
        r.render(&Event::ui_resolved(C, T, "q1", json!("allow_once"))),
        vec![Out::QuestionClosed { request_id: "q1".into() }]
    );
}

#[test]
fn state_changed_and_compaction_are_silent() {
    let mut r = renderer();
    assert_eq!(r.render(&Event::state_changed(C, T, "running")), vec![]);
    assert_eq!(r.render(&Event::compaction_completed(C, None, json!(3), Some("s".into()))), vec![]);
}

#[test]
fn mode_changed_is_a_current_mode_update() {
    let mut r = renderer();
    assert_eq!(
        r.render(&Event::mode_changed(C, "plan", Some("auto".into()))),
        vec![Out::Update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new("plan")))]
    );
}

#[test]
fn usage_updated_is_a_usage_update() {
    let mut r = renderer();
    let ev = Event::usage_updated(
        C,
        T,
        Usage { input_tokens: 100, output_tokens: 20, ..Default::default() },
        Usage { input_tokens: 500, output_tokens: 90, ..Default::default() },
    );
    assert_eq!(r.render(&ev), vec![Out::Update(SessionUpdate::UsageUpdate(UsageUpdate::new(120, 1000)))]);
}

#[test]
fn usage_update_reports_the_kernels_context_and_the_models_window() {
    let mut r = renderer();
    let ev = Event::usage_updated(
        C,
        T,
        Usage { input_tokens: 100, output_tokens: 20, ..Default::default() },
        Usage { input_tokens: 500, output_tokens: 90, ..Default::default() },
    )
    .with_context(140, 128_000);
    assert_eq!(r.render(&ev), vec![Out::Update(SessionUpdate::UsageUpdate(UsageUpdate::new(140, 128_000)))]);
}

#[test]
fn usage_update_carries_the_conversations_cost_in_dollars() {
    let mut r = renderer();
    let usage = Usage { input_tokens: 100, output_tokens: 20, ..Default::default() };
    let ev = Event::usage_updated(C, T, usage, usage).with_context(140, 128_000).with_cost(superpi_proto::Cost {
        call: Some(0.25),
        turn: Some(0.5),
        total: Some(1.5),
    });
    let expected = UsageUpdate::new(140, 128_000).cost(Cost::new(1.5, "USD"));
    assert_eq!(r.render(&ev), vec![Out::Update(SessionUpdate::UsageUpdate(expected))]);
}

#[test]
fn plan_updated_is_a_plan_with_the_first_open_entry_in_progress() {
    let mut r = renderer();
    let entries = vec![
        KPlanEntry { id: "1".into(), text: "read".into(), completed: true },
        KPlanEntry { id: "2".into(), text: "change".into(), completed: false },
        KPlanEntry { id: "3".into(), text: "test".into(), completed: false },
    ];
    assert_eq!(
        r.render(&Event::plan_updated(C, T, entries)),
        vec![Out::Update(SessionUpdate::Plan(Plan::new(vec![
            PlanEntry::new("read", PlanEntryPriority::Medium, PlanEntryStatus::Completed),
            PlanEntry::new("change", PlanEntryPriority::Medium, PlanEntryStatus::InProgress),
            PlanEntry::new("test", PlanEntryPriority::Medium, PlanEntryStatus::Pending),
        ])))]
    );
}

#[test]
fn notice_is_a_notice_when_the_editor_takes_them_else_a_thought() {
    let mut r = renderer();
    let ev = Event::notice(C, None, "warning", "turn 2 was interrupted");
    assert_eq!(r.render(&ev), vec![thought("[warning] turn 2 was interrupted\n")]);
    let mut r = Renderer::new(RenderOptions { notices: true, ..Default::default() });
    assert_eq!(
        r.render(&ev),
        vec![Out::Update(SessionUpdate::Notice(Notice::new(NoticeSeverity::Warning, "turn 2 was interrupted")))]
    );
}

#[test]
fn a_compaction_is_a_completed_compaction_update_when_the_editor_takes_them() {
    let mut ev = Event::compaction_completed(C, None, json!(3), Some("the story so far".into()));
    ev.seq = 12;
    let mut r = Renderer::new(RenderOptions { compaction: true, ..Default::default() });
    let summary = vec![ContentBlock::Text(TextContent::new("the story so far"))];
    assert_eq!(
        r.render(&ev),
        vec![Out::Update(SessionUpdate::CompactionUpdate(
            CompactionUpdate::new("compaction-12", CompactionStatus::Completed).summary(summary)
        ))]
    );
}

#[test]
fn subagents_are_tool_calls() {
    let mut r = renderer();
    assert_eq!(
        r.render(&Event::subagent_started(C, T, 12, "explorer", "find the bug")),
        vec![Out::Update(SessionUpdate::ToolCall(
            ToolCall::new("subagent-12", "explorer: find the bug")
                .kind(ToolKind::Other)
                .status(ToolCallStatus::InProgress)
        ))]
    );
    assert_eq!(
        r.render(&Event::subagent_finished(C, T, 12, "completed", Some("found it".into()))),
        vec![update(
            "subagent-12",
            ToolCallUpdateFields::new()
                .status(ToolCallStatus::Completed)
                .content(vec![ToolCallContent::from(text("found it"))])
        )]
    );
}

#[test]
fn turn_completed_ends_the_prompt() {
    let mut r = renderer();
    assert_eq!(
        r.render(&Event::turn_completed(C, 3, Some("ok".into()), "end_turn")),
        vec![Out::TurnEnded { turn_id: Some(3), stop_reason: StopReason::EndTurn }]
    );
    assert_eq!(
        r.render(&Event::turn_completed(C, 4, None, "max_tokens")),
        vec![Out::TurnEnded { turn_id: Some(4), stop_reason: StopReason::MaxTokens }]
    );
}

#[test]
fn turn_error_is_shown_and_refused() {
    let mut r = renderer();
    assert_eq!(
        r.render(&Event::turn_error(C, 3, "provider down")),
        vec![msg("\n\nError: provider down"), Out::TurnEnded { turn_id: Some(3), stop_reason: StopReason::Refusal }]
    );
}

#[test]
fn turn_cancelled_fails_open_calls_and_ends_cancelled() {
    let mut r = renderer();
    r.render(&Event::tool_started(C, T, "c1", "bash", json!({"command": "sleep 9"}), vec![]));
    assert_eq!(
        r.render(&Event::turn_cancelled(C, 3)),
        vec![
            update("c1", ToolCallUpdateFields::new().status(ToolCallStatus::Failed)),
            Out::TurnEnded { turn_id: Some(3), stop_reason: StopReason::Cancelled },
        ]
    );
}

#[test]
fn unknown_events_are_ignored() {
    let mut r = renderer();
    let ev = Event::from_json(r#"{"type":"brand_new","conversation_id":7,"x":1}"#).unwrap();
    assert_eq!(r.render(&ev), vec![]);
}

#[test]
fn a_watch_that_joins_mid_message_waits_for_the_completed_message() {
    let mut r = Renderer::new(RenderOptions::default());
    assert_eq!(r.render(&Event::text_delta(C, T, 0, "turn goes on")), vec![]);
    assert_eq!(
        r.render(&Event::message_completed(C, T, Role::Assistant, vec![KBlock::text("the turn goes on")], None)),
        vec![msg("the turn goes on")]
    );
    // The next message of the same turn streams from its start.
    assert_eq!(r.render(&Event::text_delta(C, T, 0, "next")), vec![msg("next")]);
}

/// A login's URL goes out only to an editor that opens URLs, and its good end is
/// `elicitation/complete`; other ends only close it.
#[test]
fn a_login_url_is_opened_only_by_an_editor_that_declared_urls() {
    let url = serde_json::json!({"kind": "url", "server": "prot", "url": "https://as.example/a", "message": "Log in"});
    let url = url.as_object().unwrap().clone();
    assert_eq!(renderer().render(&Event::ui_request(C, T, "u1", url.clone())), vec![]);
    let mut r = Renderer::new(RenderOptions { opens_urls: true, ..Default::default() });
    let open = Out::OpenUrl { request_id: "u1".into(), url: "https://as.example/a".into(), message: "Log in".into() };
    assert_eq!(r.render(&Event::ui_request(C, T, "u1", url)), vec![open]);
    let closed = Out::QuestionClosed { request_id: "u1".into() };
    let done = Out::UrlDone { request_id: "u1".into() };
    let logged_in = serde_json::json!({"outcome": "logged_in"});
    assert_eq!(r.render(&Event::ui_resolved(C, T, "u1", logged_in)), vec![closed.clone(), done]);
    let refused = serde_json::json!({"outcome": "not_logged_in", "reason": "declined"});
    assert_eq!(r.render(&Event::ui_resolved(C, T, "u1", refused)), vec![closed]);
}

#[test]
fn an_artifact_is_a_resource_link_to_its_file() {
    let mut r = renderer();
    let link =
        agent_client_protocol::v1::schema::ResourceLink::new("t.csv", format!("file:///data/artifacts/{C}/t.csv"))
            .mime_type("text/csv".to_string())
            .size(Some(8));
    assert_eq!(
        r.render(&Event::artifact_created(C, T, "c1", "t.csv", 8, "text/csv")),
        vec![Out::Update(SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::ResourceLink(link))))]
    );
}
