//! How much a model takes and gives: its context window and its output limit, from a built-in
//! table of the known families, overridden per model by `[[providers.models]]`'s
//! `context_window` and `max_output_tokens` (the mock's too, so tests can make it tiny).
//!
//! The table holds the vendors' published figures; a model it does not know gets
//! [`UNKNOWN_MODEL`], and its window should be set in the providers file.

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
    if kind == ProviderKind::Mock { MOCK } else { of_id(upstream) }
}

/// The table's figures for a model id, read after any `vendor/` prefix.
fn of_id(id: &str) -> ModelLimits {
    let id = id.rsplit('/').next().unwrap_or(id);
    TABLE.iter().find(|(prefix, _)| id.starts_with(prefix)).map_or(UNKNOWN_MODEL, |(_, limits)| *limits)
}

/// The limits of a model name as users type it: its `[[providers.models]]` entry's
/// `context_window` and `max_output_tokens` over the built-in figures. Any other name is
/// looked up as the id it sends upstream (the router only strips a `vendor/` prefix, which
/// the table skips too), whether or not its provider is configured; an unknown name gets
/// [`UNKNOWN_MODEL`] (routing reports the name itself).
pub fn for_model(model: &str, config: &ProvidersConfig) -> ModelLimits {
    let name = model.trim();
    let Some(entry) = config.models.iter().find(|entry| entry.name == name) else {
        return if name == "mock" { MOCK } else { of_id(name) };
    };
    let base = builtin(entry.provider, entry.model.as_deref().unwrap_or(&entry.name));
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
