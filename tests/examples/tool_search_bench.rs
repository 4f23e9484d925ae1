//! Request bytes of one turn with 5 MCP servers of 20 tools each (the fixture's 11 and 9 of its
//! catalog's), before and after deferral: all tools sent, superpi's own `tool_search`, and each
//! vendor's built-in tool search. Prints figures, asserts nothing.
//!
//! `cargo build --workspace --bins && cargo run -p superpi-tests --example tool_search_bench`
//!
//! The turn: the model looks for `echo`, calls one server's `echo`, and answers (three model
//! requests with superpi's own search, two otherwise: the vendor's search runs inside the
//! answer). "context" is the fakes' count of the first request's input tokens: a quarter of
//! its bytes, less the deferred schemas no search loaded (what the vendors leave out of the
//! model's context).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use serde_json::{Value, json};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{AnthropicFake, FakeServer, OpenAiFake, ResponsesFake, counted_tokens};
use superpi_tests::TestEnv;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    AllSent,
    Own,
    BuiltIn,
}

fn script(mode: Mode) -> Vec<Answer> {
    let call = || Answer::tool_call("mcp__s0__echo", json!({"text": "found"}));
    match mode {
        Mode::AllSent => vec![call(), Answer::text("done")],
        Mode::Own => vec![Answer::tool_call("tool_search", json!({"query": "echo"})), call(), Answer::text("done")],
        Mode::BuiltIn => {
            vec![Answer::tool_search("echo", "mcp__s0__echo", json!({"text": "found"})), Answer::text("done")]
        }
    }
}

async fn turn(fake: &FakeServer, model: &str, mode: Mode) -> (Vec<usize>, u64) {
    let env = TestEnv::new();
    let fixture = superpi_tests::mcp_fixture_bin().display().to_string();
    let mut servers = serde_json::Map::new();
    for n in 0..5 {
        let mut server = json!({"command": fixture, "args": ["--tools", "9"]});
        if mode == Mode::AllSent {
            server["defer"] = json!(false);
        }
        servers.insert(format!("s{n}"), server);
    }
    let settings = json!({"mcp_servers": Value::Object(servers)});
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
    let builtin = mode == Mode::BuiltIn;
    let providers = format!(
        "[providers.anthropic]\nbuiltin_tool_search = {builtin}\n[providers.openai]\nbuiltin_tool_search = {builtin}\n"
    );
    std::fs::write(env.locations.config_dir.join("providers.toml"), providers).unwrap();
    let mut cmd = env.command(&["run", "--mode", "accept-edits", "--model", model, "look it up"]);
    cmd.envs(fake.env());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    env.kill_kernel();
    let sizes = fake.requests().iter().map(|r| r.body.len()).collect();
    // The Chat Completions fake counts no tokens without a cache key: nothing there is deferred
    // on the wire, so the whole body is in the context.
    let first = &fake.exchanges()[0];
    let context = match model {
        "gpt-4o-mini" => counted_tokens(&first.request.body),
        _ => first.prompt_tokens,
    };
    (sizes, context)
}

fn main() {
    superpi_tests::bench::run(bench());
}

async fn bench() {
    println!("one turn, 5 MCP servers x 20 tools (search, one call, answer)");
    println!(
        "{:<44} {:>8} {:>13} {:>10} {:>13}",
        "api / deferral", "requests", "first (bytes)", "turn (bytes)", "context (tok)"
    );
    let rows: [(&str, &str, Mode); 8] = [
        ("openai chat, all sent", "gpt-4o-mini", Mode::AllSent),
        ("openai chat, superpi tool_search", "gpt-4o-mini", Mode::Own),
        ("anthropic, all sent", "claude-sonnet-4-5", Mode::AllSent),
        ("anthropic, superpi tool_search", "claude-sonnet-4-5", Mode::Own),
        ("anthropic, built-in tool search", "claude-sonnet-4-5", Mode::BuiltIn),
        ("responses, all sent", "gpt-5.4-codex", Mode::AllSent),
        ("responses, superpi tool_search", "gpt-5.4-codex", Mode::Own),
        ("responses, built-in tool_search", "gpt-5.4-codex", Mode::BuiltIn),
    ];
    for (label, model, mode) in rows {
        let fake = match model {
            "gpt-4o-mini" => OpenAiFake::start(script(mode)).await,
            "claude-sonnet-4-5" => AnthropicFake::start(script(mode)).await,
            _ => ResponsesFake::start(script(mode)).await,
        }
        .unwrap();
        let (sizes, context) = turn(&fake, model, mode).await;
        let total: usize = sizes.iter().sum();
        println!("{label:<44} {:>8} {:>13} {total:>10} {context:>13}", sizes.len(), sizes[0]);
    }
}
