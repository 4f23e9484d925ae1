//! End-to-end: the official ACP client side drives the real `superpi acp` process, which
//! reaches a real kernel (autostarted in a private environment) running the mock model.
//!
//! Build the binary first: `cargo build -p superpi-cli && cargo test -p superpi-acp`.
//!
//! Over 500 lines on purpose: one end-to-end test binary per frontend, since each binary links
//! the crate and its dependencies once more (minutes on a 2-core machine).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use crate::common;

use agent_client_protocol::ErrorCode;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, CloseSessionRequest, ContentBlock, ImageContent, ListSessionsRequest, LoadSessionRequest,
    NewSessionRequest, PermissionOptionKind, PlanEntryStatus, PromptRequest, ResumeSessionRequest, SessionConfigKind,
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOptions, SessionConfigValueId, SessionId,
    SessionModeId, SessionUpdate, SetSessionConfigOptionRequest, SetSessionModeRequest, StopReason, TextContent,
    ToolCallStatus,
};
use common::*;
use serde_json::json;
use superpi_tests::TestEnv;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_new_prompt_cancel_then_load_in_a_fresh_process() {
    let env = TestEnv::new();

    // First editor session: initialize, session/new, a prompt, a tool call, a cancel.
    let (result, lines) = with_editor(&env, Answer::Select("allow_once"), async |cx, mut seen| {
        let init = initialize(&cx).await?;
        assert_eq!(init.protocol_version, ProtocolVersion::V1);
        assert!(init.agent_capabilities.load_session);
        assert!(init.agent_capabilities.prompt_capabilities.embedded_context);
        assert!(init.agent_capabilities.prompt_capabilities.image);

        let session = new_session(&cx, &env).await?;
        let sid = session.session_id.clone();
        let modes = session.modes.expect("modes");
        assert!(modes.available_modes.iter().any(|m| m.id == modes.current_mode_id));

        // A plain prompt streams the echo and ends the turn.
        let done = cx.send_request(text_prompt(&sid, "hello from the editor")).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        let updates = seen.drain();
        assert!(updates.iter().all(|u| u.session_id == sid));
        assert!(agent_text(&updates).contains("hello from the editor"), "{updates:?}");
        let titled = updates.iter().any(|u| {
            matches!(&u.update, SessionUpdate::SessionInfoUpdate(i)
                if i.title == agent_client_protocol::schema::MaybeUndefined::Value("hello from the editor".to_string()))
        });
        assert!(titled, "the first prompt titles the session: {updates:?}");

        // A tool call shows as a tool_call, then completes; the file is really written.
        let prompt = "@tool write {\"path\": \"note.txt\", \"content\": \"from acp\\n\"}";
        let done = cx.send_request(text_prompt(&sid, prompt)).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        let updates = seen.drain();
        let finished = updates.iter().any(|u| match &u.update {
            SessionUpdate::ToolCallUpdate(t) => t.fields.status == Some(ToolCallStatus::Completed),
            _ => false,
        });
        assert!(finished, "no completed tool call in {updates:?}");
        assert_eq!(std::fs::read_to_string(env.workspace.join("note.txt")).unwrap(), "from acp\n");

        // A cancel during a slow prompt: it gets through the dispatch loop while the turn
        // runs, and the prompt answers `cancelled`.
        let slow = cx.send_request(text_prompt(&sid, "@slow 300\none two three four five six seven eight"));
        seen.until(|u| matches!(u, SessionUpdate::AgentMessageChunk(_))).await;
        cx.send_notification(CancelNotification::new(sid.clone()))?;
        let cancelled = tokio::time::timeout(WAIT, slow.block_task()).await.expect("cancel in time")?;
        assert_eq!(cancelled.stop_reason, StopReason::Cancelled);
        Ok(sid)
    })
    .await;
    let sid = result.unwrap();
    assert_jsonrpc_only(&lines);

    // A fresh `superpi acp`: session/load replays the history before it answers.
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let listed = cx.send_request(ListSessionsRequest::new()).block_task().await?;
        assert!(listed.sessions.iter().any(|s| s.session_id == sid), "{listed:?}");

        let load = LoadSessionRequest::new(sid.clone(), env.workspace.clone());
        let loaded = cx.send_request(load).block_task().await?;
        assert!(loaded.modes.is_some());
        let replayed = seen.drain();
        let user_text: String = replayed
            .iter()
            .filter_map(|u| match &u.update {
                SessionUpdate::UserMessageChunk(c) => match &c.content {
                    ContentBlock::Text(t) => Some(t.text.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        assert!(user_text.contains("hello from the editor"), "{replayed:?}");
        assert!(agent_text(&replayed).contains("hello from the editor"));
        let write_call = replayed.iter().find_map(|u| match &u.update {
            SessionUpdate::ToolCall(t) if t.title.contains("note.txt") => Some(t.clone()),
            _ => None,
        });
        assert_eq!(write_call.expect("the write call replayed").status, ToolCallStatus::Completed);

        // The loaded session takes prompts.
        let done = cx.send_request(text_prompt(&sid, "again")).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_load_replays_the_latest_plan_where_it_was_made() {
    let env = TestEnv::new();
    let plan = |steps: &[(&str, &str)]| {
        let plan: Vec<_> = steps.iter().map(|(step, status)| json!({"step": step, "status": status})).collect();
        format!("@tool update_plan {}", json!({ "plan": plan }))
    };
    let first = plan(&[("read the code", "in_progress"), ("fix the bug", "pending")]);
    let second = plan(&[("read the code", "completed"), ("fix the bug", "in_progress")]);
    let (result, _) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = new_session(&cx, &env).await?.session_id;
        for prompt in [first.as_str(), second.as_str(), "after the plan"] {
            let done = cx.send_request(text_prompt(&sid, prompt)).block_task().await?;
            assert_eq!(done.stop_reason, StopReason::EndTurn);
        }
        let live = seen.drain().into_iter().filter(|u| matches!(u.update, SessionUpdate::Plan(_))).count();
        assert_eq!(live, 2, "each update_plan call shows live");
        Ok(sid)
    })
    .await;
    let sid = result.unwrap();

    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        cx.send_request(LoadSessionRequest::new(sid.clone(), env.workspace.clone())).block_task().await?;
        let replayed: Vec<SessionUpdate> = seen.drain().into_iter().map(|u| u.update).collect();
        let plans: Vec<(usize, &agent_client_protocol::v1::schema::Plan)> = replayed
            .iter()
            .enumerate()
            .filter_map(|(i, u)| match u {
                SessionUpdate::Plan(plan) => Some((i, plan)),
                _ => None,
            })
            .collect();
        // Only the plan as it stands, once.
        let [(at, plan)] = plans[..] else { panic!("one plan replayed: {replayed:?}") };
        let steps: Vec<(&str, PlanEntryStatus)> =
            plan.entries.iter().map(|e| (e.content.as_str(), e.status.clone())).collect();
        assert_eq!(
            steps,
            [("read the code", PlanEntryStatus::Completed), ("fix the bug", PlanEntryStatus::InProgress)]
        );
        // Where it was made: after the prompt that made it, before the next prompt.
        let prompt_at = |needle: &str| {
            replayed.iter().position(|u| match u {
                SessionUpdate::UserMessageChunk(c) => {
                    matches!(&c.content, ContentBlock::Text(t) if t.text.contains(needle))
                }
                _ => false,
            })
        };
        assert!(prompt_at("completed").unwrap() < at, "{replayed:?}");
        assert!(at < prompt_at("after the plan").unwrap(), "{replayed:?}");
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_sent_while_one_runs_steers_its_turn() {
    let env = TestEnv::new();
    let (result, lines) = with_editor(&env, Answer::Select("allow_once"), async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = new_session(&cx, &env).await?.session_id;
        cx.send_request(text_prompt(&sid, "warm up")).block_task().await?;
        // A turn whose command waits until the test creates `go`.
        let waiting = r#"@tool bash {"command": "while [ ! -e go ]; do sleep 0.02; done; echo released"}"#;
        let first = cx.send_request(text_prompt(&sid, waiting));
        seen.until(
            |u| matches!(u, SessionUpdate::ToolCallUpdate(t) if t.fields.status == Some(ToolCallStatus::InProgress)),
        )
        .await;
        // A second prompt meanwhile is not refused: it joins the running turn once the kernel
        // has it (its turn row: the warm-up's, the running one's and its own).
        let second = cx.send_request(text_prompt(&sid, "steered words"));
        env.wait_for_turn_rows(3).await;
        std::fs::write(env.workspace.join("go"), "").unwrap();
        let first = tokio::time::timeout(WAIT, first.block_task()).await.expect("the first prompt answers")?;
        assert_eq!(first.stop_reason, StopReason::EndTurn);
        let second = tokio::time::timeout(WAIT, second.block_task()).await.expect("the second prompt answers")?;
        assert_eq!(second.stop_reason, StopReason::EndTurn);
        // The mock answers the latest prompt: the steering one, in the same turn.
        assert!(agent_text(&seen.drain()).contains("steered words"));
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
    let kernel = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let conv = kernel.list().await.unwrap()[0].conversation_id;
    let history = kernel.history(conv).await.unwrap().entries;
    let users: Vec<Option<i64>> =
        history.iter().filter(|e| e.kind == superpi_proto::EntryKind::User).map(|e| e.turn_id).collect();
    assert_eq!(users.len(), 3, "{users:?}");
    assert_eq!(users[1], users[2], "the steering prompt joined the running turn");
}

/// `/clear` sent while a prompt's turn runs waits for that turn (the kernel's notice reaches
/// the editor), then clears: the editor is told, and the clear's entry follows the turn's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_sent_while_a_turn_runs_clears_after_it() {
    let env = TestEnv::new();
    let (result, lines) = with_editor(&env, Answer::Select("allow_once"), async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = new_session(&cx, &env).await?.session_id;
        let waiting = r#"@tool bash {"command": "while [ ! -e go ]; do sleep 0.02; done; echo released"}"#;
        let first = cx.send_request(text_prompt(&sid, waiting));
        seen.until(
            |u| matches!(u, SessionUpdate::ToolCallUpdate(t) if t.fields.status == Some(ToolCallStatus::InProgress)),
        )
        .await;
        let clear = cx.send_request(text_prompt(&sid, "/clear"));
        // Without the editor's notice capability, the kernel's notice is a thought.
        seen.until(|u| match u {
            SessionUpdate::AgentThoughtChunk(c) => {
                matches!(&c.content, ContentBlock::Text(t) if t.text.contains("clear requested"))
            }
            _ => false,
        })
        .await;
        std::fs::write(env.workspace.join("go"), "").unwrap();
        let first = tokio::time::timeout(WAIT, first.block_task()).await.expect("the prompt answers")?;
        assert_eq!(first.stop_reason, StopReason::EndTurn);
        let clear = tokio::time::timeout(WAIT, clear.block_task()).await.expect("/clear answers")?;
        assert_eq!(clear.stop_reason, StopReason::EndTurn);
        let said = agent_text(&seen.drain());
        assert!(said.contains("Context cleared"), "{said}");
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
    let kernel = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let conv = kernel.list().await.unwrap()[0].conversation_id;
    let history = kernel.history(conv).await.unwrap().entries;
    let kinds: Vec<superpi_proto::EntryKind> = history.iter().map(|e| e.kind).collect();
    assert_eq!(kinds.last(), Some(&superpi_proto::EntryKind::Compaction), "the clear after the turn: {kinds:?}");
    let released = |e: &superpi_proto::Entry| {
        e.message
            .content
            .iter()
            .any(|b| matches!(b, superpi_proto::ContentBlock::ToolResult { output, .. } if output.contains("released")))
    };
    assert!(history.iter().any(released), "the turn ran to its end first");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_request_is_answered_during_the_prompt() {
    let env = TestEnv::new();
    // "Always in this project": the call runs and a rule is written for later.
    let (result, lines) = with_editor(&env, Answer::Select("allow_always_project"), async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = new_session(&cx, &env).await?.session_id;
        // A first turn starts this session's interactive watch. (The kernel counts an
        // interactive watcher only once its forwarder task runs, a moment after answering
        // session.watch; a question asked in that moment fails closed. Reported.)
        cx.send_request(text_prompt(&sid, "warm up")).block_task().await?;
        // An unlisted shell command in accept-edits asks a person.
        let prompt = "@tool bash {\"command\": \"touch asked.txt\"}";
        let done = cx.send_request(text_prompt(&sid, prompt)).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        let asked = seen.permissions.try_recv().expect("a permission request");
        assert_eq!(asked.session_id, sid);
        let kinds: Vec<PermissionOptionKind> = asked.options.iter().map(|o| o.kind).collect();
        assert_eq!(
            kinds,
            [
                PermissionOptionKind::AllowOnce,
                PermissionOptionKind::AllowAlways,
                PermissionOptionKind::RejectOnce,
                PermissionOptionKind::RejectAlways,
                PermissionOptionKind::AllowAlways,
                PermissionOptionKind::AllowAlways
            ]
        );
        let names: Vec<&str> = asked.options.iter().skip(4).map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["Always allow in this project", "Always allow for me, in every project"]);
        assert!(env.workspace.join("asked.txt").exists(), "the allowed call ran");
        // The folder is not trusted: the project's rule is the user's, scoped to the workspace.
        let rules = std::fs::read_to_string(env.locations.config_dir.join("permissions.json")).unwrap();
        assert!(rules.contains("touch asked.txt") && rules.contains("\"workspace\""), "{rules}");
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);

    // A cancelled answer fails closed: the call does not run.
    let (result, _) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = new_session(&cx, &env).await?.session_id;
        // A first turn starts this session's interactive watch. (The kernel counts an
        // interactive watcher only once its forwarder task runs, a moment after answering
        // session.watch; a question asked in that moment fails closed. Reported.)
        cx.send_request(text_prompt(&sid, "warm up")).block_task().await?;
        let prompt = "@tool bash {\"command\": \"touch refused.txt\"}";
        cx.send_request(text_prompt(&sid, prompt)).block_task().await?;
        assert!(seen.permissions.try_recv().is_ok(), "asked");
        Ok(())
    })
    .await;
    result.unwrap();
    assert!(!env.workspace.join("refused.txt").exists(), "a cancelled question must fail closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_withdraws_an_open_question_first_then_the_turn() {
    let env = TestEnv::new();
    let (result, lines) = with_editor(&env, Answer::Hold, async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = new_session(&cx, &env).await?.session_id;
        // A first turn starts this session's interactive watch. (The kernel counts an
        // interactive watcher only once its forwarder task runs, a moment after answering
        // session.watch; a question asked in that moment fails closed. Reported.)
        cx.send_request(text_prompt(&sid, "warm up")).block_task().await?;
        let pending = cx.send_request(text_prompt(&sid, "@tool bash {\"command\": \"touch never.txt\"}"));
        let (asked, responder) = tokio::time::timeout(WAIT, seen.held.recv()).await.expect("asked in time").unwrap();
        assert_eq!(asked.session_id, sid);
        // The question stays open; the person presses Stop instead.
        let withdrawn = responder.cancellation();
        cx.send_notification(CancelNotification::new(sid.clone()))?;
        tokio::time::timeout(WAIT, withdrawn.cancelled()).await.expect("the question is withdrawn");
        let done = tokio::time::timeout(WAIT, pending.block_task()).await.expect("the prompt ends")?;
        assert_eq!(done.stop_reason, StopReason::Cancelled);
        // The editor's late answer is harmless.
        let _ = responder.respond(agent_client_protocol::v1::schema::RequestPermissionResponse::new(
            agent_client_protocol::v1::schema::RequestPermissionOutcome::Cancelled,
        ));
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
    assert!(!env.workspace.join("never.txt").exists(), "a cancelled question fails closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_acp_errors() {
    let env = TestEnv::new();
    let (result, _) = with_editor(&env, Answer::Dismiss, async |cx, _seen| {
        initialize(&cx).await?;
        let unknown = cx.send_request(text_prompt(&SessionId::new("conv-424242"), "hi")).block_task().await;
        assert_eq!(unknown.unwrap_err().code, ErrorCode::from(-32002));
        let junk = cx.send_request(text_prompt(&SessionId::new("not-a-session"), "hi")).block_task().await;
        assert_eq!(junk.unwrap_err().code, ErrorCode::from(-32002));
        let relative = cx.send_request(NewSessionRequest::new("relative/dir")).block_task().await;
        assert_eq!(relative.unwrap_err().code, ErrorCode::from(-32602));
        // A folder holding one of superpi's own directories (here the config dir itself) is
        // refused at session/new, saying why and what to open instead; so is `/`.
        let own = env.locations.config_dir.clone();
        let above = cx.send_request(NewSessionRequest::new(own)).block_task().await.unwrap_err();
        assert_eq!(above.code, ErrorCode::from(-32602));
        assert!(above.message.contains("holds superpi's own directory"), "{above:?}");
        assert!(above.message.contains("Open a project folder"), "{above:?}");
        let root = cx.send_request(NewSessionRequest::new("/")).block_task().await.unwrap_err();
        assert!(root.message.contains("whole filesystem"), "{root:?}");

        let sid = new_session(&cx, &env).await?.session_id;
        let above =
            cx.send_request(SetSessionModeRequest::new(sid.clone(), SessionModeId::new("yolo"))).block_task().await;
        assert_eq!(above.unwrap_err().code, ErrorCode::from(-32602));
        cx.send_request(SetSessionModeRequest::new(sid.clone(), SessionModeId::new("plan"))).block_task().await?;
        Ok(())
    })
    .await;
    result.unwrap();
}

/// The model option offers what the kernel's `model.list` offers; choosing one changes the
/// conversation's model (stored: a reload shows it, and the next turn runs on it), and an unknown
/// model is refused with its name and the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_option_lists_the_kernels_models_and_switches_the_model() {
    let env = TestEnv::new();
    // A configured provider (never contacted: no turn runs on it) makes the default a real
    // model, so choosing `mock` is a change.
    let extra = [("ANTHROPIC_API_KEY", "test-key-never-sent"), ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")];
    let (result, lines) = with_editor_env(&env, &extra, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let session = new_session(&cx, &env).await?;
        let sid = session.session_id.clone();
        let (current, offered) = model_select(&session.config_options.expect("config options"));
        assert_eq!(current, "claude-sonnet-4-5");
        assert!(
            offered.contains(&"mock".to_string()) && offered.contains(&"claude-opus-4-1".to_string()),
            "{offered:?}"
        );

        let set = SetSessionConfigOptionRequest::new(sid.clone(), "model", SessionConfigValueId::new("mock"));
        let changed = cx.send_request(set).block_task().await?;
        assert_eq!(model_select(&changed.config_options).0, "mock");
        let done = cx.send_request(text_prompt(&sid, "answered by the mock")).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        assert!(agent_text(&seen.drain()).contains("answered by the mock"));

        let unknown =
            SetSessionConfigOptionRequest::new(sid.clone(), "model", SessionConfigValueId::new("no-such-model"));
        let err = cx.send_request(unknown).block_task().await.unwrap_err();
        assert_eq!(err.code, ErrorCode::from(-32602));
        assert!(err.message.contains("no-such-model") && err.message.contains("unknown model"), "{}", err.message);
        let other = SetSessionConfigOptionRequest::new(sid.clone(), "verbosity", SessionConfigValueId::new("high"));
        assert_eq!(cx.send_request(other).block_task().await.unwrap_err().code, ErrorCode::from(-32602));

        // The kernel kept `mock`: a reload reads it back.
        let loaded = cx.send_request(LoadSessionRequest::new(sid.clone(), env.workspace.clone())).block_task().await?;
        assert_eq!(model_select(&loaded.config_options.expect("config options")).0, "mock");
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

/// An image pasted into the editor reaches the model (the mock says what it received), and a
/// model without vision refuses it with an error naming the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_image_reaches_the_model_and_a_blind_model_refuses_it() {
    let env = TestEnv::new();
    let blind = "[providers]\ndefault_model = \"mock\"\n\n[[providers.models]]\nname = \"blind\"\nprovider = \"mock\"\nimages = false\n";
    std::fs::write(env.locations.config_dir.join("providers.toml"), blind).unwrap();
    // A 1x1 PNG (70 bytes).
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = new_session(&cx, &env).await?.session_id;
        let image = || {
            PromptRequest::new(
                sid.clone(),
                vec![
                    ContentBlock::Text(TextContent::new("what is this?")),
                    ContentBlock::Image(ImageContent::new(png, "image/png")),
                ],
            )
        };
        let done = cx.send_request(image()).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        let answer = agent_text(&seen.drain());
        assert!(answer.contains("[image image/png, 70 bytes]") && answer.contains("what is this?"), "{answer}");

        let set = SetSessionConfigOptionRequest::new(sid.clone(), "model", SessionConfigValueId::new("blind"));
        cx.send_request(set).block_task().await?;
        let err = cx.send_request(image()).block_task().await.unwrap_err();
        assert_eq!(err.code, ErrorCode::from(-32602));
        assert!(err.message.contains("`blind` does not take images"), "{}", err.message);
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

/// The mode is also a config option (for editors that show only those): it lists the modes up
/// to the ceiling, switches the conversation's mode like `session/set_mode`, and refuses a mode
/// above the ceiling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mode_option_switches_the_mode() {
    let env = TestEnv::new();
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, _seen| {
        initialize(&cx).await?;
        let session = new_session(&cx, &env).await?;
        let sid = session.session_id.clone();
        let (current, offered) = mode_select(&session.config_options.expect("config options"));
        assert_eq!((current.as_str(), offered), ("accept-edits", vec!["plan".to_string(), "accept-edits".into()]));

        let set = SetSessionConfigOptionRequest::new(sid.clone(), "mode", SessionConfigValueId::new("plan"));
        let changed = cx.send_request(set).block_task().await?;
        assert_eq!(mode_select(&changed.config_options).0, "plan");
        let above = SetSessionConfigOptionRequest::new(sid.clone(), "mode", SessionConfigValueId::new("auto"));
        assert_eq!(cx.send_request(above).block_task().await.unwrap_err().code, ErrorCode::from(-32602));

        // The kernel holds the new mode: a reload shows it in both places.
        let loaded = cx.send_request(LoadSessionRequest::new(sid.clone(), env.workspace.clone())).block_task().await?;
        assert_eq!(loaded.modes.expect("modes").current_mode_id, SessionModeId::new("plan"));
        assert_eq!(mode_select(&loaded.config_options.expect("config options")).0, "plan");
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

/// The current value and the offered values of the select option `id` of `category`.
fn select(options: &[SessionConfigOption], id: &str, category: SessionConfigOptionCategory) -> (String, Vec<String>) {
    let option = options.iter().find(|o| &*o.id.0 == id).expect("the option");
    assert_eq!(option.category, Some(category));
    let SessionConfigKind::Select(select) = &option.kind else { panic!("the option is a select") };
    let SessionConfigSelectOptions::Ungrouped(values) = &select.options else { panic!("ungrouped values") };
    (select.current_value.0.to_string(), values.iter().map(|v| v.value.0.to_string()).collect())
}

fn model_select(options: &[SessionConfigOption]) -> (String, Vec<String>) {
    select(options, "model", SessionConfigOptionCategory::Model)
}

fn mode_select(options: &[SessionConfigOption]) -> (String, Vec<String>) {
    select(options, "mode", SessionConfigOptionCategory::Mode)
}

fn effort_select(options: &[SessionConfigOption]) -> (String, Vec<String>) {
    select(options, "effort", SessionConfigOptionCategory::ThoughtLevel)
}

/// The thinking effort is a config option of category `thought_level` for a model that thinks:
/// choosing `high` reaches Anthropic as a thinking budget inside `max_tokens` (the fake refuses
/// what the API refuses), is kept with the conversation (a fresh process's load shows it), and
/// a model without thinking has no such option; a level its model lacks is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_effort_option_sets_the_conversations_thinking_and_reaches_the_vendor() {
    use superpi_providers::testing::fakes::AnthropicFake;
    let env = TestEnv::new();
    let fake = AnthropicFake::start(vec![]).await.unwrap();
    let vars = fake.env();
    let extra: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (result, lines) = with_editor_env(&env, &extra, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let session = new_session(&cx, &env).await?;
        let sid = session.session_id.clone();
        let options = session.config_options.expect("config options");
        assert_eq!(model_select(&options).0, "claude-sonnet-4-5");
        let (current, offered) = effort_select(&options);
        assert_eq!(
            (current.as_str(), offered),
            (
                "default",
                vec!["default", "off", "low", "medium", "high"].into_iter().map(String::from).collect::<Vec<_>>()
            )
        );

        let set = SetSessionConfigOptionRequest::new(sid.clone(), "effort", SessionConfigValueId::new("high"));
        let changed = cx.send_request(set).block_task().await?;
        assert_eq!(effort_select(&changed.config_options).0, "high");
        let done = cx.send_request(text_prompt(&sid, "think hard")).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        assert!(agent_text(&seen.drain()).contains("ok"));
        let sent = fake.accepted().pop().expect("a request reached the fake");
        assert_eq!(sent["thinking"], json!({"type": "enabled", "budget_tokens": 24_576}), "{sent}");
        assert!(sent["max_tokens"].as_u64().unwrap() > 24_576);

        // An unknown level is refused; a model without thinking offers no effort option, and
        // the kernel refuses one for it.
        let junk = SetSessionConfigOptionRequest::new(sid.clone(), "effort", SessionConfigValueId::new("max"));
        assert_eq!(cx.send_request(junk).block_task().await.unwrap_err().code, ErrorCode::from(-32602));
        let legacy = SetSessionConfigOptionRequest::new(
            sid.clone(),
            "model",
            SessionConfigValueId::new("claude-3-5-haiku-latest"),
        );
        let changed = cx.send_request(legacy).block_task().await?;
        assert!(changed.config_options.iter().all(|o| &*o.id.0 != "effort"), "{:?}", changed.config_options);
        let refused = SetSessionConfigOptionRequest::new(sid.clone(), "effort", SessionConfigValueId::new("low"));
        let err = cx.send_request(refused).block_task().await.unwrap_err();
        assert_eq!(err.code, ErrorCode::from(-32602));
        assert!(err.message.contains("no thinking effort"), "{}", err.message);
        let back =
            SetSessionConfigOptionRequest::new(sid.clone(), "model", SessionConfigValueId::new("claude-sonnet-4-5"));
        cx.send_request(back).block_task().await?;
        Ok(sid)
    })
    .await;
    let sid = result.unwrap();
    assert_jsonrpc_only(&lines);
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());

    // A fresh process loads the session with its effort.
    let (result, _) = with_editor_env(&env, &extra, Answer::Dismiss, async |cx, _seen| {
        initialize(&cx).await?;
        let loaded = cx.send_request(LoadSessionRequest::new(sid.clone(), env.workspace.clone())).block_task().await?;
        assert_eq!(effort_select(&loaded.config_options.expect("config options")).0, "high");
        let cleared = SetSessionConfigOptionRequest::new(sid.clone(), "effort", SessionConfigValueId::new("default"));
        assert_eq!(effort_select(&cx.send_request(cleared).block_task().await?.config_options).0, "default");
        Ok(())
    })
    .await;
    result.unwrap();
}

/// A harness whose agent backend takes no thinking effort (OpenCode) offers no effort option,
/// where a model's harness on the same model does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_without_an_effort_setting_offers_no_effort_option() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    // A stand-in `opencode`: the harness exists once its program is found; no turn runs.
    let program = env.path().join("opencode");
    std::fs::write(&program, "#!/bin/sh\necho 1.18.33\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = format!("[backends.opencode]\nprogram = \"{}\"\n", program.display());
    std::fs::write(env.locations.config_dir.join("harnesses.toml"), file).unwrap();
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, _seen| {
        initialize(&cx).await?;
        let model = new_session(&cx, &env).await?.config_options.expect("config options");
        assert_eq!(effort_select(&model).0, "default", "the mock's harness offers it: {model:?}");
        let mut request = NewSessionRequest::new(env.workspace.clone());
        request.meta = serde_json::from_value(json!({"harness": "opencode"})).ok();
        let opencode = cx.send_request(request).block_task().await?.config_options.expect("config options");
        assert_eq!(model_select(&opencode).0, model_select(&model).0, "the same model");
        assert!(opencode.iter().all(|o| &*o.id.0 != "effort"), "{opencode:?}");
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_restart_ends_the_running_prompt_and_the_session_goes_on() {
    let env = TestEnv::new();
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = new_session(&cx, &env).await?.session_id;
        let slow = cx.send_request(text_prompt(&sid, "@slow 500\nlong answer that will not finish"));
        seen.until(|u| matches!(u, SessionUpdate::AgentMessageChunk(_))).await;
        env.kill_kernel();
        let ended = tokio::time::timeout(WAIT, slow.block_task()).await.expect("an answer after the kernel died")?;
        assert_eq!(ended.stop_reason, StopReason::Refusal);

        // The next prompt reconnects (a new kernel starts on demand) and works.
        let done = cx.send_request(text_prompt(&sid, "after the restart")).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        assert!(agent_text(&seen.drain()).contains("after the restart"));
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_goes_away_mid_turn_loses_nothing() {
    let env = TestEnv::new();
    // The editor quits (closes the agent's stdin) while a turn streams.
    let (result, _) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = new_session(&cx, &env).await?.session_id;
        let slow = cx.send_request(text_prompt(
            &sid,
            "@slow 40
the turn goes on without the editor",
        ));
        seen.until(|u| matches!(u, SessionUpdate::AgentMessageChunk(_))).await;
        slow.detach();
        Ok(sid)
    })
    .await;
    let sid = result.unwrap();

    // A new editor loads the session: the turn finished in the kernel, and its answer is
    // replayed (or streams live if it was still running when the load happened).
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        cx.send_request(LoadSessionRequest::new(sid.clone(), env.workspace.clone())).block_task().await?;
        // A prompt queues behind a turn still running, so once it is answered everything
        // of the first turn has been shown.
        let done = cx.send_request(text_prompt(&sid, "and then")).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        let text = agent_text(&seen.drain());
        assert!(text.contains("the turn goes on without the editor"), "{text}");
        assert!(text.contains("and then"), "{text}");
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_commands_are_offered_and_answered_by_the_agent() {
    let env = TestEnv::new();
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = new_session(&cx, &env).await?.session_id;
        let names: Vec<String> = offered_commands(&mut seen).await.into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["status", "mode", "compact", "clear", "undo"]);

        let done = cx.send_request(text_prompt(&sid, "/mode plan")).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        let updates = seen.drain();
        assert!(
            updates
                .iter()
                .any(|u| matches!(&u.update, SessionUpdate::CurrentModeUpdate(m) if &*m.current_mode_id.0 == "plan")),
            "{updates:?}"
        );
        let options = updates.iter().find_map(|u| match &u.update {
            SessionUpdate::ConfigOptionUpdate(c) => Some(c.config_options.clone()),
            _ => None,
        });
        assert_eq!(mode_select(&options.expect("a config option update")).0, "plan");
        cx.send_request(text_prompt(&sid, "/status")).block_task().await?;
        let status = agent_text(&seen.drain());
        assert!(status.contains("mode plan"), "{status}");
        assert!(status.contains("superpi-code"), "{status}");

        // /compact summarises the earlier turns; the editor's usage shows the model's window.
        cx.send_request(text_prompt(&sid, "remember the lighthouse")).block_task().await?;
        let usage = seen.drain().into_iter().find_map(|u| match u.update {
            SessionUpdate::UsageUpdate(usage) => Some(usage),
            _ => None,
        });
        assert_eq!(usage.expect("a usage update").size, 200_000, "the mock's window");
        cx.send_request(text_prompt(&sid, "/compact")).block_task().await?;
        let said = agent_text(&seen.drain());
        assert!(said.starts_with("Context compacted"), "{said}");

        // /undo: nothing yet; then a turn's file is removed again (its checkpoint).
        cx.send_request(text_prompt(&sid, "/undo")).block_task().await?;
        let said = agent_text(&seen.drain());
        assert!(said.starts_with("Nothing undone: nothing to undo"), "{said}");
        cx.send_request(text_prompt(&sid, "/mode accept-edits")).block_task().await?;
        let write = r#"@tool write {"path": "undo-me.txt", "content": "x"}"#;
        cx.send_request(text_prompt(&sid, write)).block_task().await?;
        let updates = seen.drain();
        assert!(env.workspace.join("undo-me.txt").exists(), "{updates:?}");
        cx.send_request(text_prompt(&sid, "/undo")).block_task().await?;
        let said = agent_text(&seen.drain());
        assert!(said.contains("undone; removed undo-me.txt."), "{said}");
        assert!(!env.workspace.join("undo-me.txt").exists());
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

/// The next slash commands the agent offers.
async fn offered_commands(seen: &mut Seen) -> Vec<agent_client_protocol::v1::schema::AvailableCommand> {
    let offered = seen.until(|u| matches!(u, SessionUpdate::AvailableCommandsUpdate(_))).await;
    let SessionUpdate::AvailableCommandsUpdate(commands) = offered.update else { unreachable!() };
    commands.available_commands
}

/// User-defined commands: markdown files in the config dir and the workspace's
/// `.superpi/commands/` (the workspace's wins) are offered after the agent's own, with their
/// hint, and a prompt calling one reaches the model expanded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_defined_commands_are_offered_and_expand() {
    let env = TestEnv::new();
    let mine = env.locations.config_dir.join("commands");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("review.md"), "---\ndescription: mine\n---\nuser review").unwrap();
    std::fs::write(
        mine.join("explain.md"),
        "---\ndescription: Explain a file\nargument-hint: <path>\n---\nExplain $1 to a newcomer.",
    )
    .unwrap();
    // Named like the agent's own command: the agent's wins, it is not offered twice.
    std::fs::write(mine.join("clear.md"), "not this").unwrap();
    let project = env.workspace.join(".superpi/commands");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("review.md"),
        "---\ndescription: Review the change\nargument-hint: '[focus]'\n---\nReview the branch, looking at $ARGUMENTS.",
    )
    .unwrap();
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = new_session(&cx, &env).await?.session_id;
        let commands = offered_commands(&mut seen).await;
        let names: Vec<&str> = commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["status", "mode", "compact", "clear", "undo", "explain", "review"]);
        let review = &commands[6];
        assert_eq!(review.description, "Review the change");
        let hint = serde_json::to_value(&review.input).unwrap();
        assert_eq!(hint["hint"], "[focus]", "{hint}");

        let done = cx.send_request(text_prompt(&sid, "/review error handling")).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        let said = agent_text(&seen.drain());
        assert!(said.contains("Review the branch, looking at error handling."), "{said}");
        cx.send_request(text_prompt(&sid, "/explain src/lib.rs")).block_task().await?;
        let said = agent_text(&seen.drain());
        assert!(said.contains("Explain src/lib.rs to a newcomer."), "{said}");
        // A session loaded again is told them again.
        cx.send_request(LoadSessionRequest::new(sid.clone(), env.workspace.clone())).block_task().await?;
        assert_eq!(offered_commands(&mut seen).await.len(), 7);
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

/// More sessions than a page: the list says where the next page starts, and that page holds
/// the rest; a cursor the agent never gave is refused in ACP's shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_list_pages_with_a_cursor() {
    let env = TestEnv::new();
    let kernel = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let workspace = Some(env.workspace.display().to_string());
    for _ in 0..105 {
        let open = superpi_proto::method::OpenParams { workspace: workspace.clone(), ..Default::default() };
        kernel.open(open).await.unwrap();
    }
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, _seen| {
        initialize(&cx).await?;
        let first = cx.send_request(ListSessionsRequest::new()).block_task().await?;
        assert_eq!(first.sessions.len(), 100);
        let cursor = first.next_cursor.clone().expect("a cursor while more follow");
        let rest = cx.send_request(ListSessionsRequest::new().cursor(cursor)).block_task().await?;
        assert_eq!(rest.sessions.len(), 5);
        assert_eq!(rest.next_cursor, None);
        let ids: std::collections::HashSet<String> =
            first.sessions.iter().chain(&rest.sessions).map(|s| s.session_id.to_string()).collect();
        assert_eq!(ids.len(), 105, "every session once");
        let bad = cx.send_request(ListSessionsRequest::new().cursor("made-up".to_string())).block_task().await;
        assert_eq!(bad.unwrap_err().code, ErrorCode::from(-32602));
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_resume_list_and_close() {
    let env = TestEnv::new();
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = new_session(&cx, &env).await?.session_id;
        cx.send_request(text_prompt(&sid, "remember the lighthouse")).block_task().await?;

        // The extension method forks the conversation into a new session.
        let fork = superpi_acp::wire::ForkSessionRequest { session_id: sid.clone() };
        let forked = cx.send_request(fork).block_task().await?.session_id;
        assert_ne!(forked, sid);
        seen.drain();
        cx.send_request(LoadSessionRequest::new(forked.clone(), env.workspace.clone())).block_task().await?;
        let replayed = seen.drain();
        assert!(replayed.iter().all(|u| u.session_id == forked));
        assert!(agent_text(&replayed).contains("remember the lighthouse"), "{replayed:?}");

        // Both are listed for this directory, none for another.
        let listed = cx.send_request(ListSessionsRequest::new().cwd(env.workspace.clone())).block_task().await?;
        let ids: Vec<&SessionId> = listed.sessions.iter().map(|s| &s.session_id).collect();
        assert!(ids.contains(&&sid) && ids.contains(&&forked), "{ids:?}");
        let elsewhere = cx.send_request(ListSessionsRequest::new().cwd(env.home.clone())).block_task().await?;
        assert!(elsewhere.sessions.is_empty());

        // Resume attaches without replay; close ends the session on this connection.
        cx.send_request(ResumeSessionRequest::new(sid.clone(), env.workspace.clone())).block_task().await?;
        assert!(seen.drain().iter().all(|u| !matches!(u.update, SessionUpdate::UserMessageChunk(_))));
        cx.send_request(CloseSessionRequest::new(sid.clone())).block_task().await?;
        let closed = cx.send_request(text_prompt(&sid, "still there?")).block_task().await;
        assert_eq!(closed.unwrap_err().code, ErrorCode::from(-32002));
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

/// Raw lines: a line that is not JSON gets a parse error and the agent keeps serving;
/// initialize needs no kernel; closing stdin ends the agent cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_gets_a_parse_error_and_initialize_needs_no_kernel() {
    let env = TestEnv::new();
    let mut cmd = tokio::process::Command::from(env.command(&["acp"]));
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}});
    stdin.write_all(format!("this is not json\n{init}\n").as_bytes()).await.unwrap();
    let first: serde_json::Value = serde_json::from_str(&stdout.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(first["error"]["code"], -32700, "{first}");
    let second: serde_json::Value = serde_json::from_str(&stdout.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(second["id"], 1);
    assert_eq!(second["result"]["protocolVersion"], 1);
    assert!(env.kernel_pid().is_none(), "initialize must not start a kernel");
    assert!(!env.locations.socket_path().exists());
    drop(stdin);
    let status = tokio::time::timeout(WAIT, child.wait()).await.expect("exit after stdin closed").unwrap();
    assert!(status.success(), "{status}");
}

/// The text of the completed tool calls among `updates` (their content).
fn tool_results(updates: &[agent_client_protocol::v1::schema::SessionNotification]) -> String {
    use agent_client_protocol::v1::schema::ToolCallContent;
    let mut out = String::new();
    for u in updates {
        let (status, content) = match &u.update {
            SessionUpdate::ToolCallUpdate(t) => (t.fields.status, t.fields.content.clone().unwrap_or_default()),
            SessionUpdate::ToolCall(t) => (Some(t.status), t.content.clone()),
            _ => continue,
        };
        if status != Some(ToolCallStatus::Completed) {
            continue;
        }
        for c in content {
            if let ToolCallContent::Content(c) = c
                && let ContentBlock::Text(t) = c.content
            {
                out.push_str(&t.text);
            }
        }
    }
    out
}

/// session/new with an MCP server shaped as Zed sends it (stdio, env as name/value pairs):
/// the kernel starts it and its tool answers a prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editors_mcp_servers_are_attached_to_the_session() {
    use agent_client_protocol::v1::schema::{EnvVariable, McpServer, McpServerStdio};
    let env = TestEnv::new();
    let fixture = superpi_tests::mcp_fixture_bin();
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let fix = McpServerStdio::new("fix", fixture.clone()).env(vec![EnvVariable::new("FIXTURE_MODE", "zed")]);
        let request = NewSessionRequest::new(env.workspace.clone()).mcp_servers(vec![McpServer::Stdio(fix)]);
        let shape = serde_json::to_value(&request).unwrap();
        assert_eq!(
            shape["mcpServers"][0],
            json!({"name": "fix", "command": fixture, "args": [], "env": [{"name": "FIXTURE_MODE", "value": "zed"}]})
        );
        let session = cx.send_request(request).block_task().await?;
        let sid = session.session_id.clone();
        let done =
            cx.send_request(text_prompt(&sid, r#"@tool mcp__fix__echo {"text":"from zed"}"#)).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        let updates = seen.drain();
        assert!(tool_results(&updates).contains("echo: from zed"), "{updates:?}");
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

/// session/new with an HTTP MCP server (superpi's own gateway at `/mcp`, behind a token the
/// editor sends as a header) and an SSE one (the fixture's older transport): both attached,
/// and each one's tool answers a prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editors_http_and_sse_mcp_servers_are_attached_with_their_headers() {
    use agent_client_protocol::v1::schema::{HttpHeader, McpServer, McpServerHttp, McpServerSse};
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("marker.txt"), "here").unwrap();
    let token = "the-editors-token";
    let (_gateway, base) = env.spawn_http(&["gateway", "--port", "0"], &[("SUPERPI_GATEWAY_TOKEN", token)]);
    let (_sse, sse_url) = superpi_tests::mcp_sse_fixture();
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        let init = initialize(&cx).await?;
        let caps = &init.agent_capabilities.mcp_capabilities;
        assert!(caps.http && caps.sse, "{caps:?}");
        let http = McpServerHttp::new("gw", format!("{base}/mcp"))
            .headers(vec![HttpHeader::new("Authorization", format!("Bearer {token}"))]);
        let sse = McpServerSse::new("old", sse_url.clone()).headers(vec![HttpHeader::new("X-Editor", "zed")]);
        let request =
            NewSessionRequest::new(env.workspace.clone()).mcp_servers(vec![McpServer::Http(http), McpServer::Sse(sse)]);
        let session = cx.send_request(request).block_task().await?;
        let sid = session.session_id.clone();
        let prompt = "@tool mcp__gw__ls {\"path\":\".\"}\n@tool mcp__old__header {\"name\":\"x-editor\"}";
        let done = cx.send_request(text_prompt(&sid, prompt)).block_task().await?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        let results = tool_results(&seen.drain());
        assert!(results.contains("marker.txt"), "the HTTP server's tool: {results}");
        assert!(results.contains("header: zed"), "the SSE server's tool, with the header: {results}");
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

/// How the kernel settled the file-read questions of a conversation (`ui_resolved` outcomes),
/// read back from its stored events.
async fn read_outcomes(env: &TestEnv, sid: &SessionId) -> Vec<serde_json::Value> {
    let conversation_id: i64 = sid.0.trim_start_matches("conv-").parse().unwrap();
    let client = superpi_client::KernelClient::connect(&env.connect_options("acp-test")).await.unwrap();
    let mut sub = client.watch(superpi_proto::method::WatchParams::after(conversation_id, 0)).await.unwrap();
    let mut outcomes = Vec::new();
    // The stored history replays up to the watch's head.
    let head = sub.head_seq();
    let mut seq = 0;
    while seq < head {
        let event = tokio::time::timeout(WAIT, sub.next()).await.expect("replay in time").expect("open");
        if let superpi_proto::EventBody::UiResolved { outcome, .. } = &event.body {
            outcomes.push(outcome.clone());
        }
        seq = seq.max(event.seq);
    }
    outcomes
}

/// A `read` takes an unsaved editor buffer's text (`unsaved_only`, the default, and
/// `always`), the disk's with `--editor-buffers never`; when the buffer equals the disk,
/// `unsaved_only` asks the editor and answers `use_disk`. The question never shows in the
/// editor as a tool call or a permission request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_see_unsaved_editor_buffers_as_the_mode_says() {
    let env = TestEnv::new();
    let note = env.workspace.join("note.txt");
    std::fs::write(&note, "on disk\n").unwrap();
    let unsaved = common::Buffers::from([(note.clone(), "UNSAVED EDITOR TEXT\n".to_string())]);
    let saved = common::Buffers::from([(note.clone(), "on disk\n".to_string())]);
    let cases = [
        // (mode, the editor's buffer, the text the read returns, editor reads, outcome)
        // (the kernel records `editor` for a content answer, `disk` for use_disk, `timeout`
        // for none)
        (None, &unsaved, "UNSAVED EDITOR TEXT", 1, json!({"outcome": "editor"})),
        (Some("always"), &unsaved, "UNSAVED EDITOR TEXT", 1, json!({"outcome": "editor"})),
        (Some("never"), &unsaved, "on disk", 0, serde_json::Value::Null),
        (Some("unsaved_only"), &saved, "on disk", 1, json!({"outcome": "disk"})),
    ];
    for (mode, buffers, expected, asked, outcome) in cases {
        let mut extra = Vec::new();
        if let Some(mode) = mode {
            extra.push(("SUPERPI_ACP_EDITOR_BUFFERS", mode));
        }
        let (result, lines) =
            common::with_editor_buffers(&env, &extra, Answer::Dismiss, buffers.clone(), async |cx, mut seen| {
                initialize_reading(&cx).await?;
                let sid = new_session(&cx, &env).await?.session_id;
                // A first turn starts this session's watch (see the permission tests).
                cx.send_request(text_prompt(&sid, "warm up")).block_task().await?;
                seen.drain();
                let prompt = "@tool read {\"path\": \"note.txt\"}";
                let done = cx.send_request(text_prompt(&sid, prompt)).block_task().await?;
                assert_eq!(done.stop_reason, StopReason::EndTurn);
                let updates = seen.drain();
                let results = tool_results(&updates);
                assert!(results.contains(expected), "{mode:?}: {results:?} in {updates:?}");
                // One tool call (the read), no question.
                let calls: std::collections::HashSet<String> = updates
                    .iter()
                    .filter_map(|u| match &u.update {
                        SessionUpdate::ToolCall(t) => Some(t.tool_call_id.0.to_string()),
                        SessionUpdate::ToolCallUpdate(t) => Some(t.tool_call_id.0.to_string()),
                        _ => None,
                    })
                    .collect();
                assert_eq!(calls.len(), 1, "{updates:?}");
                assert!(seen.permissions.try_recv().is_err(), "a read asks no permission");
                let mut reads = Vec::new();
                while let Ok(r) = seen.reads.try_recv() {
                    reads.push(r);
                }
                assert_eq!(reads.len(), asked, "{mode:?}: {reads:?}");
                if let Some(read) = reads.first() {
                    assert_eq!(read.path, note);
                    assert_eq!((read.line, read.limit), (None, None), "the whole file");
                    assert_eq!(read.session_id, sid);
                }
                Ok(sid)
            })
            .await;
        let sid = result.unwrap();
        assert_jsonrpc_only(&lines);
        let outcomes = read_outcomes(&env, &sid).await;
        if outcome.is_null() {
            assert!(outcomes.is_empty(), "{mode:?}: no question without a reader: {outcomes:?}");
        } else {
            assert_eq!(outcomes, vec![outcome], "{mode:?}");
        }
    }
}

/// Every kind of malformed line, each followed by `initialize` on the same connection: each
/// gets its JSON-RPC error (or none) and the agent keeps serving. One line of invalid UTF-8
/// used to end the agent.
#[test]
fn every_kind_of_malformed_line_is_answered_and_serving_goes_on() {
    use superpi_tests::bad_input::{json_rpc_lines, run_stdio_battery};
    run_stdio_battery(
        &TestEnv::new(),
        &["acp"],
        &[],
        &json_rpc_lines(superpi_acp::server::MAX_LINE, "session/new", json!({"cwd": 7, "mcpServers": {}})),
        |id| json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": 1}}),
        |answer| assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}"),
    );
}

/// Claude Code (from the backends' test cache) behind ACP: a session with `_meta.harness =
/// claude-code` runs a turn in which Claude Code asks to run a command; its question reaches
/// the editor as `session/request_permission`, the editor allows it, Claude Code runs it (in
/// superpi's confinement), and the turn's tool call and answer stream as session updates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_code_turn_asks_the_editor_and_runs_its_tool_call() {
    use superpi_providers::testing::answers::Answer as Scripted;
    use superpi_providers::testing::fakes::AnthropicFake;
    let Some(program) = superpi_backends::discover::test_install(superpi_backends::BackendKind::ClaudeCode) else {
        eprintln!("SKIPPED: Claude Code is not installed in the test cache (.ci/run installs it)");
        return;
    };
    let env = TestEnv::new();
    let file = format!("[backends.claude-code]\nprogram = \"{}\"\n", program.display());
    std::fs::write(env.locations.config_dir.join("harnesses.toml"), file).unwrap();
    let command = "/usr/bin/python3 -c \"open('from-acp.txt','w').write('yes')\"";
    let fake = AnthropicFake::start(vec![
        Scripted::tool_call("Bash", json!({"command": command, "description": "write a file"})),
        Scripted::text("wrote from-acp.txt"),
    ])
    .await
    .unwrap();
    fake.accept_betas();
    let vars = fake.env();
    let extra: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (result, lines) = with_editor_env(&env, &extra, Answer::Select("allow_once"), async |cx, mut seen| {
        initialize(&cx).await?;
        let mut request = NewSessionRequest::new(env.workspace.clone());
        request.meta = serde_json::from_value(json!({"harness": "claude-code"})).ok();
        let session = cx.send_request(request).block_task().await?;
        let sid = session.session_id.clone();
        let done = tokio::time::timeout(WAIT, cx.send_request(text_prompt(&sid, "write the file")).block_task())
            .await
            .expect("the turn in time")?;
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        let asked = seen.permissions.try_recv().expect("Claude Code's question reached the editor");
        assert!(format!("{asked:?}").contains("from-acp.txt"), "{asked:?}");
        let updates = seen.drain();
        assert!(agent_text(&updates).contains("wrote from-acp.txt"), "{updates:?}");
        let completed = updates.iter().any(|u| {
            matches!(&u.update, SessionUpdate::ToolCallUpdate(t) if t.fields.status == Some(ToolCallStatus::Completed))
        });
        assert!(completed, "no completed tool call in {updates:?}");
        Ok(sid)
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
    assert_eq!(std::fs::read_to_string(env.workspace.join("from-acp.txt")).unwrap(), "yes");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
}

/// session/load replays a conversation longer than one history page: every prompt and
/// answer once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_replays_a_history_of_several_pages_in_order() {
    let env = TestEnv::new();
    let turns = 3;
    let conv = superpi_tests::pages::multi_page_conversation(&env, "test", None, turns).await;
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        initialize(&cx).await?;
        let sid = SessionId::new(format!("conv-{conv}"));
        cx.send_request(LoadSessionRequest::new(sid.clone(), env.workspace.clone())).block_task().await?;
        let said: Vec<(String, String)> = seen
            .drain()
            .into_iter()
            .filter_map(|u| {
                let (role, chunk) = match u.update {
                    SessionUpdate::UserMessageChunk(c) => ("user", c),
                    SessionUpdate::AgentMessageChunk(c) => ("assistant", c),
                    _ => return None,
                };
                match chunk.content {
                    ContentBlock::Text(t) => Some((role.to_string(), t.text)),
                    _ => None,
                }
            })
            .collect();
        superpi_tests::pages::assert_replayed(&said, turns);
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
}

/// The stable additions of the schema: additionalDirectories (writable like the workspace,
/// and nothing else outside it), systemPrompt (after the harness's prompt: the mock model's
/// `@system` echoes the end of what it got), usage updates, logout, and session/delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extra_directories_system_prompt_logout_and_delete() {
    use agent_client_protocol::v1::schema::{DeleteSessionRequest, LogoutRequest, SystemPrompt};
    let env = TestEnv::new();
    let docs = env.root.path().join("docs");
    let other = env.root.path().join("other");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let (result, lines) = with_editor(&env, Answer::Dismiss, async |cx, mut seen| {
        let init = initialize(&cx).await?;
        let caps = &init.agent_capabilities.session_capabilities;
        assert!(caps.delete.is_some() && caps.additional_directories.is_some() && caps.system_prompt.is_some());
        let instructions = "Always sign your answers as the lighthouse keeper.";
        let new = NewSessionRequest::new(env.workspace.clone())
            .additional_directories(vec![docs.clone()])
            .system_prompt(SystemPrompt::new(vec![ContentBlock::Text(TextContent::new(instructions))]));
        let sid = cx.send_request(new).block_task().await?.session_id;

        cx.send_request(text_prompt(&sid, "@system")).block_task().await?;
        let updates = seen.drain();
        assert_eq!(agent_text(&updates).trim(), instructions, "{updates:?}");
        assert!(updates.iter().any(|u| matches!(u.update, SessionUpdate::UsageUpdate(_))), "a usage update");

        // A write in the extra directory goes ahead (accept-edits); one beside it is refused.
        let inside = docs.join("notes.md");
        let prompt = format!("@tool write {}", json!({"path": inside, "content": "kept"}));
        cx.send_request(text_prompt(&sid, &prompt)).block_task().await?;
        let outside = other.join("notes.md");
        let prompt = format!("@tool write {}", json!({"path": outside, "content": "lost"}));
        cx.send_request(text_prompt(&sid, &prompt)).block_task().await?;
        let refused = agent_text(&seen.drain());
        assert!(refused.contains("outside the workspace"), "{refused}");

        // A directory the sandbox would refuse as a workspace is refused here too.
        let bad = NewSessionRequest::new(env.workspace.clone()).additional_directories(vec!["/".into()]);
        assert_eq!(cx.send_request(bad).block_task().await.unwrap_err().code, ErrorCode::from(-32602));
        // Only `append` is served.
        let replace = SystemPrompt::new(vec![ContentBlock::Text(TextContent::new("x"))])
            .mode(agent_client_protocol::v1::schema::SystemPromptMode::Override);
        let bad = NewSessionRequest::new(env.workspace.clone()).system_prompt(replace);
        assert_eq!(cx.send_request(bad).block_task().await.unwrap_err().code, ErrorCode::from(-32602));

        cx.send_request(LogoutRequest::new()).block_task().await?;
        cx.send_request(DeleteSessionRequest::new(sid.clone())).block_task().await?;
        let gone = cx.send_request(LoadSessionRequest::new(sid.clone(), env.workspace.clone())).block_task().await;
        assert_eq!(gone.unwrap_err().code, ErrorCode::from(-32002));
        let listed = cx.send_request(ListSessionsRequest::new()).block_task().await?;
        assert!(listed.sessions.iter().all(|s| s.session_id != sid));
        Ok(())
    })
    .await;
    result.unwrap();
    assert_jsonrpc_only(&lines);
    assert_eq!(std::fs::read_to_string(docs.join("notes.md")).unwrap(), "kept");
    assert!(!other.join("notes.md").exists());
}
