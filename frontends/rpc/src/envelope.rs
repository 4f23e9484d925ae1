//! The JSON-RPC 2.0 envelope: reading one line into calls, writing answers and notifications.
//!
//! Pure code: a line goes in, [`Incoming`] comes out, and responses are written to bytes by
//! hand so an id of any kind (string, number, null) goes back exactly as it came.

use serde_json::{Map, Value};

/// The error codes this server answers with: the kernel's, which are JSON-RPC's where they
/// mean the same (`superpi_proto::message::codes`), so a kernel refusal passes on unchanged.
/// UNAUTHORIZED: not logged in (tokens are configured) or a wrong token; FORBIDDEN: a mode
/// above the ceiling, a second login as someone else; NOT_FOUND: no such conversation, watch
/// or question, or one another principal owns; PROVIDER: an unknown model or a provider
/// without credentials.
pub mod codes {
    pub use superpi_proto::message::codes::{
        FORBIDDEN, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, NOT_FOUND, PARSE_ERROR, PROVIDER,
        UNAUTHORIZED,
    };
}

/// An error object as JSON-RPC sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i32,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("code".into(), Value::from(self.code));
        map.insert("message".into(), Value::from(self.message.clone()));
        if let Some(data) = &self.data {
            map.insert("data".into(), data.clone());
        }
        Value::Object(map)
    }
}

/// One call of a line: a request (it has an `id`, possibly null) or a notification.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// `None` for a notification: it gets no answer, not even an error.
    pub id: Option<Value>,
    pub method: String,
    /// `None` when the call had no `params`; otherwise an object or an array.
    pub params: Option<Value>,
}

/// One element of a line: a call to run, or an answer already known (an invalid request).
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Call(Call),
    Invalid { id: Value, error: RpcError },
}

/// What one line holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A lone object.
    Single(Item),
    /// A non-empty array: the answers go back as one array (none when all were notifications).
    Batch(Vec<Item>),
    /// A line that gets one error answer with a null id (not JSON, an empty batch).
    Reject(RpcError),
}

/// Reads one line (without its newline).
pub fn parse_line(line: &[u8]) -> Incoming {
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(err) => return Incoming::Reject(RpcError::new(codes::PARSE_ERROR, format!("parse error: {err}"))),
    };
    match value {
        Value::Array(items) if items.is_empty() => {
            Incoming::Reject(RpcError::new(codes::INVALID_REQUEST, "invalid request: an empty batch"))
        }
        Value::Array(items) => Incoming::Batch(items.into_iter().map(parse_item).collect()),
        other => Incoming::Single(parse_item(other)),
    }
}

fn invalid(id: Value, why: &str) -> Item {
    Item::Invalid { id, error: RpcError::new(codes::INVALID_REQUEST, format!("invalid request: {why}")) }
}

/// Checks one request object. Its id is echoed in the error when the id itself is valid.
fn parse_item(value: Value) -> Item {
    let Value::Object(mut map) = value else {
        return invalid(Value::Null, "not an object");
    };
    let id = match map.remove("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => Some(id),
        Some(_) => return invalid(Value::Null, "`id` must be a string, a number or null"),
    };
    let echo = id.clone().unwrap_or(Value::Null);
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(echo, "`jsonrpc` must be \"2.0\"");
    }
    let method = match map.remove("method") {
        Some(Value::String(method)) => method,
        _ => return invalid(echo, "`method` must be a string"),
    };
    let params = match map.remove("params") {
        None => None,
        Some(params @ (Value::Object(_) | Value::Array(_))) => Some(params),
        Some(_) => return invalid(echo, "`params` must be an object or an array"),
    };
    Item::Call(Call { id, method, params })
}

/// A response line's JSON (no newline): `{"jsonrpc":"2.0","id":..,"result"|"error":..}`.
pub fn response(id: &Value, outcome: &Result<Value, RpcError>) -> Value {
    let mut map = Map::new();
    map.insert("jsonrpc".into(), Value::from("2.0"));
    map.insert("id".into(), id.clone());
    match outcome {
        Ok(result) => map.insert("result".into(), result.clone()),
        Err(error) => map.insert("error".into(), error.to_value()),
    };
    Value::Object(map)
}

/// An error answer with a null id, for a line that could not be read as calls.
pub fn reject(error: &RpcError) -> Value {
    response(&Value::Null, &Err(error.clone()))
}

/// A notification line's JSON (no newline).
pub fn notification(method: &str, params: Value) -> Value {
    let mut map = Map::new();
    map.insert("jsonrpc".into(), Value::from("2.0"));
    map.insert("method".into(), Value::from(method));
    map.insert("params".into(), params);
    Value::Object(map)
}

/// A value as one protocol line, newline included.
pub fn to_line(value: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: Option<Value>, method: &str, params: Option<Value>) -> Item {
        Item::Call(Call { id, method: method.into(), params })
    }

    #[test]
    fn reads_requests_with_every_id_kind_and_notifications() {
        for id in [json!(1), json!(-7), json!(2.5), json!("abc"), Value::Null] {
            let line = json!({"jsonrpc": "2.0", "id": id, "method": "m", "params": {"a": 1}}).to_string();
            assert_eq!(parse_line(line.as_bytes()), Incoming::Single(call(Some(id), "m", Some(json!({"a": 1})))));
        }
        let line = br#"{"jsonrpc":"2.0","method":"n","params":[1,2]}"#;
        assert_eq!(parse_line(line), Incoming::Single(call(None, "n", Some(json!([1, 2])))));
        let line = br#"{"jsonrpc":"2.0","method":"n"}"#;
        assert_eq!(parse_line(line), Incoming::Single(call(None, "n", None)));
    }

    #[test]
    fn tells_parse_errors_from_invalid_requests() {
        let Incoming::Reject(err) = parse_line(b"{\"jsonrpc\": \"2.0\", \"method\"") else { panic!() };
        assert_eq!(err.code, codes::PARSE_ERROR);
        let Incoming::Reject(err) = parse_line(b"[\xff]") else { panic!() };
        assert_eq!(err.code, codes::PARSE_ERROR);
        let Incoming::Reject(err) = parse_line(b"[]") else { panic!() };
        assert_eq!(err.code, codes::INVALID_REQUEST);

        let cases: Vec<(Value, Value)> = vec![
            (json!(1), Value::Null),
            (json!("x"), Value::Null),
            (json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "m"}), Value::Null),
            (json!({"jsonrpc": "1.0", "id": 3, "method": "m"}), json!(3)),
            (json!({"id": 3, "method": "m"}), json!(3)),
            (json!({"jsonrpc": "2.0", "id": "q", "method": 5}), json!("q")),
            (json!({"jsonrpc": "2.0", "id": 4, "method": "m", "params": 7}), json!(4)),
        ];
        for (line, id) in cases {
            match parse_line(line.to_string().as_bytes()) {
                Incoming::Single(Item::Invalid { id: got, error }) => {
                    assert_eq!(got, id, "{line}");
                    assert_eq!(error.code, codes::INVALID_REQUEST, "{line}");
                }
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn reads_a_batch_item_by_item() {
        let line = json!([
            {"jsonrpc": "2.0", "id": 1, "method": "a"},
            1,
            {"jsonrpc": "2.0", "method": "b", "params": {}},
        ])
        .to_string();
        let Incoming::Batch(items) = parse_line(line.as_bytes()) else { panic!() };
        assert_eq!(items.len(), 3);
        assert_eq!(items[0], call(Some(json!(1)), "a", None));
        assert!(matches!(&items[1], Item::Invalid { id: Value::Null, error } if error.code == codes::INVALID_REQUEST));
        assert_eq!(items[2], call(None, "b", Some(json!({}))));
    }

    #[test]
    fn writes_answers_with_the_id_as_given() {
        assert_eq!(
            response(&json!(-1.5), &Ok(json!({"x": 1}))),
            json!({"jsonrpc": "2.0", "id": -1.5, "result": {"x": 1}})
        );
        let err = RpcError::new(codes::NOT_FOUND, "conversation 9 not found").with_data(json!({"conversation_id": 9}));
        assert_eq!(
            response(&json!("a"), &Err(err)),
            json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32004, "message": "conversation 9 not found", "data": {"conversation_id": 9}}})
        );
        assert_eq!(
            reject(&RpcError::new(codes::PARSE_ERROR, "parse error")),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}})
        );
        assert_eq!(to_line(&notification("n", json!({}))), b"{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{}}\n");
    }
}
