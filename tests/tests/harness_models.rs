//! A harness's models and hand-offs end to end, in a repository under a developer's home,
//! through OpenAI's rule-enforcing fake serving two models, `cheap` and `strong`: a hand-off
//! gives the conversation to another harness (its prompt, tools and model from the next step,
//! across a kernel restart, never above the ceiling it had, nor its schedules) and one to a
//! harness not listed is refused, as is one a `before_tool` hook or the policy refuses; a
//! cascade escalates from `cheap` to `strong` for the rest of a turn when a step fails or when
//! the cheap model calls `escalate` (a tool's image then checked against `strong`), and to a
//! model without the vendor's built-in tool search with the tools sent plainly (on Anthropic's
//! fake); a harness's `compaction_model` and `subagent_model` are the models its summaries and
//! its subagents are asked of.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use serde_json::{Value, json};
use superpi_client::KernelClient;
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_proto::{Event, EventBody};
use superpi_providers::testing::Reply;
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{AnthropicFake, FAKE_KEY, FakeServer, OpenAiFake};
use superpi_providers::testing::rules::Vendor;
use superpi_tests::{TestEnv, developer_home, turn_events};

/// `cheap` and `strong` both lead to `fake` (a window of 4,000 tokens, so that two long
/// prompts leave something to compact); `harnesses` is the harness file.
fn configure(env: &TestEnv, fake: &FakeServer, harnesses: &str) {
    let base = fake.base_url(Vendor::Openai);
    let entry = |name: &str| {
        format!(
            "[[providers.models]]\nname = \"{name}\"\nprovider = \"openai\"\nbase_url = \"{base}\"\napi_key = \"{FAKE_KEY}\"\n\
             context_window = 4000\nmax_output_tokens = 500\n"
        )
    };
    let config = &env.locations.config_dir;
    std::fs::write(config.join("providers.toml"), entry("cheap") + &entry("strong")).unwrap();
    std::fs::write(config.join("harnesses.toml"), harnesses).unwrap();
}

async fn connect(env: &TestEnv) -> KernelClient {
    KernelClient::connect(&env.connect_options("test")).await.expect("connect")
}

/// A conversation of `harness` in the developer's repository (its model the harness's).
async fn open(env: &TestEnv, client: &KernelClient, harness: &str, mode: &str) -> i64 {
    let workspace = developer_home(env);
    let params = OpenParams {
        workspace: Some(workspace.display().to_string()),
        harness: Some(harness.into()),
        mode: Some(mode.into()),
        ..Default::default()
    };
    client.open(params).await.unwrap().conversation_id
}

/// Runs one prompt as a turn; its events.
async fn turn(client: &KernelClient, id: i64, prompt: &str) -> Vec<Event> {
    let mut sub = client.watch(WatchParams::live(id)).await.unwrap();
    let turn = client.submit_text(id, prompt).await.unwrap();
    turn_events(&mut sub, turn.turn_id).await
}

fn tool_names(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()
}

fn system(request: &Value) -> String {
    request["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

fn results(events: &[Event]) -> Vec<(String, bool, String)> {
    let result = |e: &Event| match &e.body {
        EventBody::ToolCompleted { name, is_error, output, .. } => {
            Some((name.clone(), *is_error, output.as_str().unwrap_or_default().to_string()))
        }
        _ => None,
    };
    events.iter().filter_map(result).collect()
}

fn notices(events: &[Event]) -> Vec<String> {
    let notice = |e: &Event| match &e.body {
        EventBody::Notice { message, .. } => Some(message.clone()),
        _ => None,
    };
    events.iter().filter_map(notice).collect()
}

fn completed(events: &[Event]) -> bool {
    matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. })
}

const HANDOFF_HARNESSES: &str = r#"
[harnesses.scout]
prompt = "You scout the repository."
tools = ["read", "ls"]
max_mode = "accept-edits"
model = "cheap"
handoff = ["builder"]

[harnesses.builder]
prompt = "You build the change."
tools = ["read", "write", "bash"]
model = "strong"
"#;

/// A refused hand-off (a harness the scout may not hand to) changes nothing; an allowed one
/// moves the next request to the builder's prompt, tools and model, is recorded as a
/// `handoff` event, survives a kernel restart and keeps the scout's ceiling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_off_moves_the_conversation_to_its_target_across_a_restart_within_the_ceiling() {
    let fake = OpenAiFake::start(vec![
        Answer::tool_call("handoff", json!({"harness": "superpi-code", "summary": "widen"})),
        Answer::tool_call("handoff", json!({"harness": "builder", "summary": "the plan is ready"})),
        Answer::text("built"),
        Answer::text("built again"),
    ])
    .await
    .unwrap();
    let env = TestEnv::new();
    configure(&env, &fake, HANDOFF_HARNESSES);
    let client = connect(&env).await;
    let id = open(&env, &client, "scout", "accept-edits").await;
    let events = turn(&client, id, "look around, then hand over").await;
    assert!(completed(&events), "{events:?}");
    assert_eq!(fake.rejections(), vec![]);
    let info = client.list().await.unwrap().into_iter().find(|c| c.conversation_id == id).unwrap();
    assert_eq!((info.harness.as_str(), info.max_mode.as_str()), ("builder", "accept-edits"));

    let results = results(&events);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].1 && results[0].2.contains("only to: builder"), "refused: {results:?}");
    assert!(!results[1].1 && results[1].2.contains("`builder`"), "{results:?}");
    let handoffs: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Handoff { from, to, summary } => Some((from.clone(), to.clone(), summary.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(handoffs, [("scout".into(), "builder".into(), Some("the plan is ready".into()))]);

    let accepted = fake.accepted();
    assert_eq!(accepted.len(), 3);
    // The scout's two requests: its prompt, its tools and the hand-off tool, its model.
    for request in &accepted[..2] {
        assert_eq!(request["model"], "cheap");
        assert!(system(request).contains("You scout"), "{request}");
        assert_eq!(tool_names(request), ["read", "ls", "handoff"]);
    }
    // The next step: the builder's prompt, tools and model, the history whole.
    assert_eq!(accepted[2]["model"], "strong");
    assert!(system(&accepted[2]).contains("You build the change."), "{}", accepted[2]);
    assert_eq!(tool_names(&accepted[2]), ["read", "write", "bash"]);
    assert!(accepted[2]["messages"].to_string().contains("look around, then hand over"));

    // A restarted kernel reads the conversation's harness from the store.
    env.kill_kernel();
    let client = connect(&env).await;
    let info = client.list().await.unwrap().into_iter().find(|c| c.conversation_id == id).unwrap();
    assert_eq!((info.harness.as_str(), info.model.as_str(), info.mode.as_str()), ("builder", "strong", "accept-edits"));
    // Its info shows the ceiling in force, the scout's, not the builder's `auto`.
    assert_eq!(info.max_mode, "accept-edits");
    let events = turn(&client, id, "go on").await;
    assert!(completed(&events), "{events:?}");
    let accepted = fake.accepted();
    assert_eq!(accepted.len(), 4);
    assert_eq!(accepted[3]["model"], "strong");
    assert!(system(&accepted[3]).contains("You build the change."));

    // The scout's ceiling (accept-edits) holds though the builder's is auto.
    let answer = client.set_mode(id, "auto").await.unwrap();
    assert_eq!((answer["mode"].as_str(), answer["max_mode"].as_str()), (Some("accept-edits"), Some("accept-edits")));
    // And binds the conversation's scheduled runs.
    let params = superpi_proto::schedule::ScheduleAddParams {
        prompt: "Build it nightly.".into(),
        cron: Some("@daily".into()),
        conversation_id: Some(id),
        ..Default::default()
    };
    let schedule = client.schedule_add(params).await.unwrap().schedule;
    assert_eq!(schedule.ceiling, "accept-edits", "the kept ceiling, not the builder's own");
}

/// `handoff` is a tool like any: a `before_tool` hook sees its call and may refuse it, the
/// policy's `deny_tools` refuses it, and either way the conversation stays with its harness;
/// with neither, the same call hands it over. Through the mock model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_and_the_policy_decide_a_hand_off_like_any_tool() {
    let env = TestEnv::new();
    let harnesses = "[harnesses.scout]\ntools = [\"read\"]\nhandoff = [\"builder\"]\n\n\
                     [harnesses.builder]\ntools = [\"read\", \"write\"]\n";
    std::fs::write(env.locations.config_dir.join("harnesses.toml"), harnesses).unwrap();
    let settings = |value: Value| {
        std::fs::write(env.locations.config_dir.join("settings.json"), value.to_string()).unwrap();
    };
    let guard = "cat > /dev/null; echo 'the scout finishes first' >&2; exit 2";
    settings(json!({"hooks": {"before_tool": [{"name": "guard", "command": guard, "tools": ["handoff"]}]}}));
    let client = connect(&env).await;
    let id = open(&env, &client, "scout", "accept-edits").await;
    let hand = r#"@tool handoff {"harness": "builder", "summary": "over to you"}"#;
    let harness = async || client.list().await.unwrap().into_iter().find(|c| c.conversation_id == id).unwrap().harness;
    let blocked = |events: &[Event]| {
        events
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::ToolBlocked { name, reason, .. } => Some((name.clone(), reason.clone())),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let handed = |events: &[Event]| events.iter().any(|e| matches!(e.body, EventBody::Handoff { .. }));

    let events = turn(&client, id, hand).await;
    assert!(completed(&events), "{events:?}");
    let started = events.iter().any(|e| matches!(&e.body, EventBody::ToolStarted { name, .. } if name == "handoff"));
    assert!(started, "{events:?}");
    assert_eq!(
        blocked(&events),
        [("handoff".into(), "the before_tool hook `guard` refused it: the scout finishes first".into())]
    );
    assert!(!handed(&events) && harness().await == "scout", "{events:?}");

    settings(json!({"permissions": {"deny_tools": ["handoff"]}}));
    let events = turn(&client, id, hand).await;
    let refused = blocked(&events);
    assert!(refused.len() == 1 && refused[0].0 == "handoff", "{events:?}");
    assert!(!handed(&events) && harness().await == "scout", "{events:?}");

    settings(json!({}));
    let events = turn(&client, id, hand).await;
    assert!(blocked(&events).is_empty() && handed(&events), "{events:?}");
    assert_eq!(harness().await, "builder");
}

/// A cascade: the cheap model's failure (an error the provider does not retry) moves the step
/// to the strong model with a notice; the cheap model's `escalate` call does too; an
/// escalation lasts its turn, and each turn starts again at the cheap model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cascade_escalates_on_a_failure_and_when_the_cheap_model_asks() {
    let fake = OpenAiFake::start(vec![]).await.unwrap();
    let env = TestEnv::new();
    let harnesses =
        "[harnesses.thrifty]\nprompt = \"Be brief.\"\ntools = [\"read\"]\nmodel = [\"cheap\", \"strong\"]\n";
    configure(&env, &fake, harnesses);
    let failing = json!({"error": {"message": "the cheap model broke", "type": "server_error"}}).to_string();
    fake.set_responder(Box::new(move |_, body| match body["model"].as_str() {
        Some("cheap") => Some(Answer::Reply(Reply::error(400, &failing))),
        _ => None,
    }));
    fake.set_fallback(Answer::text("strong answer"));
    let client = connect(&env).await;
    let id = open(&env, &client, "thrifty", "accept-edits").await;
    let events = turn(&client, id, "first").await;
    assert!(completed(&events), "{events:?}");
    let said = notices(&events);
    assert!(
        said.iter().any(|n| n.contains("escalated from cheap to strong") && n.contains("cheap model broke")),
        "{said:?}"
    );
    let models: Vec<Value> = fake.accepted().iter().map(|r| r["model"].clone()).collect();
    assert_eq!(models, [json!("cheap"), json!("strong")]);
    // The cheap model was offered `escalate`; the strong one, last of the cascade, is not.
    let accepted = fake.accepted();
    assert_eq!(
        (tool_names(&accepted[0]), tool_names(&accepted[1])),
        (vec!["read".into(), "escalate".into()], vec!["read".to_string()])
    );

    // The cheap model asks: its call is answered and the next step is the strong model's.
    fake.set_responder(Box::new(|_, body| match body["model"].as_str() {
        Some("cheap") => Some(Answer::tool_call("escalate", json!({"reason": "too hard"}))),
        _ => None,
    }));
    let events = turn(&client, id, "second").await;
    assert!(completed(&events), "{events:?}");
    assert_eq!(
        results(&events),
        [("escalate".into(), false, "escalated: a stronger model takes the next step".into())]
    );
    assert!(notices(&events).iter().any(|n| n.contains("escalated from cheap to strong: the model asked to")));
    let models: Vec<Value> = fake.accepted().iter().map(|r| r["model"].clone()).collect();
    assert_eq!(models[2..], [json!("cheap"), json!("strong")]);

    // An escalation lasts its turn: the next starts again at the cheap model, which answers.
    fake.set_responder(Box::new(|_, body| match body["model"].as_str() {
        Some("cheap") => Some(Answer::text("cheap answer")),
        _ => None,
    }));
    let events = turn(&client, id, "third").await;
    assert!(completed(&events) && notices(&events).is_empty(), "{events:?}");
    let models: Vec<Value> = fake.accepted().iter().map(|r| r["model"].clone()).collect();
    assert_eq!(models[4..], [json!("cheap")]);
    assert_eq!(fake.rejections(), vec![]);
}

/// After an escalation from a model that does not see to one that does, an image a tool
/// returns is checked against the model the turn is at, and reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_a_tool_returns_is_checked_against_the_model_escalated_to() {
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let fake = OpenAiFake::start(vec![
        Answer::tool_call("escalate", json!({"reason": "needs eyes"})),
        Answer::tool_call("read", json!({"path": "pixel.png"})),
        Answer::text("a pixel"),
    ])
    .await
    .unwrap();
    let env = TestEnv::new();
    configure(&env, &fake, "[harnesses.eyes]\ntools = [\"read\"]\nmodel = [\"cheap\", \"strong\"]\n");
    let providers = env.locations.config_dir.join("providers.toml");
    let text = std::fs::read_to_string(&providers).unwrap();
    let text = text.replace("name = \"cheap\"\n", "name = \"cheap\"\nimages = false\n");
    // `strong` is OpenAI's gpt-4o upstream, a model the fake lets see.
    let strong = "name = \"strong\"\nmodel = \"gpt-4o\"\nimages = true\n";
    std::fs::write(&providers, text.replace("name = \"strong\"\n", strong)).unwrap();
    let client = connect(&env).await;
    let id = open(&env, &client, "eyes", "accept-edits").await;
    let repo = developer_home(&env);
    std::fs::write(repo.join("pixel.png"), superpi_providers::images::decode(png).unwrap()).unwrap();
    let events = turn(&client, id, "what is in pixel.png?").await;
    assert!(completed(&events), "{events:?}");
    let results = results(&events);
    assert!(results.iter().any(|(name, failed, _)| name == "read" && !failed), "{results:?}");
    let accepted = fake.accepted();
    let models: Vec<Value> = accepted.iter().map(|r| r["model"].clone()).collect();
    assert_eq!(models, [json!("cheap"), json!("gpt-4o"), json!("gpt-4o")]);
    assert!(accepted[2]["messages"].to_string().contains("data:image/png;base64"), "{}", accepted[2]);
    assert_eq!(fake.rejections(), vec![]);
}

/// A cascade from a model with Anthropic's built-in tool search (Claude Sonnet 4.5) to one
/// without it (Claude Opus 4.1): the first request defers the MCP server's tools behind the
/// vendor's search tool; after the first model's `escalate`, the second model gets them as
/// ordinary tools, with no `defer_loading` and no search tool, which its API refuses (so does
/// the fake).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escalating_to_a_model_without_built_in_search_sends_it_the_tools_plainly() {
    let fake = AnthropicFake::start(vec![
        Answer::tool_call("escalate", json!({"reason": "beyond me"})),
        Answer::text("done by the older model"),
    ])
    .await
    .unwrap();
    let env = TestEnv::new();
    let repository = developer_home(&env);
    let fixture = superpi_tests::mcp_fixture_bin().display().to_string();
    let settings = json!({"mcp_servers": {"fix": {"command": fixture, "defer": true}}});
    let config = &env.locations.config_dir;
    std::fs::write(config.join("settings.json"), settings.to_string()).unwrap();
    let harnesses = "[harnesses.mixed]\ntools = [\"read\"]\nmodel = [\"claude-sonnet-4-5\", \"claude-opus-4-1\"]\n";
    std::fs::write(config.join("harnesses.toml"), harnesses).unwrap();
    let mut cmd = env.command(&["run", "--harness", "mixed", "--mode", "accept-edits", "look it up"]);
    cmd.current_dir(&repository).envs(fake.env());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("done by the older model"), "{stdout}\n{stderr}");
    assert_eq!(fake.rejections(), vec![]);

    let accepted = fake.accepted();
    assert_eq!(accepted.len(), 2, "{accepted:?}");
    let (first, second) = (&accepted[0], &accepted[1]);
    assert_eq!(
        (first["model"].as_str(), second["model"].as_str()),
        (Some("claude-sonnet-4-5"), Some("claude-opus-4-1"))
    );
    let searches = |request: &Value| {
        let tools = request["tools"].as_array().cloned().unwrap_or_default();
        tools.iter().any(|t| t["type"].as_str().is_some_and(|kind| kind.starts_with("tool_search_tool")))
    };
    let echo = |request: &Value| {
        let tools = request["tools"].as_array().cloned().unwrap_or_default();
        tools.into_iter().find(|t| t["name"] == "mcp__fix__echo").expect("the server's tool is sent")
    };
    assert!(searches(first) && echo(first)["defer_loading"] == true, "{first}");
    assert!(!searches(second) && !second.to_string().contains("defer_loading"), "{second}");
    assert_eq!(echo(second).get("defer_loading"), None, "{second}");
}

/// A harness's `compaction_model` writes its summaries and its `subagent_model` runs the
/// subagents it starts, while its own turns stay on its model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_and_subagents_use_the_harness_s_cheaper_models() {
    let fake = OpenAiFake::start(vec![
        Answer::text("one"),
        Answer::text("two"),
        Answer::text("the summary"),
        Answer::tool_call("subagent", json!({"task": "Find the README."})),
        Answer::text("README.md is at the root."),
        Answer::text("done"),
    ])
    .await
    .unwrap();
    let env = TestEnv::new();
    let harnesses = "[harnesses.lead]\ntools = [\"read\", \"subagent\"]\nmodel = \"strong\"\n\
                     compaction_model = \"cheap\"\nsubagent_model = \"cheap\"\n";
    configure(&env, &fake, harnesses);
    let client = connect(&env).await;
    let id = open(&env, &client, "lead", "accept-edits").await;
    let long = "lorem ".repeat(500);
    assert!(completed(&turn(&client, id, &format!("first {long}")).await));
    assert!(completed(&turn(&client, id, &format!("second {long}")).await));
    let compacted = client.compact(id).await.unwrap();
    assert_eq!(compacted["compacted"], json!(true), "{compacted}");
    let events = turn(&client, id, "ask a subagent").await;
    assert!(completed(&events), "{events:?}");
    assert_eq!(fake.rejections(), vec![]);

    let accepted = fake.accepted();
    let models: Vec<&str> = accepted.iter().map(|r| r["model"].as_str().unwrap()).collect();
    // Two turns, the summary, the parent's call, the child's answer, the parent's answer.
    assert_eq!(models, ["strong", "strong", "cheap", "strong", "cheap", "strong"]);
    assert!(accepted[2]["messages"].to_string().contains("first"), "the summary request: {}", accepted[2]);
    assert!(accepted[4]["messages"].to_string().contains("Find the README."), "the child: {}", accepted[4]);
}
