//! One test per server's message, each the body (or stream error) the server really sends.

use super::*;

/// The error of an HTTP answer, as the HTTP layer makes it.
fn of(status: u16, body: &str) -> ProviderError {
    http_error("p", status, body)
}

/// (window, requested) of an overflow; panics on anything else.
fn numbers(error: ProviderError) -> (Option<u64>, Option<u64>) {
    match error {
        ProviderError::ContextOverflow { window, requested, .. } => (window, requested),
        other => panic!("not an overflow: {other:?}"),
    }
}

macro_rules! overflow {
    ($name:ident, $status:expr, $body:expr, $window:expr, $requested:expr) => {
        #[test]
        fn $name() {
            assert_eq!(numbers(of($status, $body)), ($window, $requested));
        }
    };
}

overflow!(
    openai_chat_completions_messages_resulted_in,
    400,
    r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    Some(8192),
    Some(9000)
);

overflow!(
    openai_chat_completions_you_requested,
    400,
    r#"{"error":{"message":"This model's maximum context length is 4097 tokens, however you requested 4116 tokens (1044 in your prompt; 3072 for the completion). Please reduce your prompt; or completion length.","type":"invalid_request_error","param":null,"code":null}}"#,
    Some(4097),
    Some(4116)
);

overflow!(
    openai_code_alone_is_enough,
    400,
    r#"{"error":{"message":"Request too long.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    None,
    None
);

overflow!(
    openai_responses_input_exceeds_the_context_window,
    400,
    r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#,
    None,
    None
);

overflow!(
    vllm_you_requested_in_the_messages_and_the_completion,
    400,
    r#"{"object":"error","message":"This model's maximum context length is 16384 tokens. However, you requested 19591 tokens (9591 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
    Some(16384),
    Some(19591)
);

overflow!(
    vllm_max_tokens_too_large_for_the_input,
    400,
    r#"{"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778). None","type":"BadRequestError","param":null,"code":400}}"#,
    Some(4096),
    Some(2778)
);

overflow!(
    vllm_decoder_prompt_longer_than_the_model_length,
    400,
    r#"{"object":"error","message":"The decoder prompt (length 17772) is longer than the maximum model length of 16384. Make sure that `max_model_len` is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}"#,
    Some(16384),
    Some(17772)
);

overflow!(
    vllm_prompt_length_longer_than_the_model_length,
    400,
    r#"{"object":"error","message":"Prompt length of 5016 is longer than the maximum model length of 4096.","type":"BadRequestError","param":null,"code":400}"#,
    Some(4096),
    Some(5016)
);

overflow!(
    openrouter_you_requested_about,
    400,
    r#"{"error":{"message":"This endpoint's maximum context length is 32768 tokens. However, you requested about 42832 tokens (42832 of text input). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400}}"#,
    Some(32768),
    Some(42832)
);

overflow!(
    anthropic_prompt_is_too_long,
    400,
    r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_011CVQe1dLrGNMJyE1ghG1av"}"#,
    Some(200_000),
    Some(208_310)
);

overflow!(
    anthropic_input_and_max_tokens_exceed_the_context_limit,
    400,
    r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}"#,
    Some(200_000),
    Some(197_626)
);

overflow!(
    anthropic_request_size_exceeds_the_model_context_window,
    413,
    r#"{"type":"error","error":{"type":"invalid_request_error","message":"Request size exceeds model context window"},"request_id":"req_011CSPWKXCRRY6RUpJykZ77v"}"#,
    None,
    None
);

overflow!(
    gemini_input_token_count_exceeds_the_maximum,
    400,
    r#"{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
    Some(1_048_576),
    Some(1_200_293)
);

overflow!(
    gemini_streaming_answers_an_array,
    400,
    r#"[{"error":{"code":400,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","errors":[{"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}]"#,
    Some(131_072),
    Some(132_478)
);

overflow!(
    llama_cpp_request_exceeds_the_available_context_size,
    400,
    r#"{"error":{"code":400,"message":"request (8708 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8708,"n_ctx":8192}}"#,
    Some(8192),
    Some(8708)
);

overflow!(
    llama_cpp_before_the_numbers_were_in_the_message,
    500,
    r#"{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":1407,"n_ctx":256}}"#,
    Some(256),
    Some(1407)
);

overflow!(
    ollama_relaying_llama_cpp_as_a_string,
    400,
    r#"{"error":"{\"error\":{\"code\":400,\"message\":\"request (351 tokens) exceeds the available context size (256 tokens), try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":351,\"n_ctx\":256}}"}"#,
    Some(256),
    Some(351)
);

overflow!(
    ollama_input_length_exceeds_the_context_length,
    400,
    r#"{"error":"the input length exceeds the context length"}"#,
    None,
    None
);

overflow!(
    lm_studio_context_length_of_only,
    400,
    r#"{"error":"Trying to keep the first 10136 tokens when context the overflows. However, the model is loaded with context length of only 7866 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}"#,
    Some(7866),
    Some(10136)
);

#[test]
fn an_error_event_inside_a_stream_is_read_by_its_message() {
    // llama.cpp (and LM Studio) report it as an `error` event once the stream has started;
    // the parsers make that an HTTP error with the event's code or 500.
    let streamed = ProviderError::Http {
        provider: "openai".into(),
        status: 500,
        message: "the request exceeds the available context size, try increasing it".into(),
    };
    assert!(matches!(classify(streamed), ProviderError::ContextOverflow { status: 500, window: None, .. }));
    let anthropic = ProviderError::Http {
        provider: "anthropic".into(),
        status: 400,
        message: "prompt is too long: 203284 tokens > 200000 maximum".into(),
    };
    assert_eq!(numbers(classify(anthropic)), (Some(200_000), Some(203_284)));
    // xAI's words (as its users quote them).
    let xai = ProviderError::Http {
        provider: "openai".into(),
        status: 400,
        message: "This model's maximum prompt length is 131072 but the request contains 136973 tokens.".into(),
    };
    assert_eq!(numbers(classify(xai)), (Some(131_072), Some(136_973)));
}

#[test]
fn other_errors_stay_what_they_are() {
    // A rate limit in tokens per minute is no overflow, whatever its words.
    let tpm = r#"{"error":{"message":"Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 45000. The input or output tokens must be reduced in order to run successfully.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
    assert!(matches!(of(429, tpm), ProviderError::Http { status: 429, .. }));
    let also_429 = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded"}}"#;
    assert!(matches!(of(429, also_429), ProviderError::Http { .. }));
    // The output limit is not the window.
    let output = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929"}}"#;
    assert!(matches!(of(400, output), ProviderError::Http { .. }));
    assert_eq!(
        of(401, r#"{"error":{"message":"bad key","code":"invalid_api_key"}}"#),
        ProviderError::Http { provider: "p".into(), status: 401, message: "bad key".into() }
    );
    let transport = ProviderError::Transport { provider: "p".into(), message: "context length exceeded".into() };
    assert_eq!(classify(transport.clone()), transport);
}

#[test]
fn numbers_are_read_with_their_separators_and_not_past_them() {
    assert_eq!(number_after("window is 128,000 tokens", "window is"), Some(128_000));
    assert_eq!(number_after("size (8192 tokens), try", "size"), Some(8192));
    assert_eq!(number_after("size 4096, 12 more", "size"), Some(4096));
    assert_eq!(number_after("size. try", "size"), None);
    assert_eq!(number_after("nothing here", "size"), None);
}

#[test]
fn every_sign_is_lowercase_and_found_by_its_own_phrase() {
    for sign in SIGNS {
        for text in std::iter::once(&sign.phrase).chain(sign.window_after).chain(sign.requested_after) {
            assert_eq!(*text, text.to_lowercase(), "{}", sign.server);
        }
        assert_eq!(read(sign.phrase).map(|_| ()), Some(()), "{}", sign.server);
    }
}
