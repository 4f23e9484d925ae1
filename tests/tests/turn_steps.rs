//! End to end: what a person sees and says while a turn runs. The plan tool's updates reach
//! watchers as `plan_updated`; a tool call's arguments stream as `partial_args`; a prompt
//! marked `steer` joins the running turn before its next model request. Each is driven through
//! Anthropic's fake, which refuses any request the real API would refuse, and the mock.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use serde_json::{Value, json};
use superpi_client::{KernelClient, Subscription};
use superpi_proto::method::{OpenParams, SubmitParams, WatchParams};
use superpi_proto::{ContentBlock, EntryKind, Event, EventBody, PlanEntry, Role};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{AnthropicFake, FakeServer};
use superpi_tests::{TestEnv, next_event, open_and_watch, turn_events};

const MODEL: &str = "claude-sonnet-4-5";

async fn connect(env: &TestEnv) -> KernelClient {
    KernelClient::connect(&env.connect_options("test")).await.expect("connect")
}

/// A kernel whose model `claude-sonnet-4-5` is Anthropic's fake, and a conversation on it in
/// `auto`, watched.
async fn on_fake(env: &TestEnv, fake: &FakeServer) -> (KernelClient, i64, Subscription) {
    let key = fake.env().into_iter().find(|(k, _)| k == "ANTHROPIC_API_KEY").unwrap().1;
    std::fs::write(
        env.locations.config_dir.join("providers.toml"),
        format!(
            "[[providers.models]]\nname = \"{MODEL}\"\nprovider = \"anthropic\"\nbase_url = \"{}\"\napi_key = \"{key}\"\n",
            fake.base_url(superpi_providers::testing::rules::Vendor::Anthropic)
        ),
    )
    .unwrap();
    let client = connect(env).await;
    let conv = client
        .open(OpenParams {
            workspace: Some(env.workspace.display().to_string()),
            mode: Some("auto".into()),
            model: Some(MODEL.into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .conversation_id;
    let params = WatchParams::live(conv);
    let sub = client.watch(params).await.unwrap();
    (client, conv, sub)
}

fn plan() -> Value {
    json!({"explanation": "found it", "plan": [
        {"step": "read the code", "status": "completed"},
        {"step": "fix the bug", "status": "in_progress"},
        {"step": "run the tests", "status": "pending"}
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_plan_publishes_the_plan_and_is_a_turns_tool_only() {
    let fake =
        AnthropicFake::start(vec![Answer::tool_call("update_plan", plan()), Answer::text("Planned.")]).await.unwrap();
    let env = TestEnv::new();
    let (client, conv, mut sub) = on_fake(&env, &fake).await;
    let turn = client.submit_text(conv, "plan the fix").await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    assert_eq!(fake.rejections(), vec![]);
    let plans: Vec<&Event> = events.iter().filter(|e| matches!(e.body, EventBody::PlanUpdated { .. })).collect();
    assert_eq!(plans.len(), 1, "{events:?}");
    assert_eq!(plans[0].turn_id, Some(turn.turn_id));
    let entry = |id: &str, text: &str, completed| PlanEntry { id: id.into(), text: text.into(), completed };
    assert_eq!(
        plans[0].body,
        EventBody::PlanUpdated {
            entries: vec![
                entry("1", "read the code", true),
                entry("2", "fix the bug", false),
                entry("3", "run the tests", false)
            ]
        }
    );
    let result = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolCompleted { name, is_error, output, .. } if name == "update_plan" => {
                Some((*is_error, output))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(result, (false, &json!("Plan updated: 1 of 3 steps completed. (found it)")));
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }));
    // The model was offered the tool, with its schema.
    let first = &fake.accepted()[0];
    assert!(first["tools"].as_array().unwrap().iter().any(|t| t["name"] == "update_plan"), "{first}");

    // Outside a turn it is not offered: not in `tool.list` (the MCP server's tools), and
    // `tool.call` does not know it. The planner (plan mode) offers it.
    assert!(!client.tools(None).await.unwrap().iter().any(|t| t.name == "update_plan"));
    let call = client.call("tool.call", json!({"name": "update_plan", "arguments": plan()})).await;
    assert!(call.is_err(), "{call:?}");
    let harnesses = client.harnesses().await.unwrap();
    let planner = harnesses.iter().find(|h| h.id == "superpi-planner").unwrap();
    assert!(planner.tools.iter().any(|t| t == "update_plan"), "{:?}", planner.tools);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_plan_is_an_error_result_and_publishes_nothing() {
    let env = TestEnv::new();
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("plan"), false).await;
    let bad = json!({"plan": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]});
    let turn = client.submit_text(conv, &format!("@tool update_plan {bad}")).await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    assert!(!events.iter().any(|e| matches!(e.body, EventBody::PlanUpdated { .. })));
    let failed = events.iter().any(|e| {
        matches!(&e.body, EventBody::ToolCompleted { is_error: true, output, .. }
            if output.as_str().unwrap().contains("at most one step can be in_progress"))
    });
    assert!(failed, "{events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writes_arguments_stream_as_partial_args() {
    let content: String = (0..120).map(|n| format!("line {n} of the new file\n")).collect();
    let args = json!({"path": "notes.txt", "content": content});
    let fake =
        AnthropicFake::start(vec![Answer::tool_call("write", args.clone()), Answer::text("Written.")]).await.unwrap();
    let env = TestEnv::new();
    let (client, conv, mut sub) = on_fake(&env, &fake).await;
    let turn = client.submit_text(conv, "write the notes").await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    assert_eq!(fake.rejections(), vec![]);
    let partials: Vec<&Value> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ToolcallDelta { partial_args, .. } if !partial_args.is_null() => Some(partial_args),
            _ => None,
        })
        .collect();
    // The fake streams the arguments in two halves: the first shows the text so far.
    assert_eq!(partials.len(), 2, "{partials:?}");
    let shown = partials[0]["content"].as_str().unwrap();
    assert!(!shown.is_empty() && shown.len() < content.len() && content.starts_with(shown), "{shown:?}");
    assert_eq!(partials[1], &args);
    assert_eq!(std::fs::read_to_string(env.workspace.join("notes.txt")).unwrap(), content);
}

/// A command that waits until the test creates `go` in the workspace: the turn is surely
/// running a tool when the steering prompt is sent.
fn waiting_command() -> Value {
    json!({"command": "while [ ! -e go ]; do sleep 0.02; done; echo released"})
}

async fn steer(client: &KernelClient, conv: i64, text: &str) -> superpi_proto::method::SubmitResult {
    client
        .submit(SubmitParams { conversation_id: conv, prompt: Some(text.into()), steer: true, ..Default::default() })
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steering_prompt_joins_the_running_turn_after_its_tool_results() {
    let fake = AnthropicFake::start(vec![Answer::tool_call("bash", waiting_command()), Answer::text("Steered, done.")])
        .await
        .unwrap();
    let env = TestEnv::new();
    let (client, conv, mut sub) = on_fake(&env, &fake).await;
    let turn = client.submit_text(conv, "run the waiting command").await.unwrap();
    next_event(&mut sub, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
    let steered = steer(&client, conv, "also check the README").await;
    assert!(steered.steered && !steered.queued, "{steered:?}");
    assert_eq!(steered.turn_id, turn.turn_id, "the running turn answers it");
    std::fs::write(env.workspace.join("go"), "").unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }), "{events:?}");
    assert_eq!(fake.rejections(), vec![]);

    // The prompt joined after the tool's result, before the second request, in this turn.
    let joined = events
        .iter()
        .position(|e| {
            matches!(&e.body, EventBody::MessageCompleted { role: Role::User, .. }) && e.turn_id == Some(turn.turn_id)
        })
        .expect("the steering prompt in the turn's events");
    let result = events.iter().position(|e| matches!(e.body, EventBody::ToolCompleted { .. })).unwrap();
    assert!(result < joined, "{events:?}");
    let accepted = fake.accepted();
    assert_eq!(accepted.len(), 2);
    let second = accepted[1]["messages"].to_string();
    let (released, steer_text) = (second.find("released").unwrap(), second.find("also check the README").unwrap());
    assert!(released < steer_text, "{second}");

    // History: both prompts in one turn, one turn ended; the next prompt is a turn of its own.
    let history = client.history(conv).await.unwrap().entries;
    let users: Vec<_> = history.iter().filter(|e| e.kind == EntryKind::User).collect();
    assert_eq!(users.len(), 2);
    assert!(users.iter().all(|e| e.turn_id == Some(turn.turn_id)));
    let texts: Vec<String> = history
        .iter()
        .flat_map(|e| &e.message.content)
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(texts.contains(&"Steered, done.".to_string()), "{texts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mock_answers_a_steering_prompt_and_without_a_running_turn_steer_starts_one() {
    let env = TestEnv::new();
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    // Nothing runs: the prompt is a turn of its own.
    let alone = steer(&client, conv, "nothing runs yet").await;
    assert!(!alone.steered);
    let events = turn_events(&mut sub, alone.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }));

    let turn = client.submit_text(conv, &format!("@tool bash {}", waiting_command())).await.unwrap();
    next_event(&mut sub, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
    let steered = steer(&client, conv, "steered words").await;
    assert_eq!((steered.steered, steered.turn_id), (true, turn.turn_id));
    std::fs::write(env.workspace.join("go"), "").unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    // The mock answers the last user message: the steering prompt, echoed.
    match &events.last().unwrap().body {
        EventBody::TurnCompleted { result, .. } => assert_eq!(result.as_deref(), Some("steered words")),
        other => panic!("{other:?}"),
    }
    // No other turn ran for it.
    let next = client.submit_text(conv, "after").await.unwrap();
    let events = turn_events(&mut sub, next.turn_id).await;
    // (But the state its actor told between the turns: idle.)
    let mut of_turns = events.iter().filter(|e| e.type_name() != "state_changed");
    assert!(of_turns.all(|e| e.turn_id == Some(next.turn_id)), "{events:?}");
}
