//! One Chat Completions chunk, read into the few fields the parser uses. The common shape is
//! read with typed serde structs (borrowing where it can); anything else, including an error
//! object or a field of an unexpected type, goes through `serde_json::Value` and is read as
//! leniently as before. Both readings give the same [`Chunk`].

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::stream::ProviderError;
use crate::wire::{json_chunk, str_field, stream_error};

const PROVIDER: &str = "openai";

/// A tool-call delta.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct CallDelta<'a> {
    pub index: Option<u64>,
    pub id: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub arguments: Option<Cow<'a, str>>,
}

/// What the parser reads from a chunk (its first choice only).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Chunk<'a> {
    pub id: Option<Cow<'a, str>>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`.
    pub cached_tokens: Option<u64>,
    /// `usage.completion_tokens_details.reasoning_tokens`.
    pub reasoning_tokens: Option<u64>,
    /// `reasoning_content`, then `reasoning`.
    pub reasoning: [Option<Cow<'a, str>>; 2],
    pub content: Option<Cow<'a, str>>,
    pub refusal: Option<Cow<'a, str>>,
    pub tool_calls: Vec<CallDelta<'a>>,
    pub finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct TypedChunk<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default)]
    usage: Option<TypedUsage>,
    #[serde(borrow, default)]
    choices: Option<Vec<TypedChoice<'a>>>,
}

#[derive(Deserialize)]
struct TypedUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<TypedDetails>,
    #[serde(default)]
    completion_tokens_details: Option<TypedDetails>,
}

#[derive(Deserialize)]
struct TypedDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct TypedChoice<'a> {
    #[serde(borrow, default)]
    delta: Option<TypedDelta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct TypedDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    refusal: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<TypedCall<'a>>>,
}

#[derive(Deserialize)]
struct TypedCall<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<TypedFunction<'a>>,
}

#[derive(Deserialize)]
struct TypedFunction<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

fn from_typed(typed: TypedChunk<'_>) -> Chunk<'_> {
    let mut chunk = Chunk { id: typed.id, ..Default::default() };
    if let Some(usage) = typed.usage {
        chunk.prompt_tokens = usage.prompt_tokens;
        chunk.completion_tokens = usage.completion_tokens;
        chunk.cached_tokens = usage.prompt_tokens_details.and_then(|d| d.cached_tokens);
        chunk.reasoning_tokens = usage.completion_tokens_details.and_then(|d| d.reasoning_tokens);
    }
    if let Some(choice) = typed.choices.and_then(|choices| choices.into_iter().next()) {
        chunk.finish_reason = choice.finish_reason;
        if let Some(delta) = choice.delta {
            chunk.reasoning = [delta.reasoning_content, delta.reasoning];
            chunk.content = delta.content;
            chunk.refusal = delta.refusal;
            chunk.tool_calls = delta
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|call| {
                    let (name, arguments) = call.function.map(|f| (f.name, f.arguments)).unwrap_or_default();
                    CallDelta { index: call.index, id: call.id, name, arguments }
                })
                .collect();
        }
    }
    chunk
}

fn owned(value: &Value, key: &str) -> Option<Cow<'static, str>> {
    str_field(value, key).map(|s| Cow::Owned(s.to_string()))
}

fn from_value(value: &Value) -> Chunk<'static> {
    let mut chunk = Chunk { id: owned(value, "id"), ..Default::default() };
    if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
        chunk.prompt_tokens = usage.get("prompt_tokens").and_then(Value::as_u64);
        chunk.completion_tokens = usage.get("completion_tokens").and_then(Value::as_u64);
        chunk.cached_tokens = usage.pointer("/prompt_tokens_details/cached_tokens").and_then(Value::as_u64);
        chunk.reasoning_tokens = usage.pointer("/completion_tokens_details/reasoning_tokens").and_then(Value::as_u64);
    }
    let Some(choice) = value.get("choices").and_then(Value::as_array).and_then(|c| c.first()) else {
        return chunk;
    };
    chunk.finish_reason = owned(choice, "finish_reason");
    if let Some(delta) = choice.get("delta").filter(|d| d.is_object()) {
        chunk.reasoning = [owned(delta, "reasoning_content"), owned(delta, "reasoning")];
        chunk.content = owned(delta, "content");
        chunk.refusal = owned(delta, "refusal");
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            chunk.tool_calls = calls
                .iter()
                .map(|call| {
                    let function = call.get("function").unwrap_or(&Value::Null);
                    CallDelta {
                        index: call.get("index").and_then(Value::as_u64),
                        id: owned(call, "id"),
                        name: owned(function, "name"),
                        arguments: owned(function, "arguments"),
                    }
                })
                .collect();
        }
    }
    chunk
}

/// Reads one event's data.
pub(crate) fn read_chunk(data: &str) -> Result<Chunk<'_>, ProviderError> {
    if let Ok(typed) = serde_json::from_str::<TypedChunk<'_>>(data)
        && typed.error.is_none()
    {
        return Ok(from_typed(typed));
    }
    read_chunk_leniently(data)
}

/// Reads one event's data through `serde_json::Value` (the path for unusual chunks).
pub(crate) fn read_chunk_leniently(data: &str) -> Result<Chunk<'static>, ProviderError> {
    let value = json_chunk(PROVIDER, data)?;
    if let Some(error) = value.get("error") {
        return Err(stream_error(PROVIDER, error));
    }
    Ok(from_value(&value))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLES: &[&str] = &[
        r#"{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"line\nwith \"escapes\" é"},"finish_reason":null}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"reasoning_content":"a","reasoning":"b"}}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"x","type":"function","function":{"name":"ls","arguments":"{\"a\""}}]}}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"1}"}}]}}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#,
        r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}}"#,
        r#"{"id":"c1","choices":[{"delta":{"content":"x"}},{"delta":{"content":"second choice ignored"}}]}"#,
        r#"{"choices":null,"usage":null}"#,
        r#"{}"#,
    ];

    #[test]
    fn both_readings_agree() {
        for sample in SAMPLES {
            let typed: TypedChunk<'_> = serde_json::from_str(sample).unwrap();
            assert_eq!(from_typed(typed), read_chunk_leniently(sample).unwrap(), "{sample}");
        }
    }

    #[test]
    fn unusual_chunks_take_the_lenient_path() {
        // A reasoning object instead of a string: the typed reading fails, the lenient one
        // ignores the field and keeps the content.
        let odd = r#"{"id":"c","choices":[{"delta":{"reasoning":{"text":"x"},"content":"kept"}}]}"#;
        assert!(serde_json::from_str::<TypedChunk<'_>>(odd).is_err());
        let chunk = read_chunk(odd).unwrap();
        assert_eq!(chunk.content.as_deref(), Some("kept"));
        assert_eq!(chunk.reasoning, [None, None]);
        let error = r#"{"error":{"message":"boom","code":503}}"#;
        assert_eq!(
            read_chunk(error),
            Err(ProviderError::Http { provider: "openai".into(), status: 503, message: "boom".into() })
        );
        assert!(matches!(read_chunk("{nope"), Err(ProviderError::Protocol { .. })));
    }
}
