//! What a model's tokens cost: a built-in table of the known models' list prices, overridden
//! per model by a `[[providers.models]]` entry's `price`, and the cost of one call's usage.
//!
//! The table holds the vendors' published list prices in US dollars per million tokens, as
//! they stood on 2025-11-20 (OpenAI's, Anthropic's and Google's pricing pages): standard tier,
//! no batch discount; Gemini's figures are those of prompts up to 200,000 tokens (longer ones
//! cost more), and its cache storage per hour is not counted. Anthropic's cache writes are the
//! five-minute ones (1.25 times the input price). A model the table does not know, a local
//! server's and the mock's, has no price unless its entry gives one: its cost is unknown, not
//! zero.

pub use crate::config::Price;
use crate::config::{ProviderKind, ProvidersConfig};

const fn price(input: f64, cached_input: f64, output: f64) -> Price {
    Price { input, cached_input: Some(cached_input), cache_write: None, output }
}

/// Anthropic's: cache reads a tenth of the input price, five-minute writes 1.25 times it.
const fn anthropic(input: f64, output: f64) -> Price {
    Price { input, cached_input: Some(input / 10.0), cache_write: Some(input * 1.25), output }
}

/// Upstream model id prefixes and their prices; the first matching prefix wins, so a more
/// specific prefix comes before a shorter one.
const TABLE: &[(&str, Price)] = &[
    // OpenAI
    ("gpt-5-mini", price(0.25, 0.025, 2.0)),
    ("gpt-5-nano", price(0.05, 0.005, 0.4)),
    ("gpt-5-pro", Price { input: 15.0, cached_input: None, cache_write: None, output: 120.0 }),
    ("gpt-5", price(1.25, 0.125, 10.0)),
    ("gpt-4.1-mini", price(0.4, 0.1, 1.6)),
    ("gpt-4.1-nano", price(0.1, 0.025, 0.4)),
    ("gpt-4.1", price(2.0, 0.5, 8.0)),
    ("gpt-4o-mini", price(0.15, 0.075, 0.6)),
    ("gpt-4o", price(2.5, 1.25, 10.0)),
    ("o1-mini", price(1.1, 0.55, 4.4)),
    ("o1", price(15.0, 7.5, 60.0)),
    ("o3-mini", price(1.1, 0.55, 4.4)),
    ("o3-pro", Price { input: 20.0, cached_input: None, cache_write: None, output: 80.0 }),
    ("o3", price(2.0, 0.5, 8.0)),
    ("o4-mini", price(1.1, 0.275, 4.4)),
    ("codex-mini", price(1.5, 0.375, 6.0)),
    // Anthropic
    ("claude-opus-4-5", anthropic(5.0, 25.0)),
    ("claude-opus-4", anthropic(15.0, 75.0)),
    ("claude-sonnet-4", anthropic(3.0, 15.0)),
    ("claude-haiku-4", anthropic(1.0, 5.0)),
    ("claude-3-7-sonnet", anthropic(3.0, 15.0)),
    ("claude-3-5-haiku", anthropic(0.8, 4.0)),
    ("claude-3-5-sonnet", anthropic(3.0, 15.0)),
    ("claude-3-opus", anthropic(15.0, 75.0)),
    ("claude-3-haiku", anthropic(0.25, 1.25)),
    // Gemini
    ("gemini-3-pro", price(2.0, 0.2, 12.0)),
    ("gemini-2.5-pro", price(1.25, 0.125, 10.0)),
    ("gemini-2.5-flash-lite", price(0.1, 0.01, 0.4)),
    ("gemini-2.5-flash", price(0.3, 0.03, 2.5)),
    ("gemini-2.0-flash-lite", Price { input: 0.075, cached_input: None, cache_write: None, output: 0.3 }),
    ("gemini-2.0-flash", price(0.1, 0.025, 0.4)),
];

/// The built-in price of an upstream model id, read after any `vendor/` prefix.
pub fn builtin(id: &str) -> Option<Price> {
    let id = id.rsplit('/').next().unwrap_or(id);
    TABLE.iter().find(|(prefix, _)| id.starts_with(prefix)).map(|(_, price)| *price)
}

/// The price of a model name as users type it: its `[[providers.models]]` entry's `price`,
/// else the table's for the id it sends upstream; none for the mock or an unknown model.
pub fn for_model(model: &str, config: &ProvidersConfig) -> Option<Price> {
    let name = model.trim();
    match config.models.iter().find(|entry| entry.name == name) {
        Some(entry) if entry.price.is_some() => entry.price,
        Some(entry) if entry.provider == ProviderKind::Mock => None,
        Some(entry) => builtin(entry.model.as_deref().unwrap_or(&entry.name)),
        None if name == "mock" => None,
        None => builtin(name),
    }
}

#[cfg(test)]
#[path = "prices_tests.rs"]
mod tests;
