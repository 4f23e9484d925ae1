use super::*;
use proptest::prelude::*;
use serde_json::json;

#[test]
fn a_prefix_keeps_what_is_whole_and_the_string_value_being_written() {
    let cases = [
        ("", None),
        ("   ", None),
        ("{", Some(json!({}))),
        ("{\"pa", Some(json!({}))),
        ("{\"path\"", Some(json!({}))),
        ("{\"path\": ", Some(json!({}))),
        ("{\"path\": \"src/ma", Some(json!({"path": "src/ma"}))),
        ("{\"path\": \"a\", ", Some(json!({"path": "a"}))),
        ("{\"path\": \"a\", \"content\": \"line 1\\nli", Some(json!({"path": "a", "content": "line 1\nli"}))),
        ("{\"content\": \"tab\\", Some(json!({"content": "tab"}))),
        ("{\"content\": \"smile \\u26", Some(json!({"content": "smile "}))),
        ("{\"content\": \"face \\uD83D\\uDE0", Some(json!({"content": "face "}))),
        ("{\"content\": \"face \\uD83D\\uDE00", Some(json!({"content": "face 😀"}))),
        ("{\"content\": \"naïve", Some(json!({"content": "naïve"}))),
        ("{\"limit\": 12", Some(json!({}))),
        ("{\"limit\": 12,", Some(json!({"limit": 12}))),
        ("{\"ok\": tru", Some(json!({}))),
        ("{\"ok\": true}", Some(json!({"ok": true}))),
        (
            "{\"plan\": [{\"step\": \"read\", \"status\": \"completed\"}, {\"st",
            Some(json!({"plan": [{"step": "read", "status": "completed"}, {}]})),
        ),
        ("{\"a\": [1, 2", Some(json!({"a": [1]}))),
        ("[\"x", Some(json!(["x"]))),
        ("}", None),
        ("not json", None),
    ];
    for (prefix, want) in cases {
        assert_eq!(complete(prefix), want, "prefix {prefix:?}");
    }
}

fn arguments() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i32>().prop_map(serde_json::Value::from),
        "[a-z \\n\"\\\\é😀]{0,12}".prop_map(serde_json::Value::from),
    ];
    let value = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map("[a-z]{1,5}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    });
    prop::collection::btree_map("[a-z_]{1,8}", value, 0..5)
        .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()))
}

proptest! {
    /// Every prefix of an object's text (compact or pretty) completes to an object, and the
    /// whole text to the object itself.
    #[test]
    fn every_prefix_of_an_object_completes(args in arguments(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&args) } else { serde_json::to_string(&args) };
        let text = text.unwrap();
        for (end, _) in text.char_indices().skip(1) {
            let value = complete(&text[..end]);
            prop_assert!(matches!(value, Some(serde_json::Value::Object(_))), "prefix {:?}: {:?}", &text[..end], value);
        }
        prop_assert_eq!(complete(&text), Some(args));
    }
}
