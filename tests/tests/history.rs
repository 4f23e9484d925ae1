//! End to end: history that is always valid. A turn that ends without a result for one of its
//! tool calls (the kernel killed while the tool runs, a cancel, a provider failure after a tool
//! call block closed) leaves a stored error result for it, so `session.history`, the replay and
//! the next model request agree, and the next request pairs every call with its result.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::time::{Duration, Instant};

use serde_json::Value;
use superpi_client::{KernelClient, Subscription};
use superpi_proto::method::WatchParams;
use superpi_proto::{ContentBlock, Entry, EntryKind, Event, EventBody};
use superpi_providers::testing::{ReplayServer, Reply, recorded};
use superpi_tests::{TestEnv, open_and_watch, turn_events};

async fn connect(env: &TestEnv) -> KernelClient {
    KernelClient::connect(&env.connect_options("test")).await.expect("connect")
}

/// The next event that satisfies `pred` (30 s at most).
async fn wait_for(sub: &mut Subscription, pred: impl Fn(&Event) -> bool) -> Event {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = tokio::time::timeout(left, sub.next()).await.expect("the event in time").expect("open");
        if pred(&event) {
            return event;
        }
    }
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
    WatchParams { conversation_id, from_seq: Some(0), window: None, interactive: false, reads_files: false }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_killed_while_a_tool_runs_leaves_a_result_for_the_call_and_the_next_turn_succeeds() {
    let env = TestEnv::new();
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    let turn = client.submit_text(conv, "@tool bash {\"command\": \"sleep 30\"}").await.unwrap();
    let started = wait_for(&mut sub, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
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
    assert_eq!(output, "interrupted: the kernel stopped before this tool finished");

    // The replay shows the call finished with an error, and the turn ended.
    let mut replay = client.watch(watch_from_start(conv)).await.unwrap();
    let completed = wait_for(&mut replay, |e| matches!(e.body, EventBody::ToolCompleted { .. })).await;
    assert!(
        matches!(&completed.body, EventBody::ToolCompleted { tool_call_id: id, is_error: true, .. } if *id == tool_call_id)
    );
    let end = wait_for(&mut replay, |e| e.body.is_turn_end()).await;
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
    wait_for(&mut sub, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
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

/// An OpenAI stream that calls `bash` with `command`.
fn openai_bash_call(call_id: &str, command: &str) -> Vec<u8> {
    let arguments = serde_json::json!({ "command": command }).to_string();
    let first = serde_json::json!({
        "id": "chatcmpl-h", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": call_id, "type": "function", "function": {"name": "bash", "arguments": arguments}}
        ]}, "finish_reason": null}]
    });
    let last = serde_json::json!({
        "id": "chatcmpl-h", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]
    });
    format!("data: {first}\n\ndata: {last}\n\ndata: [DONE]\n\n").into_bytes()
}

/// OpenAI's rule: an assistant message with `tool_calls` is followed by one `tool` message per
/// call id, before any other message.
fn assert_openai_pairing(body: &Value) {
    let messages = body["messages"].as_array().expect("messages");
    for (i, message) in messages.iter().enumerate() {
        let Some(calls) = message["tool_calls"].as_array() else { continue };
        let ids: Vec<&str> = calls.iter().map(|c| c["id"].as_str().unwrap()).collect();
        let answers: Vec<&str> = messages[i + 1..]
            .iter()
            .take_while(|m| m["role"] == "tool")
            .map(|m| m["tool_call_id"].as_str().unwrap())
            .collect();
        let mut sorted = answers.clone();
        sorted.sort();
        let mut expected = ids.clone();
        expected.sort();
        assert_eq!(sorted, expected, "tool_calls {ids:?} answered by {answers:?} in {messages:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_kill_during_an_openai_tool_call_the_next_request_pairs_the_call_with_a_result() {
    let server = ReplayServer::start(vec![
        Reply::stream(&openai_bash_call("call_sleep", "sleep 30"), 64),
        Reply::stream(&recorded("openai_text.sse").unwrap(), 64),
    ])
    .await
    .unwrap();
    let env = TestEnv::new();
    let with_openai = |args: &[&str]| {
        let mut cmd = env.command(args);
        cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.base)).env("OPENAI_API_KEY", "sk-test");
        tokio::process::Command::from(cmd)
    };
    let mut first = with_openai(&["run", "--model", "gpt-4o-mini", "--mode", "auto", "sleep a while"]);
    let first = first.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();

    // Watch the conversation the run opens until its tool runs (the kernel is the run's: the
    // watcher starts none).
    let mut opts = env.connect_options("test");
    opts.autostart = false;
    let deadline = Instant::now() + Duration::from_secs(30);
    let (watcher, conv) = loop {
        if let Ok(watcher) = KernelClient::connect(&opts).await
            && let Some(conv) = watcher.list().await.unwrap().first()
        {
            break (watcher.clone(), conv.conversation_id);
        }
        assert!(Instant::now() < deadline, "the run opened no conversation");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut sub = watcher.watch(watch_from_start(conv)).await.unwrap();
    wait_for(&mut sub, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
    env.kill_kernel();
    let out = first.wait_with_output().await.unwrap();
    assert!(!out.status.success(), "the run lost its kernel");
    drop(sub);
    drop(watcher);

    let out = with_openai(&["run", "--conversation", &conv.to_string(), "go on"]).output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Hello there, wörld ✓");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let body = requests[1].json().unwrap();
    assert_openai_pairing(&body);
    let messages = body["messages"].as_array().unwrap();
    let result = messages.iter().find(|m| m["role"] == "tool").expect("a tool message");
    assert_eq!(result["tool_call_id"], "call_sleep");
    assert!(result["content"].as_str().unwrap().contains("interrupted"), "{result}");
    assert_eq!(messages.last().unwrap()["content"], "go on");
}

fn sse(events: &[Value]) -> Vec<u8> {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect::<String>()
        .into_bytes()
}

fn anthropic_start() -> Value {
    serde_json::json!({"type": "message_start", "message": {"id": "msg_h", "type": "message", "role": "assistant",
        "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 1}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_failure_after_a_closed_tool_call_block_leaves_a_result_and_the_next_request_pairs_it() {
    // The stream closes a tool_use block, then the connection is cut before the message ends.
    let cut = sse(&[
        anthropic_start(),
        serde_json::json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_h1", "name": "ls", "input": {}}}),
        serde_json::json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \".\"}"}}),
        serde_json::json!({"type": "content_block_stop", "index": 0}),
    ]);
    let answer = sse(&[
        anthropic_start(),
        serde_json::json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Still here."}}),
        serde_json::json!({"type": "content_block_stop", "index": 0}),
        serde_json::json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": {"output_tokens": 3}}),
        serde_json::json!({"type": "message_stop"}),
    ]);
    let server = ReplayServer::start(vec![Reply { cut: true, ..Reply::stream(&cut, 64) }, Reply::stream(&answer, 64)])
        .await
        .unwrap();
    let env = TestEnv::new();
    let run = |args: &[&str]| {
        let mut cmd = env.command(args);
        cmd.env("ANTHROPIC_BASE_URL", &server.base).env("ANTHROPIC_API_KEY", "sk-ant-test");
        cmd.output().unwrap()
    };
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
    let body = server.requests()[1].json().unwrap();
    // Anthropic's rule: each tool_use is answered by a tool_result in the next (user) message.
    let messages = body["messages"].as_array().unwrap();
    let at = messages
        .iter()
        .position(|m| m["content"].as_array().is_some_and(|c| c.iter().any(|b| b["type"] == "tool_use")))
        .expect("the stored tool_use is sent");
    let next = &messages[at + 1];
    assert_eq!(next["role"], "user");
    let result = next["content"].as_array().unwrap().iter().find(|b| b["type"] == "tool_result").expect("tool_result");
    assert_eq!(result["tool_use_id"], "toolu_h1");
    assert_eq!(result["is_error"], true);
}
