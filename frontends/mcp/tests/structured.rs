//! End to end: `harness_task` with an `outputSchema`: the kernel checks the answer (the mock's
//! `@answer` lines, one per model request), and the result carries the accepted object as
//! `structuredContent.structured_output` beside the JSON text in `result`.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{call_tool, connect, text};
use rmcp::ServiceError;
use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};
use superpi_tests::TestEnv;

fn schema() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn harness_task_with_an_output_schema_returns_the_checked_object() {
    let env = TestEnv::new();
    let session = connect(&env, ProtocolVersion::V_2025_06_18).await;

    // Not JSON first: the kernel asks again, and the second answer is the call's.
    let prompt = "@answer three\n@answer {\"n\": 4}";
    let result =
        call_tool(&session, "harness_task", json!({"prompt": prompt, "outputSchema": schema()})).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let structured = result.structured_content.clone().unwrap();
    assert_eq!(structured["structured_output"], json!({"n": 4}), "{structured}");
    assert_eq!(structured["result"], r#"{"n":4}"#);
    assert_eq!(text(&result), r#"{"n":4}"#);

    // Refused twice: an error result naming the schema's complaint, no object.
    let prompt = "@answer {\"n\": \"x\"}\n@answer {\"n\": \"y\"}";
    let result =
        call_tool(&session, "harness_task", json!({"prompt": prompt, "outputSchema": schema()})).await.unwrap();
    assert_eq!(result.is_error, Some(true), "{}", text(&result));
    assert!(text(&result).contains("does not match the output schema"), "{}", text(&result));
    assert_eq!(result.structured_content.unwrap().get("structured_output"), None);

    // Without a schema the result is text as before, with no object beside it.
    let result = call_tool(&session, "harness_task", json!({"prompt": "@answer {\"n\": 5}"})).await.unwrap();
    let structured = result.structured_content.unwrap();
    assert_eq!((structured["result"].is_string(), structured.get("structured_output")), (true, None), "{structured}");

    // A schema that is not an object schema, or does not compile, is bad params from the
    // kernel's check, and leaves no conversation behind: only the three tasks above are kept.
    let kernel = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let kept = kernel.list().await.unwrap().len();
    assert_eq!(kept, 3);
    let bad_schemas = [json!({"type": "array"}), json!({"type": "object", "properties": {"n": {"type": "nope"}}})];
    for bad in bad_schemas {
        let refused = call_tool(&session, "harness_task", json!({"prompt": "hi", "outputSchema": bad})).await;
        match refused.unwrap_err() {
            ServiceError::McpError(e) => assert_eq!(e.code.0, -32602, "{e:?}"),
            other => panic!("expected an MCP error, got {other:?}"),
        }
        assert_eq!(kernel.list().await.unwrap().len(), kept, "a refused task left a conversation: {bad}");
    }
    session.client.cancel().await.expect("close");
}
