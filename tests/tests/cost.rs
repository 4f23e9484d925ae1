//! Cost and budgets end to end, on a developer's layout (a repository under the home, a
//! `~/.gitconfig`, keys in `~/.ssh` and `~/.aws`): each model call's `usage_updated` carries
//! its cost by the price table for the tokens the vendor fake reported, a providers.toml
//! `price` overrides the table, `session show` says the conversation's cost, and a spent
//! budget ends a turn cleanly with a notice.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use serde_json::{Value, json};
use superpi_proto::Usage;
use superpi_providers::prices::{Price, builtin};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{AnthropicFake, FakeServer, OpenAiFake};
use superpi_tests::{TestEnv, developer_home};

/// `superpi run --output-format stream-json` in the developer's repository; the events.
async fn run_events(env: &TestEnv, fake: Option<&FakeServer>, args: &[&str]) -> Vec<Value> {
    let workspace = developer_home(env);
    let mut cmd = env.command(&[&["run", "--output-format", "stream-json"], args].concat());
    cmd.current_dir(&workspace);
    if let Some(fake) = fake {
        cmd.envs(fake.env());
    }
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12_f64.max(b.abs() * 1e-9)
}

/// Checks each `usage_updated` against `price` for the tokens the fake reported, and the
/// turn's and the conversation's sums; returns the conversation's.
fn check_costs(updates: &[&Value], fake: &FakeServer, price: Price) -> f64 {
    let exchanges = fake.exchanges();
    assert_eq!(updates.len(), exchanges.len(), "one usage_updated per model call");
    let mut sum = 0.0;
    for (update, exchange) in updates.iter().zip(&exchanges) {
        let usage = Usage {
            input_tokens: exchange.prompt_tokens,
            output_tokens: update["output_tokens"].as_u64().unwrap(),
            cached_input_tokens: exchange.cached_tokens,
            cache_write_tokens: exchange.cache_written_tokens,
        };
        assert_eq!(update["input_tokens"].as_u64(), Some(usage.input_tokens));
        let expected = price.cost(&usage);
        sum += expected;
        let cost = update["cost_usd"].as_f64().unwrap();
        assert!(close(cost, expected), "{cost} != {expected} for {usage:?}");
        assert!(close(update["turn_cost_usd"].as_f64().unwrap(), sum), "{update}");
        assert!(close(update["total_cost_usd"].as_f64().unwrap(), sum), "{update}");
    }
    sum
}

/// A two-step tool turn on Anthropic Messages: the fake reports cache reads and writes,
/// priced apart (Sonnet: 3 $/M input, 0.30 read, 3.75 written, 15 output).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_model_call_costs_what_the_table_says_for_the_tokens_the_vendor_reported() {
    let fake = AnthropicFake::start(vec![Answer::tool_call("ls", json!({"path": "."})), Answer::text("listed")])
        .await
        .unwrap();
    let env = TestEnv::new();
    let events = run_events(&env, Some(&fake), &["--model", "claude-sonnet-4-5", "list the files"]).await;
    assert_eq!(fake.rejections(), vec![]);
    assert!(fake.exchanges().iter().any(|e| e.cache_written_tokens > 0), "the fake wrote to its cache");
    let sonnet = builtin("claude-sonnet-4-5").unwrap();
    assert_eq!(
        (sonnet.input, sonnet.cached_input, sonnet.cache_write, sonnet.output),
        (3.0, Some(0.3), Some(3.75), 15.0)
    );
    let total = check_costs(&of_type(&events, "usage_updated"), &fake, sonnet);
    assert!(total > 0.0);

    // `session show` says the conversation's cost, read back from the store.
    let conversation = events[0]["conversation_id"].to_string();
    let shown = env.command(&["session", "show", &conversation]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains(&format!("cost: ${total:.4}")), "cost: ${total:.4} in:\n{shown}");
}

/// A `price` in providers.toml wins over the table, for a model the table knows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_price_in_providers_toml_overrides_the_table() {
    let fake = OpenAiFake::start(vec![Answer::text("cheap today")]).await.unwrap();
    let env = TestEnv::new();
    std::fs::write(
        env.locations.config_dir.join("providers.toml"),
        "[[providers.models]]\nname = \"gpt-4o-mini\"\nprovider = \"openai\"\n\
         price = { input = 100.0, cached_input = 10.0, output = 1000.0 }\n",
    )
    .unwrap();
    let events = run_events(&env, Some(&fake), &["--model", "gpt-4o-mini", "hi"]).await;
    assert_eq!(fake.rejections(), vec![]);
    let price = Price { input: 100.0, cached_input: Some(10.0), cache_write: None, output: 1000.0 };
    assert_ne!(builtin("gpt-4o-mini"), Some(price));
    check_costs(&of_type(&events, "usage_updated"), &fake, price);
}

/// A turn budget spent by the first model call ends the turn before the second, cleanly: the
/// tool's result is stored, a notice says why, the turn completes with `stop_reason`
/// `budget`, and the next turn (a fresh budget) runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_turn_budget_ends_the_turn_cleanly_with_a_notice() {
    let env = TestEnv::new();
    // The mock at a dollar per thousand tokens; a tenth of a cent a turn.
    std::fs::write(
        env.locations.config_dir.join("providers.toml"),
        "[[providers.models]]\nname = \"mock\"\nprovider = \"mock\"\nprice = { input = 1000.0, output = 1000.0 }\n",
    )
    .unwrap();
    std::fs::write(env.locations.config_dir.join("settings.json"), r#"{"budget": {"turn_usd": 0.001}}"#).unwrap();
    let events = run_events(&env, None, &["--model", "mock", "@tool ls {\"path\": \".\"}"]).await;
    let updates = of_type(&events, "usage_updated");
    assert_eq!(updates.len(), 1, "one model call, then the budget: {events:?}");
    assert!(updates[0]["turn_cost_usd"].as_f64().unwrap() >= 0.001);
    assert_eq!(of_type(&events, "tool_completed").len(), 1, "the call that was asked for ran and has its result");
    let notices = of_type(&events, "notice");
    assert!(notices.iter().any(|n| n["message"].as_str().unwrap().contains("turn's budget")), "{notices:?}");
    let end = events.last().unwrap();
    assert_eq!((&end["type"], &end["stop_reason"]), (&json!("turn_completed"), &json!("budget")), "{end}");
    assert!(of_type(&events, "turn_error").is_empty());
}

/// The day's spend is kept in the store: a day budget spent before the kernel restarts still
/// ends the first turn after it (a new conversation) before any model call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_day_budget_holds_across_a_kernel_restart() {
    let env = TestEnv::new();
    std::fs::write(
        env.locations.config_dir.join("providers.toml"),
        "[[providers.models]]\nname = \"mock\"\nprovider = \"mock\"\nprice = { input = 1000.0, output = 1000.0 }\n",
    )
    .unwrap();
    std::fs::write(env.locations.config_dir.join("settings.json"), r#"{"budget": {"day_usd": 0.001}}"#).unwrap();
    let events = run_events(&env, None, &["--model", "mock", "hello"]).await;
    let updates = of_type(&events, "usage_updated");
    assert_eq!(updates.len(), 1, "{events:?}");
    assert!(updates[0]["cost_usd"].as_f64().unwrap() >= 0.001, "{:?}", updates[0]);
    assert_eq!(events.last().unwrap()["stop_reason"], json!("end_turn"));

    env.kill_kernel();
    let events = run_events(&env, None, &["--model", "mock", "hello again"]).await;
    assert!(of_type(&events, "usage_updated").is_empty(), "no model call: {events:?}");
    let notices = of_type(&events, "notice");
    assert!(notices.iter().any(|n| n["message"].as_str().unwrap().contains("day's budget")), "{notices:?}");
    let end = events.last().unwrap();
    assert_eq!((&end["type"], &end["stop_reason"]), (&json!("turn_completed"), &json!("budget")), "{end}");
}
