//! `superpi rpc`: the JSON-RPC envelope.

use serde_json::Value;
use superpi_rpc::envelope::{self, Incoming, Item, codes};

/// One request line. Every answer is one JSON line; a parse error is given exactly to what
/// is not JSON; an item's error keeps the id when the id was a valid one.
pub fn envelope(data: &[u8]) {
    let is_json = serde_json::from_slice::<Value>(data).is_ok();
    match envelope::parse_line(data) {
        Incoming::Reject(error) => {
            let expected = if is_json { codes::INVALID_REQUEST } else { codes::PARSE_ERROR };
            assert_eq!(error.code, expected, "wrong error for a rejected line");
            answer(&envelope::reject(&error));
        }
        Incoming::Single(item) => {
            assert!(is_json);
            check_item(&item);
        }
        Incoming::Batch(items) => {
            assert!(is_json && !items.is_empty());
            items.iter().for_each(check_item);
        }
    }
}

fn check_item(item: &Item) {
    match item {
        Item::Call(call) => {
            assert!(matches!(call.params, None | Some(Value::Object(_) | Value::Array(_))));
            if let Some(id) = &call.id {
                assert!(matches!(id, Value::String(_) | Value::Number(_) | Value::Null));
                answer(&envelope::response(id, &Ok(Value::Null)));
            }
        }
        Item::Invalid { id, error } => {
            assert_eq!(error.code, codes::INVALID_REQUEST);
            answer(&envelope::response(id, &Err(error.clone())));
        }
    }
}

/// An answer goes out as exactly one line of JSON.
fn answer(value: &Value) {
    let line = envelope::to_line(value);
    assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "an answer is not one line");
    let back: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
    assert_eq!(&back, value, "an answer line does not read back");
}
