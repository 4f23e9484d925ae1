//! The vendors' prompt caches as the fakes keep them, counting tokens as the fakes do
//! ([`counted_tokens`]): OpenAI's, which caches every long prompt by itself and reads the
//! longest prefix seen before under the same `prompt_cache_key`, and Anthropic's, which
//! caches only at the breakpoints a request marks with `cache_control`.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

/// A request body's tokens as a fake with a context window counts them: a quarter of its
/// bytes, about what the vendors' tokenizers make of English and JSON.
pub fn counted_tokens(body: &[u8]) -> u64 {
    (body.len() as u64).div_ceil(4)
}

/// OpenAI caches prompts of at least this many tokens ...
const OPENAI_MIN_TOKENS: u64 = 1024;
/// ... and reads them from the cache in steps of this many.
const OPENAI_STEP_TOKENS: u64 = 128;

/// Anthropic looks for an entry at a breakpoint and at most this many blocks before it.
const ANTHROPIC_LOOKBACK_BLOCKS: usize = 20;

/// What a request did with the cache, in tokens of its prompt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheUse {
    /// Read from the cache.
    pub read: u64,
    /// Written to it (Anthropic's `cache_creation_input_tokens`; OpenAI reports none).
    pub written: u64,
}

#[derive(Debug, Default)]
pub(crate) struct PromptCaches {
    /// OpenAI: the prompts seen under each `prompt_cache_key`, as the cache compares them.
    openai: HashMap<String, Vec<String>>,
    /// Anthropic: the prefixes written at breakpoints, each a hash of the model and the prefix.
    anthropic: HashSet<u64>,
}

impl PromptCaches {
    /// An OpenAI request under `key` (Chat Completions or Responses): the longest prefix shared
    /// with a prompt seen before, in whole steps, when the prompt is long enough to be cached.
    pub(crate) fn openai(&mut self, key: String, body: &Value, prompt_tokens: u64) -> CacheUse {
        let text = openai_text(body);
        let seen = self.openai.entry(key).or_default();
        let shared = seen
            .iter()
            .map(|earlier| earlier.bytes().zip(text.bytes()).take_while(|(a, b)| a == b).count())
            .max()
            .unwrap_or(0);
        let tokens = counted_tokens(&text.as_bytes()[..shared]).min(prompt_tokens);
        seen.push(text);
        let read = if prompt_tokens < OPENAI_MIN_TOKENS || tokens < OPENAI_MIN_TOKENS {
            0
        } else {
            tokens / OPENAI_STEP_TOKENS * OPENAI_STEP_TOKENS
        };
        CacheUse { read, written: 0 }
    }

    /// An Anthropic request: from each breakpoint, the longest prefix written before at it or
    /// at one of the 20 blocks before it is read; then every breakpoint whose prefix reaches the
    /// model's minimum is written, and the tokens past what was read count as written.
    pub(crate) fn anthropic(&mut self, body: &Value, prompt_tokens: u64) -> CacheUse {
        let model = body.get("model").and_then(Value::as_str).unwrap_or("");
        let mut prefix = String::new();
        // Each block's end: the prefix's key, its tokens, and whether it is a breakpoint.
        let ends: Vec<(u64, u64, bool)> = anthropic_blocks(body)
            .into_iter()
            .map(|(text, breakpoint)| {
                prefix.push_str(&text);
                prefix.push('\n');
                let mut hasher = DefaultHasher::new();
                (model, &prefix).hash(&mut hasher);
                (hasher.finish(), counted_tokens(prefix.as_bytes()).min(prompt_tokens), breakpoint)
            })
            .collect();
        let breakpoints = || ends.iter().enumerate().filter(|(_, end)| end.2);
        let read = breakpoints()
            .filter_map(|(at, _)| {
                let earliest = at.saturating_sub(ANTHROPIC_LOOKBACK_BLOCKS);
                (earliest..=at).rev().find(|j| self.anthropic.contains(&ends[*j].0)).map(|j| ends[j].1)
            })
            .max()
            .unwrap_or(0);
        let minimum = anthropic_minimum(model);
        let mut cached_to = read;
        for (_, &(key, tokens, _)) in breakpoints().filter(|(_, end)| end.1 >= minimum) {
            self.anthropic.insert(key);
            cached_to = cached_to.max(tokens);
        }
        CacheUse { read, written: cached_to - read }
    }
}

/// A request's prompt as OpenAI's cache compares it, from its start: the model, the tools, the
/// instructions (or system messages), then each input item or message.
fn openai_text(body: &Value) -> String {
    let mut text = String::new();
    for key in ["model", "tools", "instructions"] {
        text.push_str(&body.get(key).map(Value::to_string).unwrap_or_default());
        text.push('\n');
    }
    let items = body.get("input").or_else(|| body.get("messages"));
    for item in items.and_then(Value::as_array).into_iter().flatten() {
        text.push_str(&item.to_string());
        text.push('\n');
    }
    text
}

/// Anthropic's minimum cacheable prompt, by model: a shorter prefix is neither written nor read.
fn anthropic_minimum(model: &str) -> u64 {
    let id = model.rsplit('/').next().unwrap_or(model);
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| id.starts_with(p));
    if starts(&["claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7", "claude-haiku-4-5"]) {
        4096
    } else if starts(&["claude-3-haiku", "claude-3-5-haiku"]) {
        2048
    } else {
        1024
    }
}

/// The request's blocks in the order the cache reads them (tools, system, messages), each as
/// text without its `cache_control`, and whether it carries one. The thinking setting leads
/// the messages: changing it voids their entries, not the tools' and system's.
fn anthropic_blocks(body: &Value) -> Vec<(String, bool)> {
    let plain = |block: &Value| {
        let mut block = block.clone();
        let breakpoint = block.as_object_mut().and_then(|b| b.remove("cache_control")).is_some();
        (block.to_string(), breakpoint)
    };
    let list = |value: Option<&Value>| match value {
        Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
        Some(Value::Array(blocks)) => blocks.clone(),
        _ => Vec::new(),
    };
    let mut blocks: Vec<(String, bool)> = list(body.get("tools")).iter().map(plain).collect();
    blocks.extend(list(body.get("system")).iter().map(plain));
    let mut lead = body.get("thinking").map(Value::to_string).unwrap_or_default();
    for message in body.get("messages").and_then(Value::as_array).into_iter().flatten() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        for block in list(message.get("content")) {
            let (text, breakpoint) = plain(&block);
            blocks.push((format!("{}{role}: {text}", std::mem::take(&mut lead)), breakpoint));
        }
    }
    blocks
}

#[cfg(test)]
#[path = "prompt_cache_tests.rs"]
mod tests;
