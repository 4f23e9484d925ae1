//! The model's questions to the person (`ask_question`) through RPC: a `ui_request` of kind
//! `question` to an interactive watcher, answered with `ui.respond`; refused at once when no
//! watcher can answer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use crate::common;

use common::*;
use serde_json::{Value, json};
use superpi_tests::TestEnv;

fn ask(questions: Value) -> String {
    format!("@tool ask_question {}", json!({"title": "Setup", "questions": questions}))
}

fn completed(events: &[Value]) -> &Value {
    events.iter().find(|e| e["type"] == "tool_completed").expect("tool_completed")
}

#[tokio::test]
async fn a_question_is_answered_with_ui_respond_and_checked_against_its_schema() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let id = open(&mut c).await;
    let w = watch(&mut c, id, true).await;
    let questions = json!([
        {"id": "db", "question": "Which database?", "options": ["sqlite", "postgres"]},
        {"id": "port", "question": "Which port?", "schema": {"type": "integer", "minimum": 1}}
    ]);
    c.ok("session.submit", json!({"conversation_id": id, "prompt": ask(questions.clone())})).await;
    let events = c.events_until(w, |e| e["type"] == "ui_request" || turn_end(e)).await;
    let request = events.last().unwrap();
    assert_eq!(request["kind"], "question", "{events:?}");
    assert_eq!(request["title"], "Setup");
    assert_eq!(request["questions"][0]["schema"], json!({"type": "string", "enum": ["sqlite", "postgres"]}));
    let answer = json!({"action": "accept", "answers": {"db": "postgres", "port": 5432}});
    let r = c.ok("ui.respond", json!({"request_id": request["request_id"], "outcome": answer})).await;
    assert_eq!(r, json!({"accepted": true}));
    let events = c.events_until(w, turn_end).await;
    let resolved = events.iter().find(|e| e["type"] == "ui_resolved").expect("ui_resolved");
    assert_eq!(resolved["outcome"], json!({"outcome": "answered"}));
    let done = completed(&events);
    assert_eq!(
        (done["is_error"].clone(), done["output"].clone()),
        (json!(false), json!(r#"{"db":"postgres","port":5432}"#))
    );

    // An answer outside a question's schema is refused, and the model is told why.
    c.ok("session.submit", json!({"conversation_id": id, "prompt": ask(questions)})).await;
    let events = c.events_until(w, |e| e["type"] == "ui_request" || turn_end(e)).await;
    let request = events.last().unwrap();
    let answer = json!({"action": "accept", "answers": {"db": "mysql", "port": 5432}});
    c.ok("ui.respond", json!({"request_id": request["request_id"], "outcome": answer})).await;
    let events = c.events_until(w, turn_end).await;
    let done = completed(&events);
    assert_eq!(done["is_error"], json!(true));
    assert!(done["output"].as_str().unwrap().contains("the answer to `db` is not one of"), "{done}");
}

#[tokio::test]
async fn a_question_nobody_can_answer_is_refused_at_once() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let id = open(&mut c).await;
    let w = watch(&mut c, id, false).await;
    let questions = json!([{"id": "ok", "question": "Go on?", "options": ["yes", "no"]}]);
    c.ok("session.submit", json!({"conversation_id": id, "prompt": ask(questions)})).await;
    let events = c.events_until(w, turn_end).await;
    assert!(events.iter().all(|e| e["type"] != "ui_request"), "{events:?}");
    let done = completed(&events);
    assert_eq!(done["is_error"], json!(true));
    assert!(done["output"].as_str().unwrap().starts_with("nobody can answer a question here"), "{done}");
}
