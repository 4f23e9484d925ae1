//! End to end, deferred MCP tools with the vendors' built-in tool search (Anthropic's tool
//! search tool, the Responses API's `tool_search`) on the rule-enforcing fakes: the deferred
//! tools go with the vendor's flag and superpi's own `tool_search` is not offered, the vendor's
//! search blocks come back in the next step and after a kernel restart (from the stored
//! events), a turn the vendor paused is sent back to go on, and `builtin_tool_search = false`
//! brings superpi's own search back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly

use serde_json::{Value, json};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{AnthropicFake, FakeServer, ResponsesFake};
use superpi_tests::TestEnv;

/// A user's settings: the fixture server, deferred, in a workspace under a home with a
/// `.gitconfig` and secrets beside it.
fn env_with_server() -> TestEnv {
    let env = TestEnv::new();
    std::fs::write(env.home.join(".gitconfig"), "[user]\n\tname = Dev\n\temail = dev@example.com\n").unwrap();
    std::fs::create_dir_all(env.home.join(".ssh")).unwrap();
    std::fs::write(env.home.join(".ssh/id_ed25519"), "not a key\n").unwrap();
    let fixture = superpi_tests::mcp_fixture_bin().display().to_string();
    let settings = json!({"mcp_servers": {"fix": {"command": fixture, "defer": true}}});
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
    env
}

/// `superpi run PROMPT` (in the latest conversation when `again`) on the fake's `model`.
async fn run(env: &TestEnv, fake: &FakeServer, model: &str, prompt: &str, again: bool) -> String {
    let mut args = vec!["run", "--mode", "accept-edits", "--model", model];
    if again {
        args.push("--continue");
    }
    args.push(prompt);
    let mut cmd = env.command(&args);
    cmd.envs(fake.env());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn names(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["name"].as_str().map(str::to_string)).collect()
}

/// One vendor: the first request defers the server's tools to the vendor's search; the
/// answer searches and calls `mcp__fix__echo`, which runs; the next request carries the
/// search's blocks; after the kernel is killed, a new turn's request still does.
async fn built_in_search_round_trips(fake: FakeServer, model: &str, search_type: &str, search_block: &str) {
    let env = env_with_server();
    assert_eq!(run(&env, &fake, model, "look it up", false).await, "done");
    let requests = fake.accepted();
    assert_eq!((requests.len(), fake.rejections()), (2, vec![]), "{requests:?}");
    let tools = requests[0]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["type"] == search_type), "{model}: the vendor's search tool: {tools:?}");
    assert!(!names(&requests[0]).contains(&"tool_search".to_string()), "{model}: not superpi's own");
    let echo = tools.iter().find(|t| t["name"] == "mcp__fix__echo").expect("the deferred tool is sent");
    assert_eq!(echo["defer_loading"], true, "{model}");
    let second = requests[1].to_string();
    assert!(second.contains(search_block) && second.contains("echo: found"), "{model}: {second}");

    // A new kernel reads the history from the store: the blocks still go back (the fake
    // refuses a call of a deferred tool no search in the history loaded).
    env.kill_kernel();
    assert_eq!(run(&env, &fake, model, "and again", true).await, "again");
    assert_eq!(fake.rejections(), vec![], "{model}");
    let third = fake.accepted()[2].to_string();
    assert!(third.contains(search_block) && third.contains("look it up"), "{model}: {third}");
}

/// The model searches for `echo` and calls it, answers, then answers the next turn.
fn script() -> Vec<Answer> {
    vec![
        Answer::tool_search("echo", "mcp__fix__echo", json!({"text": "found"})),
        Answer::text("done"),
        Answer::text("again"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropics_tool_search_finds_the_deferred_tool_and_its_blocks_survive_a_restart() {
    let fake = AnthropicFake::start(script()).await.unwrap();
    built_in_search_round_trips(fake, "claude-sonnet-4-5", "tool_search_tool_bm25_20251119", "tool_search_tool_result")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_responses_apis_tool_search_finds_the_deferred_tool_and_its_items_survive_a_restart() {
    let fake = ResponsesFake::start(script()).await.unwrap();
    built_in_search_round_trips(fake, "gpt-5.4-codex", "tool_search", "tool_search_output").await;
}

/// Anthropic pauses the turn before its search runs (`pause_turn`): the kernel sends the
/// history back with the paused answer last and no message after it, the model goes on (the
/// search runs, the found tool is called) and the turn ends with its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_anthropic_pauses_is_sent_back_and_goes_on_to_its_answer() {
    let script = vec![
        Answer::Paused { query: "echo".into() },
        Answer::tool_call("mcp__fix__echo", json!({"text": "found"})),
        Answer::text("done"),
    ];
    let fake = AnthropicFake::start(script).await.unwrap();
    let env = env_with_server();
    assert_eq!(run(&env, &fake, "claude-sonnet-4-5", "look it up", false).await, "done");
    let requests = fake.accepted();
    assert_eq!((requests.len(), fake.rejections()), (3, vec![]), "{requests:?}");
    let messages = requests[1]["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant", "the paused answer is last: {messages:?}");
    assert_eq!(last["content"].as_array().unwrap().last().unwrap()["type"], "server_tool_use");
    assert_eq!(messages.len(), 2, "no message between the prompt, the pause and its continuation");
    let third = requests[2].to_string();
    assert!(third.contains("tool_search_tool_result") && third.contains("echo: found"), "{third}");
}

/// The server whose tool a search found is removed before the next turn: the history's
/// search blocks name a tool (and a search tool) the request no longer sends, which the fake
/// refuses as the API does; the next turn's request leaves them out and is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_removed_after_its_tool_was_found_leaves_no_dangling_reference() {
    let fake = AnthropicFake::start(script()).await.unwrap();
    let env = env_with_server();
    assert_eq!(run(&env, &fake, "claude-sonnet-4-5", "look it up", false).await, "done");
    std::fs::write(env.locations.config_dir.join("settings.json"), "{}").unwrap();
    env.kill_kernel();
    assert_eq!(run(&env, &fake, "claude-sonnet-4-5", "and again", true).await, "again");
    assert_eq!(fake.rejections(), vec![]);
    let third = fake.accepted()[2].to_string();
    assert!(third.contains("look it up") && third.contains("echo: found"), "the history is sent: {third}");
    assert!(!third.contains("tool_reference") && !third.contains("server_tool_use"), "{third}");
}

/// `builtin_tool_search = false` (and a model without the vendor's search) keep superpi's own
/// `tool_search`: no vendor flag, no vendor search tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_setting_off_or_an_older_model_keeps_superpis_own_search() {
    for (model, providers_toml) in
        [("claude-sonnet-4-5", "[providers.anthropic]\nbuiltin_tool_search = false\n"), ("claude-opus-4-1", "")]
    {
        let fake = AnthropicFake::start(vec![Answer::text("ok")]).await.unwrap();
        let env = env_with_server();
        std::fs::write(env.locations.config_dir.join("providers.toml"), providers_toml).unwrap();
        assert_eq!(run(&env, &fake, model, "look it up", false).await, "ok");
        let first = &fake.accepted()[0];
        assert!(names(first).contains(&"tool_search".to_string()), "{model}: {first}");
        assert!(!first.to_string().contains("defer_loading"), "{model}: {first}");
        assert!(!names(first).contains(&"mcp__fix__echo".to_string()), "{model}: still deferred");
    }
}
