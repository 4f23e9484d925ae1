#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::Path;

use super::*;
use crate::config::ProviderKind;

const PATH: &str = "/cfg/providers.toml";

fn parse(text: &str) -> Result<ProvidersConfig, String> {
    ProvidersConfig::from_toml(text, Path::new(PATH)).map_err(|e| e.to_string())
}

#[test]
fn the_documented_file_reads() {
    let config = parse(
        r#"
[providers]
default_model = "llama3"

[providers.openai]
api_key = "sk-file"
models = ["gpt-4o-mini", "o3"]
reasoning_effort = "low"

[providers.anthropic]
thinking_budget = 4000

[[providers.models]]
name = "llama3"
provider = "openai"
model = "llama3.1:8b"
base_url = "http://127.0.0.1:11434/v1"

[[providers.models]]
name = "deep"
model = "o3"
reasoning_effort = "high"
price = { input = 1.5, cached_input = 0.4, output = 6.0 }

[providers.retry]
max_retries = 2
"#,
    )
    .unwrap();
    assert_eq!(config.default_model.as_deref(), Some("llama3"));
    assert_eq!(config.openai.api_key.as_deref(), Some("sk-file"));
    assert_eq!(config.anthropic.thinking_budget, Some(4000));
    assert_eq!(config.models[0].provider, ProviderKind::Openai);
    assert_eq!(config.retry.max_retries, 2);
    let price = crate::prices::Price { input: 1.5, cached_input: Some(0.4), cache_write: None, output: 6.0 };
    assert_eq!(crate::prices::for_model("deep", &config), Some(price));
    assert_eq!(config.file.as_deref(), Some(Path::new(PATH)));
    let deep = crate::router::route("deep", &config).unwrap();
    assert_eq!((deep.model.as_str(), deep.reasoning, deep.reasoning_effort.as_deref()), ("o3", true, Some("high")));
    let o3 = crate::router::route("o3", &config).unwrap();
    assert_eq!((o3.reasoning, o3.reasoning_effort.as_deref()), (true, Some("low")));
    let mini = crate::router::route("gpt-4o-mini", &config).unwrap();
    assert_eq!((mini.reasoning, mini.reasoning_effort), (false, None));
    assert_eq!(parse("").unwrap(), ProvidersConfig { file: Some(PATH.into()), ..Default::default() });
}

#[test]
fn a_bad_key_is_an_error_naming_the_file_and_the_key() {
    let cases = [
        (
            "[providers.anthropic]\napi_kee = \"x\"\n",
            "/cfg/providers.toml: key `providers.anthropic.api_kee`: unknown field `api_kee`",
        ),
        ("[provider]\n", "/cfg/providers.toml: key `provider`: unknown field `provider`"),
        (
            "[providers.retry]\nmax_retries = \"four\"\n",
            "/cfg/providers.toml: key `providers.retry.max_retries`: invalid type",
        ),
        (
            "[[providers.models]]\nname = \"x\"\nprovider = \"azure\"\n",
            "/cfg/providers.toml: key `providers.models[0].provider`: unknown variant `azure`",
        ),
        (
            "[[providers.models]]\nmodel = \"x\"\n",
            "/cfg/providers.toml: key `providers.models[0].name`: a model entry needs",
        ),
        (
            "[[providers.models]]\nname = \"a\"\n[[providers.models]]\nname = \"a\"\n",
            "key `providers.models[1].name`: `a` is listed twice",
        ),
        (
            "[[providers.models]]\nname = \"a\"\nbase_url = \"localhost:11434\"\n",
            "key `providers.models[0].base_url`: `localhost:11434` is not an http",
        ),
        (
            "[providers.openai]\nreasoning_effort = \"max\"\n",
            "key `providers.openai.reasoning_effort`: `max` is not one of",
        ),
        ("[providers.openai]\nauth_command = []\n", "key `providers.openai.auth_command`: names no program"),
        ("[providers]\ndefault_model = \"llama9\"\n", "key `providers.default_model`: unknown model `llama9`"),
        (
            "[[providers.models]]\nname = \"a\"\nprice = { input = -1.0, output = 2.0 }\n",
            "key `providers.models[0].price.input`: -1 is not a price",
        ),
        (
            "[[providers.models]]\nname = \"a\"\nprice = { input = 1.0 }\n",
            "key `providers.models[0].price`: missing field `output`",
        ),
        ("[providers\n", "/cfg/providers.toml: "),
    ];
    for (text, expected) in cases {
        let error = parse(text).unwrap_err();
        assert!(error.contains(expected), "{text:?}: {error}");
    }
}

#[test]
fn load_reads_the_config_dir_and_the_environment_wins() {
    let dir = std::env::temp_dir().join(format!("superpi-providers-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = ProvidersConfig::load(&dir, |_| None).unwrap();
    assert_eq!(missing.file, Some(dir.join(PROVIDERS_FILE)));
    std::fs::write(dir.join(PROVIDERS_FILE), "[providers.anthropic]\napi_key = \"from-file\"\n").unwrap();
    let from_file = ProvidersConfig::load(&dir, |_| None).unwrap();
    assert_eq!(from_file.anthropic.api_key.as_deref(), Some("from-file"));
    let env =
        ProvidersConfig::load(&dir, |name| (name == "ANTHROPIC_API_KEY").then(|| "from-env".to_string())).unwrap();
    assert_eq!(env.anthropic.api_key.as_deref(), Some("from-env"));
    // Errors point at the file that is read.
    let error = crate::router::route("gemini-2.5-pro", &from_file).unwrap_err().to_string();
    assert!(error.contains(&format!("providers.gemini.api_key in {}", dir.join(PROVIDERS_FILE).display())), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn responses_api_models_are_routed_to_it_and_wire_api_chooses_for_an_entry() {
    let config = parse(
        r#"
[providers.openai]
api_key = "k"

[[providers.models]]
name = "proxied"
model = "gpt-4.1"
wire_api = "responses"

[[providers.models]]
name = "codex-on-chat"
model = "gpt-5-codex"
wire_api = "chat"

[[providers.models]]
name = "codex-plain"
model = "gpt-5.1-codex-mini"
"#,
    )
    .unwrap();
    for model in ["o3-pro", "gpt-5-codex", "o4-mini-deep-research", "codex-mini-latest", "openai/gpt-5-pro"] {
        let route = crate::router::route(model, &config).unwrap();
        assert!(route.responses && route.reasoning, "{model}: {route:?}");
    }
    for model in ["gpt-4o", "o3", "gpt-5", "gpt-5-mini"] {
        assert!(!crate::router::route(model, &config).unwrap().responses, "{model}");
    }
    let responses = |name: &str| crate::router::route(name, &config).unwrap().responses;
    assert_eq!((responses("proxied"), responses("codex-on-chat"), responses("codex-plain")), (true, false, true));
    let error = crate::router::route("computer-use-preview", &config).unwrap_err().to_string();
    assert!(error.contains("computer-use tool"), "{error}");
    let error = parse("[[providers.models]]\nname = \"c\"\nprovider = \"anthropic\"\nwire_api = \"responses\"\n");
    assert!(error.unwrap_err().contains("providers.models[0].wire_api"));
    assert!(
        parse("[[providers.models]]\nname = \"c\"\nwire_api = \"completions\"\n").unwrap_err().contains("wire_api")
    );
}
