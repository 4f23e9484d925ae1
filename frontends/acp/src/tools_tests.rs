use super::*;
use serde_json::json;

/// The facts of the kernel's built-in tools, from their source (this crate only reads what
/// `tool.list` sends).
fn facts() -> ToolFacts {
    ToolFacts::new(superpi_sandbox::ToolRegistry::builtin().defs())
}

#[test]
fn kinds_follow_the_facts() {
    let f = facts();
    assert_eq!(kind(f.get("read")), ToolKind::Read);
    assert_eq!(kind(f.get("edit")), ToolKind::Edit);
    assert_eq!(kind(f.get("bash")), ToolKind::Execute);
    assert_eq!(kind(f.get("mcp__x__y")), ToolKind::Other, "a tool without facts");
}

#[test]
fn titles_and_locations() {
    let (ws, f) = (Path::new("/ws"), facts());
    assert_eq!(title("bash", f.get("bash"), &json!({"command": "ls -la\necho hi"})), "Run `ls -la…`");
    assert_eq!(title("read", f.get("read"), &json!({"path": "src/a.rs"})), "Read src/a.rs");
    assert_eq!(title("gone", f.get("gone"), &json!({"path": "src/a.rs"})), "gone");
    assert_eq!(
        locations(Some(ws), f.get("read"), &json!({"path": "src/a.rs", "offset": 10})),
        vec![ToolCallLocation::new("/ws/src/a.rs").line(10)]
    );
    assert_eq!(locations(Some(ws), f.get("read"), &json!({"path": "/etc/x"})), vec![ToolCallLocation::new("/etc/x")]);
    assert!(locations(Some(ws), f.get("bash"), &json!({"command": "true", "cwd": "sub"})).is_empty());
}

#[test]
fn diffs_for_file_changes() {
    let (ws, f) = (Path::new("/ws"), facts());
    assert_eq!(
        diffs(Some(ws), f.get("write"), &json!({"path": "a.txt", "content": "hi\n"})),
        vec![ToolCallContent::Diff(Diff::new("/ws/a.txt", "hi\n"))]
    );
    assert_eq!(
        diffs(Some(ws), f.get("edit"), &json!({"path": "a.txt", "old_string": "a", "new_string": "b"})),
        vec![ToolCallContent::Diff(Diff::new("/ws/a.txt", "b").old_text("a".to_string()))]
    );
    assert!(diffs(Some(ws), f.get("edit"), &json!({"path": "a.txt", "new_string": "b"})).is_empty());
    assert!(diffs(Some(ws), f.get("read"), &json!({"path": "a.txt"})).is_empty());
}

#[test]
fn truncation_keeps_char_boundaries() {
    let s = truncate("ééé".to_string(), 3);
    assert!(s.starts_with('é'));
    assert!(s.ends_with("(output cut for display)"));
}
