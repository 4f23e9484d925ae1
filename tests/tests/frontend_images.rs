//! Images through the frontends other than ACP (tests/providers.rs covers the kernel and each
//! vendor, frontends/acp/tests/e2e.rs a pasted image): the gateway's OpenAI `image_url` part
//! (a data URL), AG-UI's `image` part and the RPC frontend's `image` part each reach a model
//! that takes images as the vendor's image part (the fake checks the API's rules) and are
//! stored by digest; a model that does not take images refuses each with the protocol's own
//! error, and nothing is sent upstream. Real `superpi` processes, a real kernel, HTTP over
//! sockets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use serde_json::{Value, json};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{FakeServer, OpenAiFake};
use superpi_providers::testing::rules::Vendor;
use superpi_tests::{KillOnDrop, TestEnv};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A 1x1 PNG, in base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// An environment whose providers are `eyes` (gpt-4o) and `blind` (gpt-3.5-turbo) at `fake`,
/// `default` the model a frontend that names none gets.
fn env_with(fake: &FakeServer, default: &str) -> TestEnv {
    let env = TestEnv::new();
    let base = fake.base_url(Vendor::Openai);
    let entry = |name: &str, model: &str| {
        format!(
            "[[providers.models]]\nname = \"{name}\"\nprovider = \"openai\"\nmodel = \"{model}\"\n\
             base_url = \"{base}\"\napi_key = \"k\"\n\n"
        )
    };
    let file = format!(
        "[providers]\ndefault_model = \"{default}\"\n\n{}{}",
        entry("eyes", "gpt-4o"),
        entry("blind", "gpt-3.5-turbo")
    );
    std::fs::write(env.locations.config_dir.join("providers.toml"), file).unwrap();
    env
}

/// What the model API must have been sent for the image.
fn image_url_part() -> String {
    json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}}).to_string()
}

/// `POST url` with a JSON body over a plain socket; the status and the whole body (chunked
/// transfer decoded), read until the server closes.
async fn post(base: &str, path: &str, body: &Value) -> (u16, String) {
    let authority = base.strip_prefix("http://").unwrap().trim_end_matches('/');
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: */*\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(60), stream.read_to_end(&mut raw))
        .await
        .expect("the answer did not end within 60 s")
        .unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let chunked = head.lines().any(|l| l.eq_ignore_ascii_case("transfer-encoding: chunked"));
    (status, if chunked { dechunk(rest) } else { rest.to_string() })
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.push_str(&tail[..size]);
        rest = &tail[size + 2..];
    }
    out
}

/// The digest a conversation's user entry keeps in place of the image's bytes, and that the
/// images table holds those bytes.
fn stored_by_digest(env: &TestEnv) {
    let db = rusqlite::Connection::open(env.locations.database_path()).unwrap();
    let stored: Vec<u8> = db.query_row("SELECT bytes FROM images", [], |row| row.get(0)).unwrap();
    assert_eq!(superpi_providers::images::encode(&stored), PNG);
    let prompt: String = db
        .query_row("SELECT message FROM entries WHERE kind = 'user' ORDER BY seq DESC LIMIT 1", [], |row| row.get(0))
        .unwrap();
    assert!(prompt.contains("sha256") && !prompt.contains(PNG), "the entry keeps the digest, not the bytes: {prompt}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateways_image_url_reaches_the_model_and_a_blind_model_gets_an_openai_error() {
    let fake = OpenAiFake::start(vec![Answer::text("a pixel")]).await.unwrap();
    let env = env_with(&fake, "eyes");
    let (_gateway, base) = env.spawn_http(&["gateway", "--port", "0"], &[]);
    let request = |model: &str| {
        json!({"model": model, "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}},
        ]}]})
    };

    let (status, body) = post(&base, "/v1/chat/completions", &request("eyes")).await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "a pixel", "{answer}");
    assert_eq!(fake.rejections(), vec![]);
    let sent = fake.accepted().pop().unwrap().to_string();
    assert!(sent.contains(&image_url_part()), "{sent}");
    stored_by_digest(&env);

    let before = fake.accepted().len();
    let (status, body) = post(&base, "/v1/chat/completions", &request("blind")).await;
    assert_eq!(status, 400, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    let message = error["error"]["message"].as_str().unwrap_or_else(|| panic!("not OpenAI's error shape: {error}"));
    assert!(message.contains("`blind` does not take images"), "{error}");
    assert!(error["error"]["type"].is_string(), "{error}");
    assert_eq!(fake.accepted().len(), before, "nothing was sent for the refused prompt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agui_image_part_reaches_the_model_and_a_blind_model_refuses_it() {
    let run = |thread: &str| {
        json!({"threadId": thread, "runId": "r1", "state": {}, "tools": [], "context": [], "forwardedProps": {},
        "messages": [{"id": "m1", "role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "source": {"type": "data", "mimeType": "image/png", "value": PNG}},
        ]}]})
    };
    let fake = OpenAiFake::start(vec![Answer::text("a pixel")]).await.unwrap();
    let env = env_with(&fake, "eyes");
    let (_agui, base) = env.spawn_http(&["agui", "--port", "0"], &[]);
    let (status, body) = post(&base, "/agui/v1/run", &run("t-eyes")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("RUN_FINISHED") && body.contains("a pixel"), "{body}");
    assert_eq!(fake.rejections(), vec![]);
    let sent = fake.accepted().pop().unwrap().to_string();
    assert!(sent.contains(&image_url_part()), "{sent}");
    stored_by_digest(&env);

    let blind_fake = OpenAiFake::start(vec![Answer::text("unseen")]).await.unwrap();
    let env = env_with(&blind_fake, "blind");
    let (_agui, base) = env.spawn_http(&["agui", "--port", "0"], &[]);
    let (status, body) = post(&base, "/agui/v1/run", &run("t-blind")).await;
    // Refused before the run starts: AG-UI's HTTP error, in its own shape.
    assert_eq!(status, 400, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], "invalid_request", "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("`blind` does not take images"), "{error}");
    assert!(blind_fake.accepted().is_empty(), "nothing was sent for the refused prompt");
}

/// One line-delimited JSON-RPC peer: `superpi rpc --stdio`.
pub(crate) struct Rpc {
    _child: KillOnDrop,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    next_id: i64,
}

impl Rpc {
    pub(crate) fn start(env: &TestEnv) -> Rpc {
        let mut cmd = env.command(&["rpc", "--stdio"]);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Rpc { _child: KillOnDrop(child), stdin, stdout, next_id: 0 }
    }

    /// A request and its answer (notifications before it are skipped).
    pub(crate) fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").unwrap();
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "superpi rpc closed its output");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rpc_image_part_reaches_the_model_and_a_blind_model_gets_invalid_params() {
    let fake = OpenAiFake::start(vec![Answer::text("a pixel")]).await.unwrap();
    let env = env_with(&fake, "eyes");
    let mut rpc = Rpc::start(&env);
    let content =
        json!([{"type": "text", "text": "what is this?"}, {"type": "image", "media_type": "image/png", "data": PNG}]);

    let opened = rpc.call("session.open", json!({"model": "eyes"}));
    let conversation_id = opened["result"]["conversation_id"].as_i64().unwrap_or_else(|| panic!("{opened}"));
    let submitted = rpc.call("session.submit", json!({"conversation_id": conversation_id, "content": content}));
    assert!(submitted.get("result").is_some(), "{submitted}");
    let client = env.wait_for_kernel().await;
    let ended = superpi_tests::first_turn_end(&client, conversation_id).await;
    assert!(matches!(ended, superpi_proto::EventBody::TurnCompleted { .. }), "{ended:?}");
    assert_eq!(fake.rejections(), vec![]);
    let sent = fake.accepted().pop().unwrap().to_string();
    assert!(sent.contains(&image_url_part()), "{sent}");
    stored_by_digest(&env);

    let before = fake.accepted().len();
    let opened = rpc.call("session.open", json!({"model": "blind"}));
    let blind = opened["result"]["conversation_id"].as_i64().unwrap_or_else(|| panic!("{opened}"));
    let refused = rpc.call("session.submit", json!({"conversation_id": blind, "content": content}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("`blind` does not take images"), "{refused}");
    assert_eq!(fake.accepted().len(), before, "nothing was sent for the refused prompt");
}
