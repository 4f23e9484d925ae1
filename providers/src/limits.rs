//! How much a model takes and gives: its context window and its output limit, from a built-in
//! table of the known families, overridden per model by `[[providers.models]]`'s
//! `context_window` and `max_output_tokens` (the mock's too, so tests can make it tiny).
//!
//! The table holds the vendors' published figures; a model it does not know gets
//! [`UNKNOWN_MODEL`], or [`UNKNOWN_LOCAL_MODEL`] when its endpoint is local (a loopback,
//! private or link-local address, or a name of the local network), and its window should be
//! set in the providers file. A server that refuses a request as too long says how long its
//! window is (see [`crate::overflow`]): the kernel learns it from there.

use serde::{Deserialize, Serialize};

use crate::config::{ProviderKind, ProvidersConfig};

/// A model's context window and output limit, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelLimits {
    /// Tokens of one request and its answer together.
    pub context_window: u64,
    /// Tokens of one answer at most.
    pub max_output_tokens: u64,
}

/// What a model the table does not know gets (a local server's model, a new family).
pub const UNKNOWN_MODEL: ModelLimits = ModelLimits { context_window: 128_000, max_output_tokens: 8_192 };

/// What a model the table does not know gets when its server is local: Ollama, llama.cpp's
/// server, vLLM, LM Studio on this machine or the local network. Their window is how the
/// server was started, not the model's: llama.cpp's `-c` (divided among its `--parallel`
/// slots), Ollama's `num_ctx` or `OLLAMA_CONTEXT_LENGTH` (4,096 to 32,768 by default, by the
/// GPU's memory), LM Studio's load setting (4,096 by default), vLLM's `--max-model-len` (the
/// model's own, often 32,768 to 131,072). 32,768 is the smallest window a local model is
/// useful to a coding agent with (the system prompt and tools take several thousand tokens),
/// and the most common of those that size: a smaller server refuses the first request past its
/// window, and the kernel learns the window from the refusal and compacts; a default below it
/// would compact every conversation with a larger server early, a model call and detail lost
/// each time. Ollama by default does not refuse but drops the prompt's start: give such a
/// model its `context_window` in the providers file.
pub const UNKNOWN_LOCAL_MODEL: ModelLimits = ModelLimits { context_window: 32_768, max_output_tokens: 8_192 };

/// The offline mock's limits unless the providers file sets them.
pub const MOCK: ModelLimits = ModelLimits { context_window: 200_000, max_output_tokens: 8_192 };

const fn limits(context_window: u64, max_output_tokens: u64) -> ModelLimits {
    ModelLimits { context_window, max_output_tokens }
}

/// Upstream model id prefixes and their limits; the first matching prefix wins, so a more
/// specific prefix comes before a shorter one.
const TABLE: &[(&str, ModelLimits)] = &[
    // OpenAI
    ("gpt-5", limits(400_000, 128_000)),
    ("gpt-4.1", limits(1_047_576, 32_768)),
    ("gpt-4o", limits(128_000, 16_384)),
    ("chatgpt-4o", limits(128_000, 16_384)),
    ("gpt-4-turbo", limits(128_000, 4_096)),
    ("gpt-4", limits(8_192, 8_192)),
    ("gpt-3.5-turbo", limits(16_385, 4_096)),
    ("o1-mini", limits(128_000, 65_536)),
    ("o1", limits(200_000, 100_000)),
    ("o3", limits(200_000, 100_000)),
    ("o4-mini", limits(200_000, 100_000)),
    ("codex-mini", limits(200_000, 100_000)),
    // Anthropic
    ("claude-opus-4-5", limits(200_000, 64_000)),
    ("claude-opus-4", limits(200_000, 32_000)),
    ("claude-sonnet-4", limits(200_000, 64_000)),
    ("claude-haiku-4", limits(200_000, 64_000)),
    ("claude-3-7-sonnet", limits(200_000, 64_000)),
    ("claude-3-5", limits(200_000, 8_192)),
    ("claude-3", limits(200_000, 4_096)),
    // Gemini
    ("gemini-3", limits(1_048_576, 65_536)),
    ("gemini-2.5", limits(1_048_576, 65_536)),
    ("gemini-2.0", limits(1_048_576, 8_192)),
    ("gemini-1.5-pro", limits(2_097_152, 8_192)),
    ("gemini-1.5", limits(1_048_576, 8_192)),
];

/// The built-in limits of an upstream model id.
pub fn builtin(kind: ProviderKind, upstream: &str) -> ModelLimits {
    if kind == ProviderKind::Mock { MOCK } else { of_id(upstream).unwrap_or(UNKNOWN_MODEL) }
}

/// The table's figures for a model id, read after any `vendor/` prefix.
fn of_id(id: &str) -> Option<ModelLimits> {
    let id = id.rsplit('/').next().unwrap_or(id);
    TABLE.iter().find(|(prefix, _)| id.starts_with(prefix)).map(|(_, limits)| *limits)
}

/// The figures of a model the table does not know: [`UNKNOWN_LOCAL_MODEL`] when the model's
/// endpoint is local, else [`UNKNOWN_MODEL`].
fn unknown(base_url: Option<&str>) -> ModelLimits {
    if base_url.is_some_and(is_local) { UNKNOWN_LOCAL_MODEL } else { UNKNOWN_MODEL }
}

/// Whether an endpoint is on this machine or the local network: a loopback, private,
/// link-local, shared (100.64.0.0/10, a Tailscale address) or unspecified address, or a name
/// such as `localhost`, `*.local`, `*.lan`, `*.internal`, `*.home.arpa` or one without a dot
/// (a container's service name).
pub fn is_local(base_url: &str) -> bool {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    fn v4(ip: Ipv4Addr) -> bool {
        let shared = ip.octets()[0] == 100 && (ip.octets()[1] & 0xc0) == 64;
        ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified() || shared
    }
    fn v6(ip: Ipv6Addr) -> bool {
        let first = ip.segments()[0];
        let unique_local = (first & 0xfe00) == 0xfc00;
        let link_local = (first & 0xffc0) == 0xfe80;
        ip.is_loopback() || ip.is_unspecified() || unique_local || link_local || ip.to_ipv4_mapped().is_some_and(v4)
    }
    let Some(host) = reqwest::Url::parse(base_url).ok().and_then(|url| url.host_str().map(str::to_ascii_lowercase))
    else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => v4(ip),
        Ok(IpAddr::V6(ip)) => v6(ip),
        Err(_) => {
            let suffixes = [".localhost", ".local", ".lan", ".internal", ".home.arpa"];
            host == "localhost" || !host.contains('.') || suffixes.iter().any(|suffix| host.ends_with(suffix))
        }
    }
}

/// The limits of a model name as users type it: its `[[providers.models]]` entry's
/// `context_window` and `max_output_tokens` over the built-in figures. Any other name is
/// looked up as the id it sends upstream (the router only strips a `vendor/` prefix, which
/// the table skips too), whether or not its provider is configured; an unknown name gets
/// [`UNKNOWN_LOCAL_MODEL`] when its entry's endpoint is local, else [`UNKNOWN_MODEL`] (routing
/// reports the name itself). `crate::router::model_limits` also knows where a name without an
/// entry leads.
pub fn for_model(model: &str, config: &ProvidersConfig) -> ModelLimits {
    at_endpoint(model, config, None)
}

/// [`for_model`] for a model the router leads to `base_url`: one the table does not know gets
/// [`UNKNOWN_LOCAL_MODEL`] when that is local (an entry's own endpoint counts first).
pub fn at_endpoint(model: &str, config: &ProvidersConfig, base_url: Option<&str>) -> ModelLimits {
    let name = model.trim();
    let Some(entry) = config.models.iter().find(|entry| entry.name == name) else {
        return if name == "mock" { MOCK } else { of_id(name).unwrap_or_else(|| unknown(base_url)) };
    };
    let upstream = entry.model.as_deref().unwrap_or(&entry.name);
    let vendor_base = config.vendor(entry.provider).and_then(|vendor| vendor.base_url.as_deref());
    let base = match entry.provider {
        ProviderKind::Mock => MOCK,
        _ => of_id(upstream).unwrap_or_else(|| unknown(entry.base_url.as_deref().or(vendor_base).or(base_url))),
    };
    ModelLimits {
        context_window: entry.context_window.unwrap_or(base.context_window),
        max_output_tokens: entry.max_output_tokens.unwrap_or(base.max_output_tokens),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelEntry;

    #[test]
    fn known_families_get_their_published_figures() {
        assert_eq!(builtin(ProviderKind::Openai, "gpt-4o-mini"), limits(128_000, 16_384));
        assert_eq!(builtin(ProviderKind::Openai, "gpt-4.1-nano"), limits(1_047_576, 32_768));
        assert_eq!(builtin(ProviderKind::Openai, "gpt-4"), limits(8_192, 8_192));
        assert_eq!(builtin(ProviderKind::Anthropic, "claude-sonnet-4-5"), limits(200_000, 64_000));
        assert_eq!(builtin(ProviderKind::Anthropic, "claude-3-5-haiku-latest"), limits(200_000, 8_192));
        assert_eq!(builtin(ProviderKind::Gemini, "gemini-2.5-flash"), limits(1_048_576, 65_536));
        assert_eq!(builtin(ProviderKind::Openai, "llama3.1:8b"), UNKNOWN_MODEL);
        assert_eq!(builtin(ProviderKind::Mock, "mock"), MOCK);
    }

    #[test]
    fn an_entry_overrides_the_table_and_the_mock() {
        let mut config = ProvidersConfig::default();
        config.models.push(ModelEntry {
            name: "mock".into(),
            provider: ProviderKind::Mock,
            context_window: Some(3_000),
            max_output_tokens: Some(500),
            ..ModelEntry::default()
        });
        config.models.push(ModelEntry {
            name: "big".into(),
            model: Some("gpt-4o".into()),
            max_output_tokens: Some(1_000),
            ..ModelEntry::default()
        });
        assert_eq!(for_model("mock", &config), limits(3_000, 500));
        assert_eq!(for_model("big", &config), limits(128_000, 1_000));
        assert_eq!(for_model("mock", &ProvidersConfig::default()), MOCK);
        assert_eq!(for_model("openai/gpt-5-mini", &ProvidersConfig::default()), limits(400_000, 128_000));
    }

    #[test]
    fn an_unknown_model_on_a_local_server_gets_the_local_default() {
        let mut config = ProvidersConfig::default();
        for (name, base_url) in [
            ("ollama", "http://127.0.0.1:11434/v1"),
            ("lan", "http://192.168.1.20:8080/v1"),
            ("box", "http://gpu-box:8000/v1"),
            ("remote", "https://api.together.xyz/v1"),
        ] {
            config.models.push(ModelEntry {
                name: name.into(),
                model: Some("qwen3-coder".into()),
                base_url: Some(base_url.into()),
                ..ModelEntry::default()
            });
        }
        assert_eq!(for_model("ollama", &config), UNKNOWN_LOCAL_MODEL);
        assert_eq!(for_model("lan", &config), UNKNOWN_LOCAL_MODEL);
        assert_eq!(for_model("box", &config), UNKNOWN_LOCAL_MODEL);
        assert_eq!(for_model("remote", &config), UNKNOWN_MODEL);
        // A family the table knows keeps its figures wherever it is served; a set window wins.
        config.models[0].model = Some("gpt-4o".into());
        assert_eq!(for_model("ollama", &config), limits(128_000, 16_384));
        config.models[1].context_window = Some(8_000);
        assert_eq!(for_model("lan", &config).context_window, 8_000);
        // A name without an entry is local where the router leads it.
        assert_eq!(at_endpoint("llama3", &config, Some("http://localhost:8080/v1")), UNKNOWN_LOCAL_MODEL);
        assert_eq!(for_model("llama3", &config), UNKNOWN_MODEL);
    }

    #[test]
    fn local_endpoints_are_told_from_remote_ones() {
        for local in [
            "http://localhost:11434",
            "http://127.0.0.2/v1",
            "http://[::1]:8000/v1",
            "http://10.0.0.5/v1",
            "http://172.20.1.1/v1",
            "http://169.254.10.1",
            "http://100.101.102.103:11434",
            "http://[fd12:3456::1]/v1",
            "http://ollama:11434/v1",
            "http://studio.local:1234/v1",
            "http://0.0.0.0:8080",
        ] {
            assert!(is_local(local), "{local}");
        }
        for remote in ["https://api.openai.com/v1", "http://8.8.8.8/v1", "http://[2001:db8::1]/", "not a url"] {
            assert!(!is_local(remote), "{remote}");
        }
    }

    #[test]
    fn a_name_gets_its_familys_limits_whichever_keys_are_set() {
        // No provider configured (no GEMINI_API_KEY, no ANTHROPIC_API_KEY): the name decides,
        // never the provider a request would fall back to.
        let none = ProvidersConfig::default();
        assert_eq!(for_model("gemini-2.5-flash", &none), limits(1_048_576, 65_536));
        assert_eq!(for_model("gemini/gemini-1.5-pro", &none), limits(2_097_152, 8_192));
        assert_eq!(for_model("claude-sonnet-4-5", &none), limits(200_000, 64_000));
        assert_eq!(for_model("llama3.1:8b", &none), UNKNOWN_MODEL);
    }
}
