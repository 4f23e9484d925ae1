//! Context overflow: how each vendor and each common local server says that a request does
//! not fit the model's context window, kept as data ([`SIGNS`], [`CODES`]), and the reading of
//! an error into [`ProviderError::ContextOverflow`] with the window (and the request's size)
//! where the server says them.
//!
//! Every sign is a server's own wording, found in its source or in reports of it, with a test
//! per message in `overflow_tests.rs`. A sign is matched in the error's message, lowercased;
//! a rate limit (HTTP 429) is never an overflow, whatever it says about tokens.
//!
//! Limits: Ollama truncates an over-long prompt by default and answers 200, so there is nothing
//! to read (only with `truncate: false`, or when it relays llama.cpp's refusal, is there an
//! error); LM Studio truncates too unless its overflow policy is "stop at limit".

use serde_json::Value;

use crate::stream::ProviderError;

/// One server's way of saying that a request does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sign {
    /// Who sends it.
    pub server: &'static str,
    /// Text the message holds (lowercase).
    pub phrase: &'static str,
    /// The window is the first number after one of these (lowercase), when the message says it.
    pub window_after: &'static [&'static str],
    /// The request's tokens as the server counted them: the first number after one of these.
    pub requested_after: &'static [&'static str],
}

const fn sign(
    server: &'static str,
    phrase: &'static str,
    window_after: &'static [&'static str],
    requested_after: &'static [&'static str],
) -> Sign {
    Sign { server, phrase, window_after, requested_after }
}

/// Every known wording, most specific first.
pub const SIGNS: &[Sign] = &[
    // OpenAI Chat Completions (and Azure OpenAI, DeepSeek, Groq, OpenRouter, vLLM's OpenAI
    // server): "This model's maximum context length is 8192 tokens. However, your messages
    // resulted in 9000 tokens." / "However, you requested 9000 tokens (8000 in the messages,
    // 1000 in the completion)." / vLLM's newer "... is 4096 tokens and your request has 2778
    // input tokens".
    sign(
        "OpenAI Chat Completions, vLLM, OpenRouter",
        "maximum context length is",
        &["maximum context length is"],
        &["resulted in", "you requested", "your request has"],
    ),
    // OpenAI Responses: "Your input exceeds the context window of this model. Please adjust
    // your input and try again." (code `context_length_exceeded`; no numbers).
    sign("OpenAI Responses", "exceeds the context window", &[], &[]),
    // Anthropic: "prompt is too long: 208310 tokens > 200000 maximum".
    sign("Anthropic", "prompt is too long", &["tokens >"], &["prompt is too long:"]),
    // Anthropic, input and `max_tokens` together: "input length and `max_tokens` exceed context
    // limit: 197626 + 8192 > 200000, decrease input length or `max_tokens` and try again".
    sign("Anthropic", "exceed context limit", &[" > "], &["context limit:"]),
    // Anthropic (413): "Request size exceeds model context window".
    sign("Anthropic", "exceeds model context window", &[], &[]),
    // Gemini: "The input token count (1200293) exceeds the maximum number of tokens allowed
    // (1048576)."
    sign(
        "Gemini",
        "exceeds the maximum number of tokens allowed",
        &["maximum number of tokens allowed"],
        &["input token count"],
    ),
    // llama.cpp's server (and Ollama, which relays it): "request (8708 tokens) exceeds the
    // available context size (8192 tokens), try increasing it"; before that "the request exceeds
    // the available context size. try increasing the context size or enable context shift"
    // (the numbers then only in `n_ctx`/`n_prompt_tokens`).
    sign("llama.cpp, Ollama", "exceeds the available context size", &["available context size"], &["request ("]),
    // vLLM's engine: "The decoder prompt (length 17772) is longer than the maximum model length
    // of 16384." / "Prompt length of 5016 is longer than the maximum model length of 4096."
    sign(
        "vLLM",
        "longer than the maximum model length",
        &["maximum model length of"],
        &["(length", "prompt length of"],
    ),
    // LM Studio: "Trying to keep the first 10136 tokens when context the overflows. However, the
    // model is loaded with context length of only 7866 tokens, which is not enough."
    sign("LM Studio", "context length of only", &["context length of only"], &["keep the first"]),
    // Ollama (`truncate: false`, embeddings): "the input length exceeds the context length".
    sign("Ollama", "exceeds the context length", &[], &[]),
    // xAI: "This model's maximum prompt length is 131072 but the request contains 136973 tokens."
    sign("xAI", "maximum prompt length is", &["maximum prompt length is"], &["request contains"]),
];

/// Error codes (OpenAI's `code`, llama.cpp's `type`) that mean an overflow whatever the message.
pub const CODES: &[&str] = &["context_length_exceeded", "exceed_context_size_error"];

/// What an overflow error says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Overflow {
    /// The model's window in tokens, when the server says it.
    pub window: Option<u64>,
    /// The refused request's tokens as the server counted them, when it says so.
    pub requested: Option<u64>,
}

/// Reads `message` as an overflow: the first sign it holds, with the numbers it says.
pub fn read(message: &str) -> Option<Overflow> {
    let lower = message.to_lowercase();
    let sign = SIGNS.iter().find(|sign| lower.contains(sign.phrase))?;
    Some(Overflow {
        window: sign.window_after.iter().find_map(|marker| number_after(&lower, marker)),
        requested: sign.requested_after.iter().find_map(|marker| number_after(&lower, marker)),
    })
}

/// The error of an HTTP answer `status` with `body`: an overflow when the body's code or
/// message says so (the numbers from the message, else from llama.cpp's `n_ctx` and
/// `n_prompt_tokens`), else [`ProviderError::Http`] with the provider's words.
pub fn http_error(provider: &str, status: u16, body: &str) -> ProviderError {
    let message = crate::wire::error_message(body);
    let value: Option<Value> = serde_json::from_str(body).ok();
    let error = value.as_ref().map(|v| v.get(0).unwrap_or(v)).and_then(|v| v.get("error"));
    let field = |name: &str| error.and_then(|e| e.get(name));
    let coded = ["code", "type"].iter().filter_map(|name| field(name)?.as_str()).any(|code| CODES.contains(&code));
    let read = read(&message).or_else(|| coded.then(Overflow::default));
    match read.filter(|_| status != 429) {
        Some(mut overflow) => {
            let count = |name: &str| field(name).and_then(Value::as_u64);
            overflow.window = overflow.window.or_else(|| count("n_ctx"));
            overflow.requested = overflow.requested.or_else(|| count("n_prompt_tokens"));
            let Overflow { window, requested } = overflow;
            ProviderError::ContextOverflow { provider: provider.to_string(), status, message, window, requested }
        }
        None => ProviderError::Http { provider: provider.to_string(), status, message },
    }
}

/// `error` as an overflow when it is an HTTP error (an error event inside a stream included)
/// whose message says so; any other error unchanged.
pub fn classify(error: ProviderError) -> ProviderError {
    match error {
        ProviderError::Http { provider, status, message } if status != 429 => match read(&message) {
            Some(Overflow { window, requested }) => {
                ProviderError::ContextOverflow { provider, status, message, window, requested }
            }
            None => ProviderError::Http { provider, status, message },
        },
        other => other,
    }
}

/// The number after the first `marker` in `text`: spaces, `(`, `~` and "about" skipped,
/// thousands separators read; `None` when no digit follows.
fn number_after(text: &str, marker: &str) -> Option<u64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let rest = rest.trim_start_matches([' ', '(', '~', ':']);
    let rest = rest.strip_prefix("about").unwrap_or(rest).trim_start();
    let bytes = rest.as_bytes();
    let mut digits = String::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'0'..=b'9' => digits.push(bytes[at] as char),
            // "128,000": a comma between digits followed by exactly three.
            b',' if !digits.is_empty()
                && bytes.get(at + 1..at + 4).is_some_and(|d| d.iter().all(u8::is_ascii_digit))
                && !bytes.get(at + 4).is_some_and(u8::is_ascii_digit) => {}
            _ => break,
        }
        at += 1;
    }
    digits.parse().ok()
}

#[cfg(test)]
#[path = "overflow_tests.rs"]
mod tests;
