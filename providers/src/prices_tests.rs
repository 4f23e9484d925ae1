use super::*;
use crate::config::ModelEntry;
use superpi_proto::Usage;

fn usage(input: u64, cached: u64, written: u64, output: u64) -> Usage {
    Usage { input_tokens: input, output_tokens: output, cached_input_tokens: cached, cache_write_tokens: written }
}

#[test]
fn known_models_get_their_list_prices_and_specific_prefixes_win() {
    assert_eq!(builtin("gpt-5-mini-2025-08-07"), Some(price(0.25, 0.025, 2.0)));
    assert_eq!(builtin("gpt-5-codex"), Some(price(1.25, 0.125, 10.0)));
    assert_eq!(builtin("openai/gpt-4o-mini"), Some(price(0.15, 0.075, 0.6)));
    assert_eq!(builtin("claude-sonnet-4-5-20250929"), Some(anthropic(3.0, 15.0)));
    assert_eq!(builtin("claude-opus-4-5"), Some(anthropic(5.0, 25.0)));
    assert_eq!(builtin("gemini-2.5-flash-lite"), Some(price(0.1, 0.01, 0.4)));
    assert_eq!(builtin("llama3.1:8b"), None);
    assert_eq!(for_model("mock", &ProvidersConfig::default()), None);
}

#[test]
fn each_kind_of_token_is_priced_at_its_own_rate() {
    // Sonnet: 3 $/M input, 0.3 cached, 3.75 written, 15 output.
    let sonnet = anthropic(3.0, 15.0);
    let cost = sonnet.cost(&usage(1_000_000, 500_000, 200_000, 100_000));
    let expected = 0.3 * 3.0 + 0.5 * 0.3 + 0.2 * 3.75 + 0.1 * 15.0;
    assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
    // No cache prices: cached and written tokens cost what input does.
    let flat = Price { input: 2.0, cached_input: None, cache_write: None, output: 4.0 };
    assert!((flat.cost(&usage(1_000_000, 600_000, 0, 0)) - 2.0).abs() < 1e-9);
    // Counts that do not add up (a cached part above the input) never go negative.
    assert!(flat.cost(&usage(10, 20, 30, 0)) >= 0.0);
}

#[test]
fn an_entry_price_overrides_the_table_and_prices_the_mock() {
    let mut config = ProvidersConfig::default();
    let cheap = Price { input: 1.0, cached_input: Some(0.5), cache_write: None, output: 2.0 };
    config.models.push(ModelEntry {
        name: "gpt-4o".into(),
        provider: ProviderKind::Openai,
        price: Some(cheap),
        ..ModelEntry::default()
    });
    config.models.push(ModelEntry { name: "mock".into(), provider: ProviderKind::Mock, ..ModelEntry::default() });
    config.models.push(ModelEntry { name: "fast".into(), model: Some("gpt-5-nano".into()), ..ModelEntry::default() });
    assert_eq!(for_model("gpt-4o", &config), Some(cheap));
    assert_eq!(for_model("mock", &config), None);
    assert_eq!(for_model("fast", &config), builtin("gpt-5-nano"));
    assert_eq!(for_model("gpt-4o-mini", &config), builtin("gpt-4o-mini"));
}
