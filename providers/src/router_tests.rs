use super::*;
use crate::config::{ModelEntry, VendorConfig};

fn env(vars: &[(&str, &str)]) -> ProvidersConfig {
    let mut config = ProvidersConfig::default();
    let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    config.apply_env(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()));
    config
}

#[test]
fn routes_by_name() {
    let config = env(&[("OPENAI_API_KEY", "sk-o"), ("ANTHROPIC_API_KEY", "sk-a"), ("GEMINI_API_KEY", "g")]);
    let cases = [
        ("gpt-4o-mini", ProviderKind::Openai, "gpt-4o-mini"),
        ("o1-preview", ProviderKind::Openai, "o1-preview"),
        ("o3", ProviderKind::Openai, "o3"),
        ("o4-mini", ProviderKind::Openai, "o4-mini"),
        ("openai/some-model", ProviderKind::Openai, "some-model"),
        ("claude-sonnet-4-5", ProviderKind::Anthropic, "claude-sonnet-4-5"),
        ("anthropic/claude-x", ProviderKind::Anthropic, "claude-x"),
        ("gemini-2.5-flash", ProviderKind::Gemini, "gemini-2.5-flash"),
        ("google/gemini-pro", ProviderKind::Gemini, "gemini-pro"),
        ("mock", ProviderKind::Mock, "mock"),
    ];
    for (name, kind, upstream) in cases {
        let r = route(name, &config).unwrap();
        assert_eq!((r.kind, r.model.as_str()), (kind, upstream), "{name}");
    }
    let r = route("claude-sonnet-4-5", &config).unwrap();
    assert_eq!(r.auth, Auth::Key("sk-a".into()));
    assert_eq!(r.base_url, crate::anthropic::DEFAULT_ANTHROPIC_BASE_URL);
}

#[test]
fn unknown_models_and_missing_keys_are_named() {
    let config = env(&[]);
    let err = route("llama3", &config).unwrap_err();
    assert!(matches!(&err, ProviderError::UnknownModel { model, .. } if model == "llama3"), "{err}");
    for (model, var) in
        [("gpt-4o", "OPENAI_API_KEY"), ("claude-x", "ANTHROPIC_API_KEY"), ("gemini-x", "GEMINI_API_KEY")]
    {
        let err = route(model, &config).unwrap_err();
        assert!(matches!(err, ProviderError::NotConfigured { .. }), "{err}");
        assert!(err.to_string().contains(var), "{err}");
    }
    assert!(resolve("mock", &config).is_ok());
}

#[test]
fn base_url_alone_configures_a_local_openai_server() {
    let config = env(&[("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")]);
    let r = route("gpt-4o-mini", &config).unwrap();
    assert_eq!(r.auth, Auth::None);
    assert_eq!(r.base_url, "http://127.0.0.1:11434/v1");
    assert_eq!(default_model(&config), ("gpt-4o-mini".to_string(), false));
}

#[test]
fn models_list_routes_other_names() {
    let mut config = ProvidersConfig::from_section(serde_json::json!({
        "models": [
            {"name": "llama3", "base_url": "http://127.0.0.1:8000/v1"},
            {"name": "big", "provider": "anthropic", "model": "claude-opus-4-1", "api_key_env": "BIG_KEY"},
            {"name": "nokey", "provider": "gemini"},
        ]
    }))
    .unwrap();
    config.apply_env(|name| (name == "BIG_KEY").then(|| "k".to_string()));
    let r = route("llama3", &config).unwrap();
    assert_eq!((r.kind, r.model.as_str(), r.auth.clone()), (ProviderKind::Openai, "llama3", Auth::None));
    let r = route("big", &config).unwrap();
    assert_eq!(
        (r.kind, r.model.as_str(), r.auth.clone()),
        (ProviderKind::Anthropic, "claude-opus-4-1", Auth::Key("k".into()))
    );
    let err = route("nokey", &config).unwrap_err();
    assert!(err.to_string().contains("GEMINI_API_KEY"), "{err}");
    let names: Vec<String> = configured_models(&config).into_iter().map(|m| m.name).collect();
    assert_eq!(names, vec!["llama3", "big", "mock"]);
}

#[test]
fn default_model_falls_back_to_mock_only_when_nothing_is_configured() {
    assert_eq!(default_model(&env(&[])), ("mock".to_string(), true));
    assert!(!default_model(&env(&[("ANTHROPIC_API_KEY", "k")])).1);
    assert_eq!(default_model(&env(&[("SUPERPI_MODEL", "gpt-4o")])), ("gpt-4o".to_string(), false));
    let config = ProvidersConfig {
        gemini: VendorConfig {
            api_key: Some("g".into()),
            models: vec!["gemini-2.0-flash".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(default_model(&config), ("gemini-2.0-flash".to_string(), false));
    let listed = configured_models(&config);
    assert_eq!(listed[0], ModelInfo { name: "gemini-2.0-flash".into(), provider: "gemini".into(), default: true });
    assert_eq!(listed.last().map(|m| m.name.as_str()), Some("mock"));
}

#[test]
fn env_wins_over_the_file_and_empty_vars_are_ignored() {
    let mut config = ProvidersConfig {
        openai: VendorConfig { api_key: Some("file".into()), ..Default::default() },
        models: vec![ModelEntry { name: "x".into(), ..Default::default() }],
        ..Default::default()
    };
    config.apply_env(|name| match name {
        "OPENAI_API_KEY" => Some("env".into()),
        "ANTHROPIC_API_KEY" => Some("  ".into()),
        _ => None,
    });
    assert_eq!(config.openai.api_key.as_deref(), Some("env"));
    assert_eq!(config.anthropic.api_key, None);
}

#[test]
fn auth_command_needs_a_runner() {
    let config = ProvidersConfig {
        openai: VendorConfig { auth_command: Some(vec!["get-token".into()]), ..Default::default() },
        ..Default::default()
    };
    let err = route("gpt-4o", &config).unwrap_err();
    assert!(err.to_string().contains("runner"), "{err}");
}

#[test]
fn an_api_key_wins_over_an_auth_command() {
    let config = env(&[("OPENAI_API_KEY", "sk"), ("SUPERPI_OPENAI_AUTH_COMMAND", "/usr/bin/print-token")]);
    assert_eq!(config.openai.auth_command, Some(vec!["/usr/bin/print-token".to_string()]));
    assert_eq!(route("gpt-4o", &config).unwrap().auth, Auth::Key("sk".into()));
}

#[test]
fn a_name_on_a_local_endpoint_of_its_vendor_gets_the_local_default_window() {
    let mut config = ProvidersConfig::default();
    config.openai.base_url = Some("http://localhost:8080/v1".into());
    config.openai.api_key = Some("k".into());
    assert_eq!(model_limits("openai/llama3", &config), crate::limits::UNKNOWN_LOCAL_MODEL);
    // A family the table knows keeps its figures; a remote endpoint the general default.
    assert_eq!(model_limits("gpt-4o", &config).context_window, 128_000);
    config.openai.base_url = Some("https://llm.example.com/v1".into());
    assert_eq!(model_limits("openai/llama3", &config), crate::limits::UNKNOWN_MODEL);
}
