//! End to end: `superpi run --model gpt-4o-mini` against the OpenAI fake replaying a recorded
//! stream, checking the answer and what was sent; every request must pass the vendor's rules.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use serde_json::{Value, json};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{AnthropicFake, FakeServer, OpenAiFake, ResponsesFake};
use superpi_providers::testing::rules::responses::reasoning_item_of;
use superpi_tests::TestEnv;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_an_openai_compatible_server_streams_its_answer() {
    let server = OpenAiFake::start(vec![Answer::recorded("openai_text.sse", 7).unwrap()]).await.unwrap();
    let env = TestEnv::new();
    let mut cmd = env.command(&["run", "--model", "gpt-4o-mini", "hi"]);
    cmd.envs(server.env()).env("OPENAI_API_KEY", "sk-test-key");
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.trim(), "Hello there, wörld ✓");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("mock"));

    assert_eq!(server.rejections(), vec![]);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json().unwrap();
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["stream"], true);
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test-key"));
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"], "hi");
    assert!(body["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "bash")));
}

#[test]
fn a_model_without_credentials_is_an_error_naming_what_is_missing() {
    let env = TestEnv::new();
    let out = env.command(&["run", "--model", "claude-sonnet-4", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ANTHROPIC_API_KEY"), "{stderr}");
    let out = env.command(&["run", "--model", "no-such-model-xyz", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-model-xyz"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auth_command_supplies_the_bearer_token() {
    let server = OpenAiFake::start(vec![Answer::recorded("openai_text.sse", 64).unwrap()]).await.unwrap();
    let env = TestEnv::new();
    let script = env.path().join("token.sh");
    std::fs::write(&script, "#!/bin/sh\necho short-lived-token-42\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut cmd = env.command(&["run", "--model", "gpt-4o-mini", "hi"]);
    cmd.envs(server.env()).env_remove("OPENAI_API_KEY").env("SUPERPI_OPENAI_AUTH_COMMAND", &script);
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.rejections(), vec![]);
    assert_eq!(server.requests()[0].header("authorization"), Some("Bearer short-lived-token-42"));
}

/// A tool call and its result go back to each vendor in a shape its rules accept: the real
/// kernel runs `ls` between two requests to the fake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_round_trip_passes_each_vendors_rules() {
    use superpi_providers::testing::fakes::{AnthropicFake, FakeServer, GeminiFake};
    let script = || vec![Answer::tool_call("ls", serde_json::json!({"path": "."})), Answer::text("listed")];
    let fakes: Vec<(FakeServer, &str)> = vec![
        (OpenAiFake::start(script()).await.unwrap(), "gpt-4o-mini"),
        (AnthropicFake::start(script()).await.unwrap(), "claude-sonnet-4-5"),
        // Gemini takes the built-in tools' schemas only once translated to its OpenAPI subset.
        (GeminiFake::start(script()).await.unwrap(), "gemini-2.5-flash"),
    ];
    for (fake, model) in fakes {
        let env = TestEnv::new();
        std::fs::write(env.workspace.join("marker.txt"), "x").unwrap();
        let mut cmd = env.command(&["run", "--model", model, "list the files"]);
        cmd.envs(fake.env());
        let out = tokio::process::Command::from(cmd).output().await.unwrap();
        assert!(out.status.success(), "{model}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(fake.rejections(), vec![], "{model}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "listed", "{model}");
        let second = fake.accepted().pop().unwrap();
        assert!(second.to_string().contains("marker.txt"), "{model}: the tool result went back: {second}");
    }
}

/// CONFIG_DIR/providers.toml is read by the kernel: a custom model entry pointed at a local
/// OpenAI-compatible server (no key, as Ollama) answers, and `model.list` offers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_model_of_the_providers_file_answers() {
    let fake = OpenAiFake::start(vec![Answer::text("from the local model")]).await.unwrap();
    fake.allow_without_key();
    let env = TestEnv::new();
    let file = format!(
        "[providers]\ndefault_model = \"local-llama\"\n\n[[providers.models]]\nname = \"local-llama\"\n\
         provider = \"openai\"\nmodel = \"llama3.1:8b\"\nbase_url = \"{}/v1\"\n",
        fake.base
    );
    std::fs::write(env.locations.config_dir.join("providers.toml"), file).unwrap();
    let cmd = env.command(&["run", "--model", "local-llama", "hi"]);
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "from the local model");
    assert_eq!(fake.rejections(), vec![]);
    let sent = fake.accepted();
    assert_eq!(sent[0]["model"], "llama3.1:8b", "the entry's upstream id");
    assert_eq!(fake.requests()[0].header("authorization"), None, "no key for a keyless entry");

    let client = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let models = client.call("model.list", serde_json::json!({})).await.unwrap();
    let listed: Vec<(&str, bool)> = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), m["default"].as_bool().unwrap_or(false)))
        .collect();
    assert!(listed.contains(&("local-llama", true)), "{models}");
    let out = tokio::process::Command::from(env.command(&["models", "--json"])).output().await.unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"local-llama\""), "superpi models: {out:?}");
}

#[test]
fn a_bad_providers_file_is_an_error_naming_the_file_and_key() {
    let env = TestEnv::new();
    std::fs::write(env.locations.config_dir.join("providers.toml"), "[providers.anthropic]\napi_kee = \"x\"\n")
        .unwrap();
    let out = env.command(&["run", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("providers.toml") && stderr.contains("providers.anthropic.api_kee"), "{stderr}");
}

#[test]
fn a_missing_key_names_the_providers_file() {
    let env = TestEnv::new();
    let out = env.command(&["run", "--model", "gemini-2.5-flash", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let file = env.locations.config_dir.join("providers.toml");
    assert!(stderr.contains(&format!("providers.gemini.api_key in {}", file.display())), "{stderr}");
}

/// A 1x1 PNG, in base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// An image submitted to the kernel reaches each vendor in its documented shape (each fake
/// checks its API's rules), is stored once in the data dir and by digest in the history; a
/// model without vision refuses it before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_prompt_reaches_each_vendor_in_its_shape_and_a_blind_model_refuses_it() {
    use serde_json::json;
    use superpi_proto::method::{OpenParams, SubmitParams};
    use superpi_proto::{ContentBlock, EntryKind};
    use superpi_providers::testing::fakes::{AnthropicFake, GeminiFake};
    use superpi_providers::testing::rules::Vendor;

    let openai = OpenAiFake::start(vec![Answer::text("a pixel")]).await.unwrap();
    let anthropic = AnthropicFake::start(vec![Answer::text("a pixel")]).await.unwrap();
    let gemini = GeminiFake::start(vec![Answer::text("a pixel")]).await.unwrap();
    let env = TestEnv::new();
    let entry = |name: &str, provider: &str, model: &str, base: String| {
        format!(
            "[[providers.models]]\nname = \"{name}\"\nprovider = \"{provider}\"\nmodel = \"{model}\"\n\
             base_url = \"{base}\"\napi_key = \"k\"\n\n"
        )
    };
    let file = [
        entry("eyes-openai", "openai", "gpt-4o", openai.base_url(Vendor::Openai)),
        entry("eyes-anthropic", "anthropic", "claude-sonnet-4-5", anthropic.base_url(Vendor::Anthropic)),
        entry("eyes-gemini", "gemini", "gemini-2.5-flash", gemini.base_url(Vendor::Gemini)),
        entry("blind", "openai", "gpt-3.5-turbo", openai.base_url(Vendor::Openai)),
    ]
    .concat();
    std::fs::write(env.locations.config_dir.join("providers.toml"), file).unwrap();
    let client = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let image_prompt = |conversation_id| SubmitParams {
        conversation_id,
        content: vec![ContentBlock::text("what is this?"), ContentBlock::image("image/png", PNG)],
        ..Default::default()
    };
    let open = |model: &str| OpenParams {
        model: Some(model.to_string()),
        workspace: Some(env.workspace.display().to_string()),
        ..Default::default()
    };

    let shapes = [
        (
            "eyes-openai",
            &openai,
            json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}}),
        ),
        (
            "eyes-anthropic",
            &anthropic,
            // The last block of the request is a cache breakpoint.
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                   "cache_control": {"type": "ephemeral"}}),
        ),
        ("eyes-gemini", &gemini, json!({"inline_data": {"mime_type": "image/png", "data": PNG}})),
    ];
    for (model, fake, shape) in shapes {
        let conversation_id = client.open(open(model)).await.unwrap().conversation_id;
        client.submit(image_prompt(conversation_id)).await.unwrap();
        let ended = superpi_tests::first_turn_end(&client, conversation_id).await;
        assert!(matches!(ended, superpi_proto::EventBody::TurnCompleted { .. }), "{model}: {ended:?}");
        assert_eq!(fake.rejections(), vec![], "{model}");
        let sent = fake.accepted().pop().unwrap();
        assert!(sent.to_string().contains(&shape.to_string()), "{model}: {shape} not in {sent}");

        let history = client.history(conversation_id).await.unwrap();
        let prompt = history.entries.iter().find(|e| e.kind == EntryKind::User).unwrap();
        let ContentBlock::Image { media_type, data: None, sha256: Some(sha256) } = &prompt.message.content[1] else {
            panic!("{model}: the entry keeps the digest, not the bytes: {:?}", prompt.message.content);
        };
        assert_eq!(media_type, "image/png");
        let db = rusqlite::Connection::open(env.locations.database_path()).unwrap();
        let stored: Vec<u8> =
            db.query_row("SELECT bytes FROM images WHERE sha256 = ?1", [sha256], |row| row.get(0)).unwrap();
        assert_eq!(superpi_providers::images::encode(&stored), PNG);
    }

    let before = openai.accepted().len();
    let blind = client.open(open("blind")).await.unwrap().conversation_id;
    let refused = client.submit(image_prompt(blind)).await.unwrap_err().to_string();
    assert!(refused.contains("`blind` does not take images") && refused.contains("images = true"), "{refused}");
    assert_eq!(openai.accepted().len(), before, "nothing was sent for the refused prompt");
}

/// The `read` tool on an image file: the bytes reach each vendor that sees as its own image
/// part after the result (the fakes check the shape and the rules), and for a model that does
/// not see, the result is an error saying why, with no image sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_image_reaches_each_vendor_and_a_blind_model_is_told_why() {
    use serde_json::json;
    use superpi_providers::testing::fakes::{AnthropicFake, FakeServer, GeminiFake};
    let script = || vec![Answer::tool_call("read", json!({"path": "pixel.png"})), Answer::text("a pixel")];
    let image_url = json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}});
    let fakes: Vec<(FakeServer, &str, serde_json::Value)> = vec![
        (OpenAiFake::start(script()).await.unwrap(), "gpt-4o-mini", image_url),
        (
            AnthropicFake::start(script()).await.unwrap(),
            "claude-sonnet-4-5",
            // The last block of the request is a cache breakpoint.
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                   "cache_control": {"type": "ephemeral"}}),
        ),
        (
            GeminiFake::start(script()).await.unwrap(),
            "gemini-2.5-flash",
            json!({"inline_data": {"mime_type": "image/png", "data": PNG}}),
        ),
        (OpenAiFake::start(script()).await.unwrap(), "gpt-3.5-turbo", json!(null)),
    ];
    for (fake, model, shape) in fakes {
        let env = TestEnv::new();
        std::fs::write(env.workspace.join("pixel.png"), superpi_providers::images::decode(PNG).unwrap()).unwrap();
        let mut cmd = env.command(&["run", "--model", model, "what is in pixel.png?"]);
        cmd.envs(fake.env());
        let out = tokio::process::Command::from(cmd).output().await.unwrap();
        assert!(out.status.success(), "{model}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(fake.rejections(), vec![], "{model}");
        let second = fake.accepted().pop().unwrap().to_string();
        if shape.is_null() {
            assert!(second.contains("The image is not shown") && second.contains("does not take images"), "{second}");
            assert!(!second.contains(PNG), "no image reaches a blind model: {second}");
        } else {
            assert!(second.contains(&shape.to_string()), "{model}: {shape} not in {second}");
            assert!(second.contains("[the image that read call"), "{model}: {second}");
        }
    }
}

/// The reasoning items a Responses request sends back, by the item ids the fake gave them.
fn reasoning_sent(body: &Value) -> Vec<String> {
    let items = body["input"].as_array().unwrap().iter().filter(|item| item["type"] == "reasoning");
    items.map(|item| reasoning_item_of(item["encrypted_content"].as_str().unwrap()).unwrap()).collect()
}

/// A model OpenAI serves only through the Responses API (a codex model) answers through the
/// Responses wire: a tool turn, then a second prompt whose request carries back the encrypted
/// reasoning item of every answer before (the fake verifies each), every request within the
/// API's rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_only_model_runs_a_tool_turn_and_gets_its_reasoning_back() {
    let script =
        vec![Answer::tool_call("ls", json!({"path": "."})), Answer::text("listed"), Answer::text("still here")];
    let fake = ResponsesFake::start(script).await.unwrap();
    fake.set_reasoning("Looking at the files first.");
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("marker.txt"), "x").unwrap();
    let run = |args: &[&str]| {
        let mut cmd = env.command(args);
        cmd.envs(fake.env());
        tokio::process::Command::from(cmd).output()
    };
    let out = run(&["run", "--model", "gpt-5-codex", "list the files"]).await.unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "listed");
    let out = run(&["run", "-c", "anything new?"]).await.unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "still here");

    assert_eq!(fake.rejections(), vec![]);
    assert!(fake.requests().iter().all(|r| r.path == "/v1/responses"));
    let sent = fake.accepted();
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0]["model"], "gpt-5-codex");
    assert!(sent[1].to_string().contains("marker.txt"), "the tool's result went back: {}", sent[1]);
    assert_eq!(reasoning_sent(&sent[1]), ["rs_fake1"]);
    assert_eq!(reasoning_sent(&sent[2]), ["rs_fake1", "rs_fake2"], "the second prompt's request: {}", sent[2]);
    assert!(sent.iter().all(|body| body["prompt_cache_key"] == sent[0]["prompt_cache_key"]));
}

/// Runs a 20-step tool turn (19 `ls` calls and an answer) against `fake` with `model`, and
/// returns the input tokens and the cached part of them as the kernel reported them
/// (`usage_updated`, in `stream-json`), checked against what the fake said and against
/// `superpi session show`. The share is printed.
async fn twenty_step_turn_through(fake: &FakeServer, model: &str) -> (u64, u64) {
    for i in 0..19 {
        fake.push(Answer::tool_call("ls", json!({"path": format!("./d{i}")})));
    }
    fake.push(Answer::text("walked"));
    let env = TestEnv::new();
    for i in 0..19 {
        std::fs::create_dir_all(env.workspace.join(format!("d{i}"))).unwrap();
    }
    let mut cmd = env.command(&["run", "--model", model, "--output-format", "stream-json", "walk the directories"]);
    cmd.envs(fake.env());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fake.rejections(), vec![]);
    let updates: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == "usage_updated")
        .collect();
    assert_eq!(updates.len(), 20, "one per model call");
    let sum = |key: &str| updates.iter().map(|u| u[key].as_u64().unwrap()).sum::<u64>();
    let (input, cached) = (sum("input_tokens"), sum("cached_input_tokens"));
    let last = updates.last().unwrap();
    assert_eq!(
        (last["total_input_tokens"].as_u64(), last["total_cached_input_tokens"].as_u64()),
        (Some(input), Some(cached))
    );
    // Each call's counts are the vendor's, carried whole.
    let exchanges = fake.exchanges();
    let reported: Vec<(u64, u64)> = updates
        .iter()
        .map(|u| (u["input_tokens"].as_u64().unwrap(), u["cached_input_tokens"].as_u64().unwrap()))
        .collect();
    let served: Vec<(u64, u64)> = exchanges.iter().map(|e| (e.prompt_tokens, e.cached_tokens)).collect();
    assert_eq!(reported, served);
    let share = cached as f64 / input as f64;
    eprintln!(
        "{model}, 20-step tool turn: {cached} of {input} input tokens read from the cache ({:.1}%)",
        share * 100.0
    );
    let conversation = updates[0]["conversation_id"].to_string();
    let shown = env.command(&["session", "show", &conversation]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    let line = format!("{input} input tokens ({cached} read from the prompt cache, {:.0}%)", share * 100.0);
    assert!(shown.contains(&line), "{line} in:\n{shown}");
    (input, cached)
}

/// Prompt caching over a long agent turn on the Responses API: each request is sent under the
/// conversation's `prompt_cache_key`; the fake reports the prefix it saw before as cached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_twenty_step_tool_turn_reads_most_of_its_input_from_the_cache() {
    let fake = ResponsesFake::start(Vec::new()).await.unwrap();
    let (input, cached) = twenty_step_turn_through(&fake, "gpt-5-codex").await;
    assert!(cached as f64 >= 0.8 * input as f64, "{cached} of {input}");
}

/// The same turn on Anthropic Messages, which caches only at the breakpoints a request marks:
/// the tools, the system prompt and the last two user turns. The first request writes the
/// prefix; each later one reads the last one's and writes its own step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_twenty_step_tool_turn_on_anthropic_reads_most_of_its_input_from_the_cache() {
    let fake = AnthropicFake::start(Vec::new()).await.unwrap();
    let (input, cached) = twenty_step_turn_through(&fake, "claude-sonnet-4-5").await;
    assert!(cached as f64 >= 0.8 * input as f64, "{cached} of {input}");
    let exchanges = fake.exchanges();
    assert_eq!((exchanges[0].cached_tokens, exchanges[0].cache_written_tokens > 1024), (0, true), "a cold cache");
    assert!(
        exchanges[1..].iter().all(|e| e.cached_tokens > 0 && e.cache_written_tokens > 0),
        "each step reads and writes"
    );
}
