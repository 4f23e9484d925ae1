//! End to end: the `subagent` tool runs a task in a child conversation with its own context
//! and answers with the child's final answer; the parent's turn publishes its start and end,
//! the child runs in at most the parent's mode, cancelling the parent cancels the child, the
//! depth limit holds (also after a restart), children are listed under their parent, several
//! children run in parallel under each wait policy and a timeout, a subagent uses at
//! most its parent's tools (also after a kernel restart), and a harness names the subagents it
//! may start. Driven through
//! Anthropic's fake (which refuses any request the real API would refuse) and the mock.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use serde_json::{Value, json};
use superpi_client::{KernelClient, Subscription};
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_proto::{Event, EventBody};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::AnthropicFake;
use superpi_tests::{TestEnv, next_event, open_and_watch, turn_events};

async fn connect(env: &TestEnv) -> KernelClient {
    KernelClient::connect(&env.connect_options("test")).await.expect("connect")
}

fn watch_params(conversation_id: i64) -> WatchParams {
    WatchParams::after(conversation_id, 0)
}

fn started(events: &[Event]) -> (i64, String, String) {
    events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::SubagentStarted { child_conversation_id, role, task } => {
                Some((*child_conversation_id, role.clone(), task.clone()))
            }
            _ => None,
        })
        .expect("subagent_started")
}

fn finished(events: &[Event]) -> (String, Option<String>) {
    events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::SubagentFinished { status, summary, .. } => Some((status.clone(), summary.clone())),
            _ => None,
        })
        .expect("subagent_finished")
}

fn tool_result(events: &[Event], name: &str) -> (bool, String) {
    events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolCompleted { name: n, is_error, output, .. } if n == name => {
                Some((*is_error, output.as_str().unwrap_or_default().to_string()))
            }
            _ => None,
        })
        .expect("the tool's result")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_works_in_its_own_context_and_its_answer_is_the_result() {
    let fake = AnthropicFake::start(vec![
        Answer::tool_call("subagent", json!({"task": "Find where the config is read."})),
        Answer::text("The config is read in app.rs."),
        Answer::text("Done: app.rs reads it."),
    ])
    .await
    .unwrap();
    let env = TestEnv::new();
    let key = fake.env().into_iter().find(|(k, _)| k == "ANTHROPIC_API_KEY").unwrap().1;
    std::fs::write(
        env.locations.config_dir.join("providers.toml"),
        format!(
            "[[providers.models]]\nname = \"claude-sonnet-4-5\"\nprovider = \"anthropic\"\nbase_url = \"{}\"\napi_key = \"{key}\"\n",
            fake.base_url(superpi_providers::testing::rules::Vendor::Anthropic)
        ),
    )
    .unwrap();
    let client = connect(&env).await;
    let parent = client
        .open(OpenParams {
            workspace: Some(env.workspace.display().to_string()),
            mode: Some("accept-edits".into()),
            model: Some("claude-sonnet-4-5".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .conversation_id;
    let mut sub = client.watch(WatchParams::live(parent)).await.unwrap();
    let turn = client.submit_text(parent, "where is the config read? ask a subagent").await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }), "{events:?}");
    assert_eq!(fake.rejections(), vec![]);

    let (child, role, task) = started(&events);
    assert_eq!((role.as_str(), task.as_str()), ("superpi-planner", "Find where the config is read."));
    assert_eq!(finished(&events), ("completed".into(), Some("The config is read in app.rs.".into())));
    assert_eq!(tool_result(&events, "subagent"), (false, "The config is read in app.rs.".into()));
    // Its own context: the child's request holds the task alone; the parent's next request
    // holds the child's answer as the call's result.
    let accepted = fake.accepted();
    assert_eq!(accepted.len(), 3);
    let child_messages = accepted[1]["messages"].as_array().unwrap();
    assert_eq!(child_messages.len(), 1, "{}", accepted[1]);
    let child_request = accepted[1].to_string();
    assert!(child_request.contains("Find where the config is read.") && !child_request.contains("ask a subagent"));
    assert!(accepted[2]["messages"].to_string().contains("The config is read in app.rs."));

    // Listed under its parent, in the planner's mode (plan).
    let list = client.list().await.unwrap();
    let info = list.iter().find(|c| c.conversation_id == child).unwrap();
    assert_eq!((info.parent_id, info.mode.as_str(), info.harness.as_str()), (Some(parent), "plan", "superpi-planner"));
    // `superpi session list` shows it under its parent, `--json` with its parent.
    let out = env.command(&["session", "list"]).env("NO_COLOR", "1").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let ids: Vec<&str> = text.lines().skip(1).map(|l| l.split("  ").next().unwrap()).collect();
    assert_eq!(ids, [parent.to_string(), format!("└ {child}")], "{text}");
    let out = env.command(&["session", "list", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let child_json = listed.as_array().unwrap().iter().find(|c| c["conversation_id"] == child).unwrap();
    assert_eq!(child_json["parent_id"], json!(parent));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_never_runs_above_the_parents_mode_and_starts_no_subagents() {
    let env = TestEnv::new();
    let client = connect(&env).await;
    let (parent, mut sub) = open_and_watch(&client, &env.workspace, Some("plan"), false).await;
    // The parent is in plan mode: a code subagent runs in plan mode too, so its write is refused.
    let task = r#"@tool write {"path": "made.txt", "content": "x"}"#;
    let prompt = format!("@tool subagent {}", json!({"task": task, "harness": "superpi-code"}));
    let turn = client.submit_text(parent, &prompt).await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    let (child, role, _) = started(&events);
    assert_eq!(role, "superpi-code");
    let child_info = client.list().await.unwrap().into_iter().find(|c| c.conversation_id == child).unwrap();
    assert_eq!(child_info.mode, "plan");
    assert!(!env.workspace.join("made.txt").exists(), "the subagent wrote above the parent's mode");
    let child_history = client.history(child).await.unwrap().entries;
    assert!(child_history.iter().any(|e| e.message.content.iter().any(|b| matches!(b,
        superpi_proto::ContentBlock::ToolResult { is_error: true, output, .. } if output.contains("plan mode")))));

    // By default two levels: a subagent starts its own, whose `subagent` call is refused.
    let deepest = json!({"task": "deeper still"});
    let deeper = json!({"task": format!("@tool subagent {deepest}")});
    let nested = json!({"task": format!("@tool subagent {deeper}")});
    let turn = client.submit_text(parent, &format!("@tool subagent {nested}")).await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    let (child, _, _) = started(&events);
    let list = client.list().await.unwrap();
    let grandchild =
        list.iter().find(|c| c.parent_id == Some(child)).expect("the subagent's own subagent").conversation_id;
    let history = client.history(grandchild).await.unwrap().entries;
    assert!(history.iter().any(|e| e.message.content.iter().any(|b| matches!(b,
        superpi_proto::ContentBlock::ToolResult { is_error: true, output, .. } if output.contains("cannot start subagents")))));
    assert_eq!(list.iter().filter(|c| c.parent_id == Some(grandchild)).count(), 0);
}

/// The `subagent` call's refusal in a turn's events, if it was refused for depth.
fn refused_for_depth(events: &[Event]) -> bool {
    let (is_error, output) = tool_result(events, "subagent");
    is_error && output.contains("cannot start subagents")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_depth_limit_holds_after_the_kernel_restarts() {
    let env = TestEnv::new();
    // One level: a subagent starts none (the settings' `subagents.max_depth`).
    std::fs::write(env.locations.config_dir.join("settings.json"), r#"{"subagents": {"max_depth": 1}}"#).unwrap();
    let client = connect(&env).await;
    let (parent, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    let turn = client.submit_text(parent, r#"@tool subagent {"task": "look around"}"#).await.unwrap();
    let (child, _, _) = started(&turn_events(&mut sub, turn.turn_id).await);
    drop((sub, client));

    // Another kernel process: nothing of the first one's memory is left.
    let first = env.kernel_pid().unwrap();
    env.kill_kernel();
    let client = connect(&env).await;
    assert_ne!(env.kernel_pid(), Some(first), "the same kernel answered");

    // A person prompting the child directly: its `subagent` call is still refused, since its
    // parent's stored `subagent_started` makes it a subagent.
    let mut child_sub = client.watch(WatchParams { from_seq: None, ..watch_params(child) }).await.unwrap();
    let turn = client.submit_text(child, r#"@tool subagent {"task": "deeper"}"#).await.unwrap();
    let events = turn_events(&mut child_sub, turn.turn_id).await;
    assert!(refused_for_depth(&events), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e.body, EventBody::SubagentStarted { .. })));
    // A fork of the child is as deep as the child.
    let fork = client.fork(child, None).await.unwrap().conversation_id;
    let mut fork_sub = client.watch(WatchParams { from_seq: None, ..watch_params(fork) }).await.unwrap();
    let turn = client.submit_text(fork, r#"@tool subagent {"task": "deeper"}"#).await.unwrap();
    assert!(refused_for_depth(&turn_events(&mut fork_sub, turn.turn_id).await));
    assert_eq!(client.list().await.unwrap().iter().filter(|c| c.parent_id == Some(child)).count(), 1, "the fork only");

    // The person's conversation still starts one (depth 1), whose own call is refused.
    let mut sub = client.watch(WatchParams { from_seq: None, ..watch_params(parent) }).await.unwrap();
    let nested = json!({"task": format!("@tool subagent {}", json!({"task": "deeper"}))});
    let turn = client.submit_text(parent, &format!("@tool subagent {nested}")).await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    let (second, _, _) = started(&events);
    assert_ne!(second, child);
    let history = client.history(second).await.unwrap().entries;
    assert!(history.iter().any(|e| e.message.content.iter().any(|b| matches!(b,
        superpi_proto::ContentBlock::ToolResult { is_error: true, output, .. } if output.contains("cannot start subagents")))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_parent_cancels_the_subagent() {
    let env = TestEnv::new();
    let client = connect(&env).await;
    let (parent, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    // The child's command waits for a file nobody creates: only the cancel ends it.
    let wait = json!({"command": "while [ ! -e never ]; do sleep 0.05; done"});
    let task = format!("@tool bash {wait}");
    let prompt = format!("@tool subagent {}", json!({"task": task, "harness": "superpi-code"}));
    let turn = client.submit_text(parent, &prompt).await.unwrap();
    let start = next_event(&mut sub, |e| matches!(e.body, EventBody::SubagentStarted { .. })).await;
    let EventBody::SubagentStarted { child_conversation_id: child, .. } = start.body else { unreachable!() };
    let mut child_sub = client.watch(watch_params(child)).await.unwrap();
    next_event(&mut child_sub, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;

    let answer = client.cancel(parent).await.unwrap();
    assert_eq!(answer["cancelled"], Value::Bool(true));
    let events = turn_events(&mut sub, turn.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCancelled {}), "{events:?}");
    assert_eq!(finished(&events).0, "cancelled");
    let child_end = next_event(&mut child_sub, |e| e.body.is_turn_end()).await;
    assert!(matches!(child_end.body, EventBody::TurnCancelled {}), "{child_end:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_uses_at_most_its_parents_tools() {
    let env = TestEnv::new();
    // A reader that may start subagents, in auto mode: its code subagent must not run `bash`.
    let harnesses = r#"
[harnesses.reader]
tools = ["read", "ls", "subagent"]
max_mode = "auto"

[harnesses.picky]
tools = ["read", "subagent"]
max_mode = "auto"
subagents = ["superpi-planner"]
"#;
    std::fs::write(env.locations.config_dir.join("harnesses.toml"), harnesses).unwrap();
    let client = connect(&env).await;
    let open = |harness: &str| OpenParams {
        harness: Some(harness.into()),
        mode: Some("auto".into()),
        workspace: Some(env.workspace.display().to_string()),
        ..OpenParams::default()
    };
    let parent = client.open(open("reader")).await.unwrap().conversation_id;
    let mut sub = client.watch(watch_params(parent)).await.unwrap();
    let task = r#"@tool bash {"command": "touch made-by-child"}"#;
    let prompt = format!("@tool subagent {}", json!({"task": task, "harness": "superpi-code"}));
    let turn = client.submit_text(parent, &prompt).await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    let (child, role, _) = started(&events);
    assert_eq!(role, "superpi-code");
    assert!(!env.workspace.join("made-by-child").exists(), "the subagent ran a tool its parent lacks");
    let refused = |entries: &[superpi_proto::Entry]| {
        entries.iter().any(|e| e.message.content.iter().any(|b| matches!(b,
            superpi_proto::ContentBlock::ToolResult { is_error: true, output, .. } if output.contains("at most its parent's tools"))))
    };
    assert!(
        refused(&client.history(child).await.unwrap().entries),
        "the child's bash was not refused as beyond the parent"
    );

    // The limit is the child's own, stored: another kernel process keeps it.
    drop((sub, client));
    env.kill_kernel();
    let client = connect(&env).await;
    let mut child_sub = client.watch(WatchParams { from_seq: None, ..watch_params(child) }).await.unwrap();
    let again = client.submit_text(child, task).await.unwrap();
    let events = turn_events(&mut child_sub, again.turn_id).await;
    let (is_error, output) = tool_result(&events, "bash");
    assert!(is_error && output.contains("at most its parent's tools"), "{output}");
    assert!(!env.workspace.join("made-by-child").exists(), "after a restart the subagent ran a tool its parent lacks");

    // A harness that names its subagents starts no other.
    let picky = client.open(open("picky")).await.unwrap().conversation_id;
    let mut sub = client.watch(watch_params(picky)).await.unwrap();
    let prompt = format!("@tool subagent {}", json!({"task": "look", "harness": "superpi-code"}));
    let turn = client.submit_text(picky, &prompt).await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    let (is_error, output) = tool_result(&events, "subagent");
    assert!(is_error && output.contains("may start only these subagents: superpi-planner"), "{output}");
}

/// Every `subagent_finished` of a turn: (child, status).
fn all_finished(events: &[Event]) -> Vec<(i64, String)> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::SubagentFinished { child_conversation_id, status, .. } => {
                Some((*child_conversation_id, status.clone()))
            }
            _ => None,
        })
        .collect()
}

/// A shell task for a code subagent: `bash` runs `command`.
fn shell_task(command: &str) -> Value {
    json!({"task": format!("@tool bash {}", json!({ "command": command })), "harness": "superpi-code"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_subagents_run_in_parallel_under_each_wait_policy() {
    let env = TestEnv::new();
    let client = connect(&env).await;
    let (parent, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    async fn call(
        client: &KernelClient,
        parent: i64,
        sub: &mut Subscription,
        args: Value,
    ) -> (Vec<Event>, bool, String) {
        let turn = client.submit_text(parent, &format!("@tool subagent {args}")).await.unwrap();
        let events = turn_events(sub, turn.turn_id).await;
        let (is_error, output) = tool_result(&events, "subagent");
        (events, is_error, output)
    }

    // `all`: each child waits for the other's file, so they finish only if they run at once.
    let pair = json!({"tasks": [
        shell_task("touch a && while [ ! -e b ]; do sleep 0.05; done && echo saw-b"),
        shell_task("touch b && while [ ! -e a ]; do sleep 0.05; done && echo saw-a"),
        {"task": "a planner's answer"}
    ], "timeout_secs": 60});
    let (events, is_error, output) = call(&client, parent, &mut sub, pair).await;
    assert!(!is_error, "{output}");
    assert!(output.starts_with("3 subagents, waiting for all: 3 completed."), "{output}");
    assert!(output.contains("saw-b") && output.contains("saw-a") && output.contains("a planner's answer"), "{output}");
    let ends = all_finished(&events);
    assert_eq!(ends.len(), 3, "{events:?}");
    assert!(ends.iter().all(|(_, status)| status == "completed"), "{ends:?}");

    // One task given as a list is still summed up (the single form is `task`).
    let (_, is_error, output) = call(&client, parent, &mut sub, json!({"tasks": [{"task": "alone"}]})).await;
    assert!(!is_error && output.starts_with("1 subagent, waiting for all: 1 completed."), "{output}");

    // `any`: the first to end answers; the one still running is cancelled.
    let never = "while [ ! -e never ]; do sleep 0.05; done";
    let race = json!({"tasks": [shell_task(never), {"task": "quick answer"}], "wait": "any"});
    let (events, is_error, output) = call(&client, parent, &mut sub, race).await;
    assert!(!is_error, "{output}");
    assert!(output.contains("quick answer") && output.contains("cancelled"), "{output}");
    let mut statuses: Vec<String> = all_finished(&events).into_iter().map(|(_, s)| s).collect();
    statuses.sort();
    assert_eq!(statuses, ["cancelled", "completed"], "{events:?}");

    // `first_success`: a failure does not answer, the success does. The second child goes on
    // only once the test has seen the first fail.
    let wait_go = shell_task("while [ ! -e go ]; do sleep 0.05; done && echo found-it");
    let tries = json!({"tasks": [{"task": "@fail no luck"}, wait_go], "wait": "first_success"});
    let turn = client.submit_text(parent, &format!("@tool subagent {tries}")).await.unwrap();
    next_event(&mut sub, |e| matches!(&e.body, EventBody::SubagentFinished { status, .. } if status == "error")).await;
    std::fs::write(env.workspace.join("go"), "").unwrap();
    let (is_error, output) = tool_result(&turn_events(&mut sub, turn.turn_id).await, "subagent");
    assert!(!is_error && output.contains("found-it") && output.contains("failed"), "{output}");
    // Nothing completes: an error result.
    let none = json!({"tasks": [{"task": "@fail one"}, {"task": "@fail two"}], "wait": "first_success"});
    let (_, is_error, output) = call(&client, parent, &mut sub, none).await;
    assert!(is_error && output.contains("0 completed"), "{output}");

    // A timeout cancels a child that runs past it; it ends `timed_out`.
    let slow = json!({"task": shell_task(never)["task"], "harness": "superpi-code", "timeout_secs": 1});
    let (events, is_error, output) = call(&client, parent, &mut sub, slow).await;
    assert!(is_error && output.contains("did not finish within 1 s"), "{output}");
    assert_eq!(all_finished(&events).last().map(|(_, s)| s.as_str()), Some("timed_out"));
    // Bad calls are refused before any child starts.
    for (args, why) in [
        (json!({"task": "x", "tasks": [{"task": "y"}]}), "not both"),
        (json!({"tasks": [{"task": "y", "harness": "no-such-harness"}]}), "no-such-harness"),
        (json!({"wait": "all"}), "give a `task`"),
    ] {
        let (events, is_error, output) = call(&client, parent, &mut sub, args).await;
        assert!(is_error && output.contains(why), "{why}: {output}");
        assert!(all_finished(&events).is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_parallel_holds_children_back_until_a_place_is_free() {
    let env = TestEnv::new();
    // One at a time, two seconds each: the first child waits for a file only the second makes,
    // so it times out; only then does the second start, and it finds the first's file.
    let settings = r#"{"subagents": {"max_parallel": 1, "timeout_secs": 2}}"#;
    std::fs::write(env.locations.config_dir.join("settings.json"), settings).unwrap();
    let client = connect(&env).await;
    let (parent, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    let pair = json!({"tasks": [
        shell_task("touch a && while [ ! -e b ]; do sleep 0.05; done"),
        shell_task("touch b && test -e a && echo found-a"),
    ]});
    let turn = client.submit_text(parent, &format!("@tool subagent {pair}")).await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    let statuses: Vec<String> = all_finished(&events).into_iter().map(|(_, s)| s).collect();
    assert_eq!(statuses, ["timed_out", "completed"], "{events:?}");
    let (is_error, output) = tool_result(&events, "subagent");
    assert!(!is_error && output.contains("found-a") && output.contains("did not finish within 2 s"), "{output}");
}
