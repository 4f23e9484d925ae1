//! Thinking effort per vendor, against the fake servers that enforce each vendor's rules: every
//! level a model lists is sent in that vendor's shape and accepted; a model without a thinking
//! setting is sent none; and the fakes refuse what the real APIs refuse.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use futures::StreamExt;
use serde_json::{Value, json};
use superpi_proto::{Effort, Message};
use superpi_providers::testing::fakes::{AnthropicFake, FakeServer, GeminiFake, OpenAiFake};
use superpi_providers::testing::rules::{anthropic, gemini, openai};
use superpi_providers::{ModelRequest, ProvidersConfig, StreamEvent, effort, resolve, validate};

fn config(fake: &FakeServer) -> ProvidersConfig {
    let vars = fake.env();
    let mut config = ProvidersConfig::default();
    config.apply_env(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()));
    config
}

/// Sends one request with `effort` to `model` and returns the body the fake accepted.
async fn sent_with(fake: &FakeServer, model: &str, effort: Option<Effort>) -> Value {
    let config = config(fake);
    let request =
        ModelRequest { model: model.into(), messages: vec![Message::user_text("think")], effort, ..Default::default() };
    let events: Vec<StreamEvent> = resolve(model, &config).unwrap().stream(request).collect().await;
    validate(&events).unwrap();
    assert!(matches!(events.last(), Some(StreamEvent::Done(_))), "{model} {effort:?}: {:?}", events.last());
    assert!(fake.rejections().is_empty(), "{model} {effort:?}: {:?}", fake.rejections());
    fake.accepted().pop().unwrap()
}

#[tokio::test]
async fn openai_reasoning_models_get_reasoning_effort() {
    let fake = OpenAiFake::start(vec![]).await.unwrap();
    let config = config(&fake);
    assert_eq!(effort::levels("gpt-5-mini", &config), &Effort::ALL);
    assert_eq!(effort::levels("o3", &config), &[Effort::Low, Effort::Medium, Effort::High]);
    assert!(effort::levels("gpt-4o", &config).is_empty());

    let expected = [(Effort::Off, "minimal"), (Effort::Low, "low"), (Effort::Medium, "medium"), (Effort::High, "high")];
    for (level, wire) in expected {
        let body = sent_with(&fake, "gpt-5-mini", Some(level)).await;
        assert_eq!(body["reasoning_effort"], wire, "{level}");
    }
    // o3 takes no `minimal`: `off` is sent as its least level.
    assert_eq!(sent_with(&fake, "o3", Some(Effort::Off)).await["reasoning_effort"], "low");
    assert_eq!(sent_with(&fake, "o3", Some(Effort::High)).await["reasoning_effort"], "high");
    // A model without reasoning is sent none, whatever the conversation asks.
    assert!(sent_with(&fake, "gpt-4o", Some(Effort::High)).await.get("reasoning_effort").is_none());
    assert!(sent_with(&fake, "o3", None).await.get("reasoning_effort").is_none());
}

#[tokio::test]
async fn anthropic_gets_a_thinking_budget_inside_max_tokens() {
    let fake = AnthropicFake::start(vec![]).await.unwrap();
    let config = config(&fake);
    assert_eq!(effort::levels("claude-sonnet-4-5", &config), &Effort::ALL);
    assert!(effort::levels("claude-3-5-haiku-latest", &config).is_empty());
    for (level, budget) in [(Effort::Low, 2048), (Effort::Medium, 8192), (Effort::High, 24_576)] {
        for model in ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"] {
            let body = sent_with(&fake, model, Some(level)).await;
            assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": budget}), "{model} {level}");
            let max_tokens = body["max_tokens"].as_u64().unwrap();
            assert!(max_tokens > budget, "{model} {level}: {max_tokens}");
            assert!(body.get("temperature").is_none());
        }
    }
    assert!(sent_with(&fake, "claude-sonnet-4-5", Some(Effort::Off)).await.get("thinking").is_none());
    assert!(sent_with(&fake, "claude-3-5-haiku-latest", Some(Effort::High)).await.get("thinking").is_none());
}

#[tokio::test]
async fn anthropic_settings_budget_is_not_sent_to_a_model_without_thinking() {
    let fake = AnthropicFake::start(vec![]).await.unwrap();
    let mut config = config(&fake);
    config.anthropic.thinking_budget = Some(4000);
    let request = ModelRequest {
        model: "claude-3-5-haiku-latest".into(),
        messages: vec![Message::user_text("hi")],
        ..Default::default()
    };
    let events: Vec<StreamEvent> = resolve("claude-3-5-haiku-latest", &config).unwrap().stream(request).collect().await;
    assert!(matches!(events.last(), Some(StreamEvent::Done(_))), "{:?}", fake.rejections());
    assert!(fake.accepted()[0].get("thinking").is_none());
}

#[tokio::test]
async fn gemini_gets_a_budget_on_2_5_and_a_level_on_3() {
    let fake = GeminiFake::start(vec![]).await.unwrap();
    let config = config(&fake);
    assert_eq!(effort::levels("gemini-2.5-pro", &config), &[Effort::Low, Effort::Medium, Effort::High]);
    assert_eq!(effort::levels("gemini-3-pro-preview", &config), &[Effort::Low, Effort::High]);
    assert!(effort::levels("gemini-2.0-flash", &config).is_empty());
    let thinking = |body: &Value| body["generationConfig"]["thinkingConfig"].clone();

    let flash = [(Effort::Off, 0), (Effort::Low, 1024), (Effort::Medium, 8192), (Effort::High, 24_576)];
    for (level, budget) in flash {
        let body = sent_with(&fake, "gemini-2.5-flash", Some(level)).await;
        assert_eq!(thinking(&body), json!({"includeThoughts": budget > 0, "thinkingBudget": budget}), "{level}");
    }
    let body = sent_with(&fake, "gemini-2.5-pro", Some(Effort::High)).await;
    assert_eq!(thinking(&body)["thinkingBudget"], 32_768);
    // 2.5 Pro cannot go without thinking: `off` is its least budget.
    assert_eq!(thinking(&sent_with(&fake, "gemini-2.5-pro", Some(Effort::Off)).await)["thinkingBudget"], 1024);
    assert_eq!(thinking(&sent_with(&fake, "gemini-2.5-flash-lite", Some(Effort::Low)).await)["thinkingBudget"], 1024);

    let body = sent_with(&fake, "gemini-3-pro-preview", Some(Effort::Medium)).await;
    assert_eq!(thinking(&body), json!({"includeThoughts": true, "thinkingLevel": "low"}));
    let body = sent_with(&fake, "gemini-3-flash-preview", Some(Effort::Off)).await;
    assert_eq!(thinking(&body), json!({"includeThoughts": true, "thinkingLevel": "minimal"}));
    let body = sent_with(&fake, "gemini-2.0-flash", Some(Effort::High)).await;
    assert!(body.pointer("/generationConfig/thinkingConfig").is_none(), "{body}");
}

#[test]
fn a_level_the_model_lacks_is_refused_by_name() {
    let config = ProvidersConfig::default();
    assert_eq!(effort::refusal("o3", Effort::High, &config), None);
    let why = effort::refusal("o3", Effort::Off, &config).unwrap();
    assert!(why.contains("`o3`") && why.contains("low, medium, high"), "{why}");
    let why = effort::refusal("gpt-4o", Effort::Low, &config).unwrap();
    assert!(why.contains("no thinking effort"), "{why}");
    assert_eq!(effort::refusal("mock", Effort::Off, &config), None);
}

/// The fakes refuse what each API documents it refuses, in its own words.
#[test]
fn the_fakes_enforce_each_vendors_thinking_rules() {
    let message = |r: Result<(), superpi_providers::testing::rules::Violation>| r.unwrap_err().message;
    let user = json!([{"role": "user", "content": "hi"}]);
    let claude = |extra: Value| {
        let mut body = json!({"model": "claude-sonnet-4-5", "max_tokens": 4000, "messages": user,
                              "thinking": {"type": "enabled", "budget_tokens": 2048}});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        body
    };
    assert!(anthropic::check(&claude(json!({}))).is_ok());
    assert!(
        message(anthropic::check(&claude(json!({"thinking": {"type": "enabled", "budget_tokens": 512}}))))
            .contains("greater than or equal to 1024")
    );
    assert!(message(anthropic::check(&claude(json!({"max_tokens": 2048})))).contains("must be greater than"));
    assert!(
        message(anthropic::check(&claude(json!({"temperature": 0.2})))).contains("`temperature` may only be set to 1")
    );
    assert!(anthropic::check(&claude(json!({"temperature": 1}))).is_ok());
    assert!(message(anthropic::check(&claude(json!({"top_k": 5})))).contains("top_k"));
    assert!(message(anthropic::check(&claude(json!({"top_p": 0.5})))).contains("top_p"));
    assert!(message(anthropic::check(&claude(json!({"tool_choice": {"type": "any"}})))).contains("forces tool use"));
    assert!(
        message(anthropic::check(&claude(json!({"model": "claude-3-5-haiku-latest"}))))
            .contains("does not support thinking")
    );

    let gpt = |model: &str, effort: &str| json!({"model": model, "stream": true, "messages": user, "reasoning_effort": effort});
    assert!(openai::check(&gpt("gpt-5", "minimal")).is_ok());
    assert!(message(openai::check(&gpt("o3", "minimal"))).contains("does not support 'minimal'"));
    assert!(message(openai::check(&gpt("o3", "max"))).contains("Supported values are"));
    assert!(message(openai::check(&gpt("gpt-4o", "low"))).contains("not supported with this model"));

    let contents = json!([{"role": "user", "parts": [{"text": "hi"}]}]);
    let with = |thinking: Value| json!({"contents": contents, "generationConfig": {"thinkingConfig": thinking}});
    assert!(gemini::check_for("gemini-3-pro-preview", &with(json!({"thinkingLevel": "high"}))).is_ok());
    assert!(
        message(gemini::check_for("gemini-3-pro-preview", &with(json!({"thinkingLevel": "medium"}))))
            .contains("supports low, high")
    );
    assert!(
        message(gemini::check_for(
            "gemini-3-flash-preview",
            &with(json!({"thinkingLevel": "low", "thinkingBudget": 1024}))
        ))
        .contains("only set one")
    );
    assert!(
        message(gemini::check_for("gemini-2.5-flash", &with(json!({"thinkingLevel": "low"}))))
            .contains("not supported for this model")
    );
    assert!(
        message(gemini::check_for("gemini-2.5-pro", &with(json!({"thinkingBudget": 0}))))
            .contains("only works in thinking mode")
    );
    assert!(
        message(gemini::check_for("gemini-2.5-flash", &with(json!({"thinkingBudget": 30000}))))
            .contains("between 0 and 24576")
    );
}
