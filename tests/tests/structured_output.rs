//! End to end: structured output (`superpi run --output-schema FILE`): the final answer is
//! checked against the schema, asked again once with the errors, then the turn fails; the
//! vendor's structured-output mode (OpenAI's `response_format`, against the fake that keeps
//! its rules) and the `respond` tool for a vendor without one (Anthropic's fake).
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::process::Output;

use serde_json::{Value, json};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{AnthropicFake, OpenAiFake};
use superpi_tests::TestEnv;

/// A closed schema: OpenAI's strict rules hold for it.
fn strict_schema() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false})
}

fn schema_file(env: &TestEnv, schema: &Value) -> String {
    let path = env.path().join("schema.json");
    std::fs::write(&path, schema.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

fn result_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout}; stderr: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_schema_valid_answer_is_the_result_and_its_parsed_object() {
    let env = TestEnv::new();
    let schema = schema_file(&env, &strict_schema());
    let run = ["run", "--output-format", "json", "--output-schema", &schema];
    let out = env.command(&[&run[..], &[r#"@answer {"n": 3}"#]].concat()).output().unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let result = result_of(&out);
    assert_eq!((&result["status"], &result["structured_output"]), (&json!("completed"), &json!({"n": 3})), "{result}");
    assert_eq!(result["result"], r#"{"n":3}"#);

    // Not JSON first: the model is told why and asked again; its second answer is the result.
    let out = env.command(&[&run[..], &["@answer three\n@answer {\"n\": 4}"]].concat()).output().unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(result_of(&out)["structured_output"], json!({"n": 4}));
}

#[test]
fn an_answer_refused_twice_fails_the_turn_with_the_errors() {
    let env = TestEnv::new();
    let schema = schema_file(&env, &strict_schema());
    let run = ["run", "--output-format", "json", "--output-schema", &schema, r#"@answer {"n": "three"}"#];
    let out = env.command(&run).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let result = result_of(&out);
    assert_eq!((&result["status"], &result["structured_output"]), (&json!("failed"), &Value::Null), "{result}");
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("after 1 retry") && error.contains("at /n") && error.contains("integer"), "{error}");

    // A file that is not JSON is a usage error, before the kernel is asked; a schema that is not
    // an object schema is the kernel's refusal.
    std::fs::write(env.path().join("bad.json"), "{").unwrap();
    let bad = env.path().join("bad.json").to_string_lossy().into_owned();
    let out = env.command(&["run", "--output-schema", &bad, "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let array = schema_file(&env, &json!({"type": "array"}));
    let out = env.command(&["run", "--output-schema", &array, "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("object schema"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// OpenAI's own mode: the schema goes as `response_format` (strict when the schema keeps the
/// strict rules, which the fake checks), the refused answer is told as a user message, and the
/// retry carries the schema again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_gets_the_schema_as_its_response_format_and_a_retry() {
    let fake = OpenAiFake::start(vec![Answer::text("{\"n\": \"x\"}"), Answer::text("{\"n\": 7}")]).await.unwrap();
    let env = TestEnv::new();
    let schema = schema_file(&env, &strict_schema());
    let mut cmd =
        env.command(&["run", "--model", "gpt-4o-mini", "--output-format", "json", "--output-schema", &schema, "n?"]);
    cmd.envs(fake.env());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(result_of(&out)["structured_output"], json!({"n": 7}));
    assert_eq!(fake.rejections(), vec![]);
    let bodies = fake.accepted();
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    for body in &bodies {
        let format = &body["response_format"];
        assert_eq!((&format["type"], &format["json_schema"]["strict"]), (&json!("json_schema"), &json!(true)));
        assert_eq!(format["json_schema"]["schema"], strict_schema());
    }
    let told = bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"].to_string();
    assert!(told.contains("/n") && told.contains("JSON Schema"), "{told}");

    // A schema outside the strict rules (an open object) goes with `strict: false`: the fake
    // would refuse it as strict.
    fake.push(Answer::text("{\"n\": 1, \"more\": true}"));
    let open = schema_file(&env, &json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
    let mut cmd =
        env.command(&["run", "--model", "gpt-4o-mini", "--output-format", "json", "--output-schema", &open, "n?"]);
    cmd.envs(fake.env());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fake.rejections(), vec![]);
    assert_eq!(fake.accepted().last().unwrap()["response_format"]["json_schema"]["strict"], false);
}

/// Anthropic has no such mode here: the model answers through the `respond` tool, whose
/// arguments are checked like an answer (refused once, with the errors as the call's result).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vendor_without_a_mode_answers_through_the_respond_tool() {
    let script = vec![Answer::tool_call("respond", json!({"n": "x"})), Answer::tool_call("respond", json!({"n": 9}))];
    let fake = AnthropicFake::start(script).await.unwrap();
    let env = TestEnv::new();
    let schema = schema_file(&env, &strict_schema());
    let args = ["run", "--model", "claude-sonnet-4-5", "--output-format", "json", "--output-schema", &schema, "n?"];
    let mut cmd = env.command(&args);
    cmd.envs(fake.env());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(result_of(&out)["structured_output"], json!({"n": 9}));
    assert_eq!(fake.rejections(), vec![]);
    let bodies = fake.accepted();
    let respond = bodies[0]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "respond").cloned();
    assert_eq!(respond.unwrap()["input_schema"], strict_schema());
    let told = bodies[1]["messages"].to_string();
    assert!(told.contains("is_error") && told.contains("/n"), "{told}");
}
