//! End to end: history that is always valid. A turn that ends without a result for one of its
//! tool calls (the kernel killed while the tool runs, a cancel, a provider failure after a tool
//! call block closed) leaves a stored error result for it, so `session.history`, the replay and
//! the next model request agree, and the next request pairs every call with its result.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use serde_json::Value;
use superpi_client::KernelClient;
use superpi_proto::method::WatchParams;
use superpi_proto::{ContentBlock, Entry, EntryKind, EventBody};
use superpi_providers::testing::Reply;
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{AnthropicFake, FakeServer, GeminiFake, OpenAiFake, ResponsesFake};
use superpi_tests::{TestEnv, next_event, open_and_watch, turn_events, wait};

async fn connect(env: &TestEnv) -> KernelClient {
    KernelClient::connect(&env.connect_options("test")).await.expect("connect")
}

/// Every stored tool call is answered by a result right after its assistant message (before
/// any other message), and every result answers a call.
fn assert_paired(entries: &[Entry]) {
    let mut open: Vec<String> = Vec::new();
    for entry in entries {
        match entry.kind {
            EntryKind::ToolResult => {
                for block in &entry.message.content {
                    if let ContentBlock::ToolResult { tool_call_id, .. } = block {
                        let at = open.iter().position(|id| id == tool_call_id);
                        assert!(at.is_some(), "result {tool_call_id} answers no open call: {entries:#?}");
                        open.remove(at.unwrap());
                    }
                }
            }
            _ => {
                assert!(open.is_empty(), "calls {open:?} have no result before entry {}: {entries:#?}", entry.seq);
                for block in &entry.message.content {
                    if let ContentBlock::ToolCall { id, .. } = block {
                        open.push(id.clone());
                    }
                }
            }
        }
    }
    assert!(open.is_empty(), "calls {open:?} have no result: {entries:#?}");
}

fn result_of<'a>(entries: &'a [Entry], call_id: &str) -> (&'a str, bool) {
    entries
        .iter()
        .flat_map(|e| &e.message.content)
        .find_map(|b| match b {
            ContentBlock::ToolResult { tool_call_id, output, is_error, .. } if tool_call_id == call_id => {
                Some((output.as_str(), *is_error))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call_id}: {entries:#?}"))
}

fn watch_from_start(conversation_id: i64) -> WatchParams {
    WatchParams::after(conversation_id, 0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_killed_while_a_tool_runs_leaves_a_result_for_the_call_and_the_next_turn_succeeds() {
    let env = TestEnv::new();
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    let turn = client.submit_text(conv, "@tool bash {\"command\": \"sleep 30\"}").await.unwrap();
    let started = next_event(&mut sub, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
    let EventBody::ToolStarted { tool_call_id, .. } = started.body else { unreachable!() };
    env.kill_kernel();
    drop(sub);
    drop(client);

    // A new client autostarts a new kernel, which recovers before it listens.
    let client = connect(&env).await;
    let history = client.history(conv).await.unwrap().entries;
    let kinds: Vec<&str> = history.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["user", "assistant", "tool_result"]);
    assert_paired(&history);
    let (output, is_error) = result_of(&history, &tool_call_id);
    assert!(is_error);
    assert!(output.starts_with("interrupted: the kernel stopped while this tool ran; it may have run"), "{output}");

    // The replay shows the call finished with an error, and the turn ended.
    let mut replay = client.watch(watch_from_start(conv)).await.unwrap();
    let completed = next_event(&mut replay, |e| matches!(e.body, EventBody::ToolCompleted { .. })).await;
    assert!(
        matches!(&completed.body, EventBody::ToolCompleted { tool_call_id: id, is_error: true, .. } if *id == tool_call_id)
    );
    let end = next_event(&mut replay, |e| e.body.is_turn_end()).await;
    assert_eq!(end.turn_id, Some(turn.turn_id));
    assert!(matches!(&end.body, EventBody::TurnError { error } if error.contains("interrupted")));

    let next = client.submit_text(conv, "still here").await.unwrap();
    let events = turn_events(&mut replay, next.turn_id).await;
    assert!(
        matches!(&events.last().unwrap().body, EventBody::TurnCompleted { result: Some(r), .. } if r == "still here")
    );
    assert_paired(&client.history(conv).await.unwrap().entries);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_a_tool_leaves_a_result_for_every_call_of_the_turn() {
    let env = TestEnv::new();
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    let turn =
        client.submit_text(conv, "@tool bash {\"command\": \"sleep 30\"}\n@tool ls {\"path\": \".\"}").await.unwrap();
    next_event(&mut sub, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
    assert_eq!(client.cancel(conv).await.unwrap()["cancelled"], true);
    let events = turn_events(&mut sub, turn.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCancelled {}));
    let completed: Vec<(&str, bool)> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ToolCompleted { name, is_error, .. } => Some((name.as_str(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(completed, [("bash", true), ("ls", true)], "both calls end before the turn does");

    let history = client.history(conv).await.unwrap().entries;
    assert_paired(&history);
    let ls_call = history
        .iter()
        .flat_map(|e| &e.message.content)
        .find_map(|b| match b {
            ContentBlock::ToolCall { id, name, .. } if name == "ls" => Some(id.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(result_of(&history, &ls_call), ("cancelled by the user before this tool finished", true));

    let next = client.submit_text(conv, "after the cancel").await.unwrap();
    let events = turn_events(&mut sub, next.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }));
}

/// The kernel is killed while the tool of the model's first answer runs; the next `superpi
/// run` starts a new kernel, which stores a result for the call, and its request must pass the
/// vendor's rules (every call answered by a result).
async fn kill_during_a_tool_then_continue(fake: FakeServer, model: &str) {
    let env = TestEnv::new();
    let with_fake = |args: &[&str]| {
        let mut cmd = env.command(args);
        cmd.envs(fake.env());
        tokio::process::Command::from(cmd)
    };
    let mut first = with_fake(&["run", "--model", model, "--mode", "auto", "sleep a while"]);
    let first = first.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();

    // Watch the conversation the run opens until its tool runs (the kernel is the run's: the
    // watcher starts none).
    let mut opts = env.connect_options("test");
    opts.autostart = false;
    let (watcher, conv) = wait::until(&format!("{model}: the run opens a conversation"), wait::PATIENCE, async || {
        let watcher = KernelClient::connect(&opts).await.ok()?;
        let conv = watcher.list().await.unwrap().first()?.conversation_id;
        Some((watcher, conv))
    })
    .await;
    let mut sub = watcher.watch(watch_from_start(conv)).await.unwrap();
    let started =
        next_event(&mut sub, |e| matches!(e.body, EventBody::ToolStarted { .. }) || e.body.is_turn_end()).await;
    assert!(
        matches!(started.body, EventBody::ToolStarted { .. }),
        "{model}: the turn ended before its tool ran: {:?}; refused: {:?}",
        started.body,
        fake.rejections()
    );
    env.kill_kernel();
    let out = first.wait_with_output().await.unwrap();
    assert!(!out.status.success(), "{model}: the run lost its kernel");
    drop(sub);
    drop(watcher);

    let out = with_fake(&["run", "--conversation", &conv.to_string(), "go on"]).output().await.unwrap();
    assert!(out.status.success(), "{model}: stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "resumed", "{model}");
    assert_eq!(fake.rejections(), vec![], "{model}");
    let accepted = fake.accepted();
    assert_eq!(accepted.len(), 2, "{model}");
    assert!(accepted[1].to_string().contains("interrupted: the kernel stopped"), "{model}: {}", accepted[1]);
}

fn crash_script() -> Vec<Answer> {
    vec![Answer::tool_call("bash", serde_json::json!({"command": "sleep 30"})), Answer::text("resumed")]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_kill_during_an_openai_tool_call_the_next_request_passes_openais_rules() {
    kill_during_a_tool_then_continue(OpenAiFake::start(crash_script()).await.unwrap(), "gpt-4o-mini").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_kill_during_an_anthropic_tool_call_the_next_request_passes_anthropics_rules() {
    kill_during_a_tool_then_continue(AnthropicFake::start(crash_script()).await.unwrap(), "claude-sonnet-4-5").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_kill_during_a_gemini_tool_call_the_next_request_passes_geminis_rules() {
    kill_during_a_tool_then_continue(GeminiFake::start(crash_script()).await.unwrap(), "gemini-2.5-flash").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_kill_during_a_responses_tool_call_the_next_request_passes_the_responses_rules() {
    let fake = ResponsesFake::start(crash_script()).await.unwrap();
    // A reasoning model's first answer comes with an encrypted reasoning item, which the next
    // request must carry back whole beside the call and its stored result.
    fake.set_reasoning("Sleeping first.");
    kill_during_a_tool_then_continue(fake, "gpt-5-codex").await;
}

fn sse(events: &[Value]) -> Vec<u8> {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect::<String>()
        .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_failure_after_a_closed_tool_call_block_leaves_a_result_and_the_next_request_pairs_it() {
    // The stream closes a tool_use block, then the connection is cut before the message ends.
    let cut = sse(&[
        serde_json::json!({"type": "message_start", "message": {"id": "msg_h", "type": "message",
            "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        serde_json::json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_h1", "name": "ls", "input": {}}}),
        serde_json::json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \".\"}"}}),
        serde_json::json!({"type": "content_block_stop", "index": 0}),
    ]);
    let fake = AnthropicFake::start(vec![
        Answer::Reply(Reply { cut: true, ..Reply::stream(&cut, 64) }),
        Answer::text("Still here."),
    ])
    .await
    .unwrap();
    let env = TestEnv::new();
    let run = |args: &[&str]| env.command(args).envs(fake.env()).output().unwrap();
    let out = run(&["run", "--model", "claude-sonnet-4-5", "--mode", "auto", "list files"]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", String::from_utf8_lossy(&out.stderr));

    let client = connect(&env).await;
    let conv = client.list().await.unwrap()[0].conversation_id;
    let history = client.history(conv).await.unwrap().entries;
    assert_paired(&history);
    assert_eq!(result_of(&history, "toolu_h1"), ("not run: the turn failed before this tool ran", true));

    let out = run(&["run", "-c", "go on"]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Still here.");
    assert_eq!(fake.rejections(), vec![]);
    assert!(fake.accepted()[1].to_string().contains("toolu_h1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_cut_between_a_call_and_its_result_gets_a_result_for_the_call() {
    let env = TestEnv::new();
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    let turn = client.submit_text(conv, "@tool ls {\"path\": \".\"}").await.unwrap();
    turn_events(&mut sub, turn.turn_id).await;
    let history = client.history(conv).await.unwrap().entries;
    let call_seq = history.iter().find(|e| e.kind == EntryKind::Assistant).unwrap().seq;

    let fork = client.fork(conv, Some(call_seq)).await.unwrap().conversation_id;
    let forked = client.history(fork).await.unwrap().entries;
    let kinds: Vec<&str> = forked.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["user", "assistant", "tool_result"]);
    assert_paired(&forked);
    let call_id = match &forked[1].message.content[..] {
        [ContentBlock::ToolCall { id, .. }] => id.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(result_of(&forked, &call_id), ("not run: the conversation was forked before this tool finished", true));
    // The source is untouched, and the fork goes on.
    assert_eq!(client.history(conv).await.unwrap().entries, history);
    let mut fork_sub = client.watch(watch_from_start(fork)).await.unwrap();
    let next = client.submit_text(fork, "in the fork").await.unwrap();
    let events = turn_events(&mut fork_sub, next.turn_id).await;
    assert!(
        matches!(&events.last().unwrap().body, EventBody::TurnCompleted { result: Some(r), .. } if r == "in the fork")
    );
}
