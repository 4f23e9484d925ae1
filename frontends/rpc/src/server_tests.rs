//! The envelope paths of a served connection, over an in-memory stream. None of these
//! reach a kernel: with tokens configured nothing but `auth.login` gets that far, and the
//! kernel location points nowhere (no autostart), so a call that would need it says so.

use std::sync::Arc;

use serde_json::{Value, json};
use superpi_client::{ConnectOptions, Locations};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::serve;
use crate::auth::Tokens;
use crate::conn::Shared;
use crate::envelope::codes;

struct Client {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    read: BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    server: tokio::task::JoinHandle<Result<(), crate::Error>>,
    _dir: tempfile::TempDir,
}

impl Client {
    fn start(tokens: &str, max_line: usize) -> Client {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let locations = Locations::under(p);
        let mut connect = ConnectOptions::new(locations, "rpc");
        connect.autostart = false;
        let shared =
            Arc::new(Shared { tokens: Tokens::parse_list(tokens), connect, workspace: Some("/nowhere".into()) });
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        let server = tokio::spawn(serve(server_read, server_write, shared, max_line));
        let (read, write) = tokio::io::split(client);
        Client { write, read: BufReader::new(read), server, _dir: dir }
    }

    async fn send(&mut self, line: &str) {
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.read.read_line(&mut line).await.unwrap() > 0, "the server closed");
        serde_json::from_str(&line).unwrap()
    }

    async fn call(&mut self, line: &str) -> Value {
        self.send(line).await;
        self.recv().await
    }

    /// Closes our side; the server answers what is in flight and ends.
    async fn finish(mut self) -> Vec<Value> {
        self.write.shutdown().await.unwrap();
        let mut rest = Vec::new();
        let mut line = String::new();
        while self.read.read_line(&mut line).await.unwrap() > 0 {
            rest.push(serde_json::from_str(&line).unwrap());
            line.clear();
        }
        self.server.await.unwrap().unwrap();
        rest
    }
}

fn code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {v}"))
}

#[tokio::test]
async fn every_envelope_error_has_its_code_and_the_server_goes_on() {
    let mut c = Client::start("secret", 200);
    let r = c.call("{not json").await;
    assert_eq!((code(&r), &r["id"]), (codes::PARSE_ERROR as i64, &Value::Null));
    let r = c.call(r#"{"jsonrpc":"1.0","id":7,"method":"session.list"}"#).await;
    assert_eq!((code(&r), &r["id"]), (codes::INVALID_REQUEST as i64, &json!(7)));
    let r = c.call(r#"{"jsonrpc":"2.0","id":"x","method":"no.such"}"#).await;
    assert_eq!((code(&r), &r["id"]), (codes::METHOD_NOT_FOUND as i64, &json!("x")));
    let r = c.call(r#"{"jsonrpc":"2.0","id":-1.5,"method":"auth.login","params":{"tok":"x"}}"#).await;
    assert_eq!((code(&r), &r["id"]), (codes::INVALID_PARAMS as i64, &json!(-1.5)));
    let r = c
        .call(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{{"token":"{}"}}}}"#,
            "y".repeat(300)
        ))
        .await;
    assert_eq!((code(&r), &r["id"]), (codes::INVALID_REQUEST as i64, &Value::Null), "a line over the limit");
    assert_eq!(r["error"]["data"], json!({"limit": 200}));
    let r = c.call("[]").await;
    assert_eq!(code(&r), codes::INVALID_REQUEST as i64);
    // Still serving, and the id of every kind comes back as sent.
    for id in [json!(null), json!(0), json!("s"), json!(18446744073709551615u64)] {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "auth.login", "params": {"token": "secret"}});
        let r = c.call(&line.to_string()).await;
        assert_eq!(r["id"], id);
        assert_eq!(r["result"]["auth"], json!(true));
    }
    assert_eq!(c.finish().await, Vec::<Value>::new());
}

#[tokio::test]
async fn with_tokens_everything_but_login_is_unauthorized_until_login() {
    let mut c = Client::start("secret,other", 1 << 20);
    for method in crate::request::METHODS.iter().filter(|m| **m != "auth.login") {
        let r = c.call(&json!({"jsonrpc": "2.0", "id": method, "method": method, "params": {}}).to_string()).await;
        assert_eq!(code(&r), codes::UNAUTHORIZED as i64, "{method}: {r}");
    }
    let r = c.call(r#"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"token":"wrong"}}"#).await;
    assert_eq!(code(&r), codes::UNAUTHORIZED as i64);
    let r = c.call(r#"{"jsonrpc":"2.0","id":2,"method":"auth.login","params":{"token":"secret"}}"#).await;
    assert_eq!(r["result"], json!({"principal": crate::auth::principal_for_token("secret"), "auth": true}));
    let r = c.call(r#"{"jsonrpc":"2.0","id":3,"method":"auth.login","params":["other"]}"#).await;
    assert_eq!(code(&r), codes::FORBIDDEN as i64, "one connection, one principal");
    // Logged in: an unknown watch is not found, and a kernel call reaches for the kernel.
    let r = c.call(r#"{"jsonrpc":"2.0","id":4,"method":"session.ack","params":{"watch":9,"batch":1}}"#).await;
    assert_eq!(code(&r), codes::NOT_FOUND as i64);
    let r = c.call(r#"{"jsonrpc":"2.0","id":5,"method":"session.list"}"#).await;
    assert_eq!(code(&r), codes::INTERNAL_ERROR as i64);
    assert!(r["error"]["message"].as_str().unwrap().contains("no kernel"), "{r}");
    c.finish().await;
}

#[tokio::test]
async fn batches_answer_as_one_array_and_notifications_not_at_all() {
    let mut c = Client::start("secret", 1 << 20);
    c.send(r#"{"jsonrpc":"2.0","method":"auth.login","params":{"token":"secret"}}"#).await;
    c.send(r#"{"jsonrpc":"2.0","method":"no.such"}"#).await;
    let r = c
        .call(
            &json!([
                {"jsonrpc": "2.0", "id": 1, "method": "session.ack", "params": {"watch": 1, "batch": 1}},
                {"jsonrpc": "2.0", "method": "session.ack", "params": {"watch": 1, "batch": 1}},
                {"foo": "bar"},
                {"jsonrpc": "2.0", "id": "b", "method": "no.such"},
            ])
            .to_string(),
        )
        .await;
    // The two notifications before the batch got no answer: the batch's is the first line.
    let answers = r.as_array().unwrap_or_else(|| panic!("not an array: {r}"));
    assert_eq!(answers.len(), 3);
    let by_id = |id: Value| answers.iter().find(|a| a["id"] == id).unwrap_or_else(|| panic!("no answer {id}"));
    assert_eq!(code(by_id(json!(1))), codes::NOT_FOUND as i64);
    assert_eq!(code(by_id(json!("b"))), codes::METHOD_NOT_FOUND as i64);
    assert_eq!(code(by_id(Value::Null)), codes::INVALID_REQUEST as i64);
    // A batch of notifications only: no answer at all.
    c.send(
        r#"[{"jsonrpc":"2.0","method":"no.such"},{"jsonrpc":"2.0","method":"auth.login","params":{"token":"secret"}}]"#,
    )
    .await;
    assert_eq!(c.finish().await, Vec::<Value>::new());
}
