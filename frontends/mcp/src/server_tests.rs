use super::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader as TokioBufReader, DuplexStream};

use crate::SuperpiMcp;
use rmcp::ServiceExt;

fn verdict(line: &str) -> Value {
    match classify_line(line.as_bytes()) {
        Verdict::Message(m) => json!({"message": serde_json::to_value(&*m).unwrap()}),
        Verdict::Reply(r) => json!({"reply": serde_json::to_value(&*r).unwrap()}),
        Verdict::Ignore => json!("ignore"),
    }
}

#[test]
fn lines_are_read_as_messages_or_answered() {
    let v = verdict("this is not json");
    assert_eq!(v["reply"]["id"], Value::Null);
    assert_eq!(v["reply"]["error"]["code"], -32700);

    // rmcp reads a known method with unreadable params as a custom request; the handler
    // answers it with invalid params (see the serving test).
    let v = verdict(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}"#);
    assert_eq!(v["message"]["method"], "tools/call");

    let v = verdict(r#"{"jsonrpc":"2.0","id":"x","result":{},"error":{}}"#);
    assert_eq!(v["reply"]["id"], "x");
    assert_eq!(v["reply"]["error"]["code"], -32600);

    assert_eq!(verdict(r#"{"jsonrpc":"1.0","method":"notifications/progress"}"#), json!("ignore"));
    // Found by the bad-input battery: a request of another version was "bad params", and one
    // whose id is an object was ignored as a notification.
    let v = verdict(r#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#);
    assert_eq!((&v["reply"]["id"], &v["reply"]["error"]["code"]), (&json!(4), &json!(-32600)));
    let v = verdict(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#);
    assert_eq!((&v["reply"]["id"], &v["reply"]["error"]["code"]), (&Value::Null, &json!(-32600)));
    assert_eq!(verdict("[1,2]")["reply"]["error"]["code"], -32600);

    let v = verdict("\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    assert_eq!(v["message"]["method"], "ping");
}

fn handler(dir: &std::path::Path) -> SuperpiMcp {
    let locations = superpi_client::Locations::under(dir);
    let mut connect = superpi_client::ConnectOptions::new(locations, "mcp");
    connect.autostart = false;
    let config = crate::config(connect, dir.display().to_string(), crate::Args::default());
    SuperpiMcp::new(config)
}

struct Client {
    input: DuplexStream,
    output: tokio::io::Lines<TokioBufReader<DuplexStream>>,
}

impl Client {
    async fn send(&mut self, line: &str) {
        self.input.write_all(line.as_bytes()).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
    }
    async fn recv(&mut self) -> Value {
        let line = self.output.next_line().await.unwrap().expect("a line from the server");
        serde_json::from_str(&line).unwrap()
    }
}

/// Serves one handler over in-memory pipes; returns the client side and the serving task.
fn serve(dir: &std::path::Path, max_line: usize) -> (Client, tokio::task::JoinHandle<Result<(), String>>) {
    let (client_in, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, client_out) = tokio::io::duplex(1 << 16);
    let h = handler(dir);
    let transport =
        LineTransport::new(server_in, server_out).with_max_line(max_line).with_eof_token(h.shutdown_token());
    let task = tokio::spawn(async move {
        let running = h.serve(transport).await.map_err(|e| e.to_string())?;
        running.waiting().await.map_err(|e| e.to_string())?;
        Ok(())
    });
    (Client { input: client_in, output: TokioBufReader::new(client_out).lines() }, task)
}

fn initialize(id: u32, version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    .to_string()
}

#[tokio::test]
async fn each_protocol_version_is_negotiated_from_static_data() {
    let dir = tempfile::tempdir().unwrap();
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("2023-01-01", "2025-11-25"),
    ] {
        let (mut c, task) = serve(dir.path(), MAX_LINE);
        c.send(&initialize(1, asked)).await;
        let reply = c.recv().await;
        assert_eq!(reply["result"]["protocolVersion"], answered, "asked {asked}: {reply}");
        assert_eq!(reply["result"]["serverInfo"]["name"], "superpi");
        let caps = &reply["result"]["capabilities"];
        for cap in ["tools", "prompts", "resources", "logging"] {
            assert!(caps.get(cap).is_some(), "{cap} missing in {caps}");
        }
        drop(c);
        assert_eq!(task.await.unwrap(), Ok(()));
    }
}

#[tokio::test]
async fn garbage_gets_errors_and_the_server_keeps_serving_until_end_of_input() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, task) = serve(dir.path(), 1024);
    c.send(&initialize(1, "2025-06-18")).await;
    assert_eq!(c.recv().await["id"], 1);
    c.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    c.send("{not json").await;
    let reply = c.recv().await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (Value::Null, json!(-32700)));
    c.send(&format!("\"{}\"", "x".repeat(5000))).await;
    let reply = c.recv().await;
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    c.send(r#"{"jsonrpc":"2.0","id":2,"method":"resources/templates/list"}"#).await;
    let reply = c.recv().await;
    assert_eq!(reply["id"], 2);
    assert_eq!(
        reply["result"]["resourceTemplates"][0]["uriTemplate"],
        "superpi://conversation/{id}/transcript{?after_seq}"
    );
    c.send(r#"{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}"#).await;
    assert_eq!(c.recv().await["id"], 3);
    c.send(r#"{"jsonrpc":"2.0","id":4,"method":"no/such/method"}"#).await;
    let reply = c.recv().await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(4), json!(-32601)));
    // A tool call needs the kernel; none runs and autostart is off: an internal error, and
    // the server goes on.
    c.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read","arguments":{"path":"a"}}}"#).await;
    let reply = c.recv().await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(5), json!(-32603)), "{reply}");
    c.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}"#).await;
    let reply = c.recv().await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(7), json!(-32602)), "{reply}");
    c.send(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#).await;
    assert_eq!(c.recv().await["id"], 6);
    drop(c.input);
    assert_eq!(task.await.unwrap(), Ok(()));
}

#[tokio::test]
async fn end_of_input_cancels_the_shutdown_token() {
    let (server_in_w, server_in) = tokio::io::duplex(1024);
    let (server_out, _client_out) = tokio::io::duplex(1024);
    let token = CancellationToken::new();
    let mut transport = LineTransport::new(server_in, server_out).with_eof_token(token.clone());
    drop(server_in_w);
    assert!(Transport::<RoleServer>::receive(&mut transport).await.is_none());
    assert!(token.is_cancelled());
}
