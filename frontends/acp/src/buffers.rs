//! Editor buffers: the kernel's file-read questions (`ui_request` of kind `read_text_file`),
//! answered from the editor's `fs/read_text_file` so that a `read` tool call sees text the
//! person has not saved yet.
//!
//! Pure decisions only: which mode, whether this agent takes the questions at all, what the
//! answer to the kernel is given the editor's text and the disk's. The pump does the I/O.
//! Writes never go through the editor: they stay in the confined tools.

use std::path::Path;

use serde_json::{Map, Value, json};

/// When a `read` tool call uses the editor's text rather than the file on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum EditorBuffers {
    /// Ask the editor, and use its text only when it differs from the disk (an unsaved
    /// buffer, or a file not yet written).
    #[default]
    #[value(name = "unsaved_only", alias = "unsaved-only")]
    UnsavedOnly,
    /// Never ask the editor: reads come from the disk.
    #[value(name = "never")]
    Never,
    /// Always use the editor's text when it can give one.
    #[value(name = "always")]
    Always,
}

/// Whether this agent answers the kernel's file-read questions: the editor advertised
/// `fs.readTextFile` and the mode asks it.
pub fn reads_files(mode: EditorBuffers, client_reads: bool) -> bool {
    client_reads && mode != EditorBuffers::Never
}

/// A file-read question from the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    pub request_id: String,
    /// Absolute path.
    pub path: String,
    pub tool_call_id: Option<String>,
}

/// The `ui_request` payload as a file-read question; `None` for any other kind, or one
/// without an absolute path (the editor takes absolute paths only).
pub fn read_request(request_id: &str, request: &Map<String, Value>) -> Option<ReadRequest> {
    if request.get("kind").and_then(Value::as_str) != Some("read_text_file") {
        return None;
    }
    let path = request.get("path").and_then(Value::as_str)?;
    if !std::path::Path::new(path).is_absolute() {
        return None;
    }
    Some(ReadRequest {
        request_id: request_id.to_string(),
        path: path.to_string(),
        tool_call_id: request.get("tool_call_id").and_then(Value::as_str).map(str::to_string),
    })
}

/// The answer to a file-read question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadAnswer {
    /// The read uses this text (the whole file; the kernel applies offset and limit).
    Content(String),
    /// The read goes to the disk, in the sandbox, as usual.
    UseDisk,
}

impl ReadAnswer {
    /// The `outcome` of `ui.respond`.
    pub fn outcome(&self) -> Value {
        match self {
            ReadAnswer::Content(text) => json!({ "content": text }),
            ReadAnswer::UseDisk => json!({ "use_disk": true }),
        }
    }
}

/// What the disk holds at the path, as the frontend sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disk {
    Bytes(Vec<u8>),
    Missing,
    /// Could not be read (permissions, a directory, ...).
    Unreadable,
}

impl Disk {
    /// Reads `path` (blocking).
    pub fn read(path: &str) -> Disk {
        match std::fs::read(path) {
            Ok(bytes) => Disk::Bytes(bytes),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Disk::Missing,
            Err(_) => Disk::Unreadable,
        }
    }
}

/// Whether the editor may be asked for `path`: a plain absolute path (no `.` or `..`, which an
/// editor may fold lexically) whose resolved form, links followed as the editor will follow
/// them, is inside the workspace's. A path that does not exist yet (an unsaved new file)
/// counts by its nearest existing ancestor; a dangling link does not count. Blocking.
pub fn editor_may_read(path: &Path, workspace: &Path) -> bool {
    use std::path::Component;
    let plain = path.is_absolute() && path.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !plain {
        return false;
    }
    let Ok(root) = workspace.canonicalize() else { return false };
    let mut at = path;
    loop {
        match at.canonicalize() {
            Ok(resolved) => return resolved.starts_with(&root),
            // It exists but does not resolve: a dangling or looping link, or unreadable.
            Err(_) if std::fs::symlink_metadata(at).is_ok() => return false,
            Err(_) => match at.parent() {
                Some(parent) => at = parent,
                None => return false,
            },
        }
    }
}

/// Whether the disk must be read to decide (only `unsaved_only` compares).
pub fn needs_disk(mode: EditorBuffers) -> bool {
    mode == EditorBuffers::UnsavedOnly
}

/// Decides the answer from the mode, the editor's text (`None` when its read failed) and the
/// disk. `unsaved_only` uses the editor's text only when it differs from the disk; a missing
/// file counts as different. A disk file this frontend cannot read is left to the sandboxed
/// read (which reports its own error): the editor is no way around the tool's confinement.
pub fn decide(mode: EditorBuffers, editor: Option<String>, disk: &Disk) -> ReadAnswer {
    let Some(text) = editor else { return ReadAnswer::UseDisk };
    match mode {
        EditorBuffers::Never => ReadAnswer::UseDisk,
        EditorBuffers::Always => ReadAnswer::Content(text),
        EditorBuffers::UnsavedOnly => match disk {
            Disk::Bytes(bytes) if bytes.as_slice() == text.as_bytes() => ReadAnswer::UseDisk,
            Disk::Bytes(_) | Disk::Missing => ReadAnswer::Content(text),
            Disk::Unreadable => ReadAnswer::UseDisk,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn the_flag_takes_the_documented_names() {
        use clap::ValueEnum;
        assert_eq!(EditorBuffers::from_str("unsaved_only", false), Ok(EditorBuffers::UnsavedOnly));
        assert_eq!(EditorBuffers::from_str("unsaved-only", false), Ok(EditorBuffers::UnsavedOnly));
        assert_eq!(EditorBuffers::from_str("never", false), Ok(EditorBuffers::Never));
        assert_eq!(EditorBuffers::from_str("always", false), Ok(EditorBuffers::Always));
        assert!(EditorBuffers::from_str("sometimes", false).is_err());
    }

    #[test]
    fn only_a_client_that_reads_and_a_mode_that_asks_take_questions() {
        assert!(reads_files(EditorBuffers::UnsavedOnly, true));
        assert!(reads_files(EditorBuffers::Always, true));
        assert!(!reads_files(EditorBuffers::Never, true));
        assert!(!reads_files(EditorBuffers::Always, false));
        assert!(!reads_files(EditorBuffers::UnsavedOnly, false));
    }

    #[test]
    fn a_read_question_is_recognised_and_others_are_not() {
        let q = map(json!({"kind": "read_text_file", "path": "/ws/a.txt", "tool_call_id": "t1", "offset": 3}));
        assert_eq!(
            read_request("u1", &q),
            Some(ReadRequest { request_id: "u1".into(), path: "/ws/a.txt".into(), tool_call_id: Some("t1".into()) })
        );
        assert_eq!(read_request("u1", &map(json!({"kind": "confirm", "path": "/ws/a.txt"}))), None);
        assert_eq!(read_request("u1", &map(json!({"kind": "read_text_file", "path": "a.txt"}))), None);
        assert_eq!(read_request("u1", &map(json!({"kind": "read_text_file"}))), None);
        assert_eq!(read_request("u1", &map(json!({"path": "/ws/a.txt"}))), None);
    }

    #[test]
    fn outcomes_are_what_ui_respond_takes() {
        assert_eq!(ReadAnswer::Content("x\n".into()).outcome(), json!({"content": "x\n"}));
        assert_eq!(ReadAnswer::UseDisk.outcome(), json!({"use_disk": true}));
    }

    #[test]
    fn unsaved_only_uses_the_editor_text_only_when_it_differs() {
        let m = EditorBuffers::UnsavedOnly;
        let disk = Disk::Bytes(b"on disk\n".to_vec());
        assert_eq!(decide(m, Some("edited\n".into()), &disk), ReadAnswer::Content("edited\n".into()));
        assert_eq!(decide(m, Some("on disk\n".into()), &disk), ReadAnswer::UseDisk);
        assert_eq!(decide(m, Some("new file\n".into()), &Disk::Missing), ReadAnswer::Content("new file\n".into()));
        assert_eq!(decide(m, Some("x".into()), &Disk::Unreadable), ReadAnswer::UseDisk);
        assert_eq!(decide(m, None, &disk), ReadAnswer::UseDisk, "the editor's read failed");
        assert!(needs_disk(m));
    }

    #[test]
    fn always_uses_the_editor_text_and_never_the_disk() {
        let disk = Disk::Bytes(b"same\n".to_vec());
        assert_eq!(decide(EditorBuffers::Always, Some("same\n".into()), &disk), ReadAnswer::Content("same\n".into()));
        assert_eq!(decide(EditorBuffers::Always, None, &disk), ReadAnswer::UseDisk);
        assert_eq!(decide(EditorBuffers::Never, Some("edited".into()), &disk), ReadAnswer::UseDisk);
        assert!(!needs_disk(EditorBuffers::Always) && !needs_disk(EditorBuffers::Never));
    }

    #[test]
    fn disk_reads_tell_missing_from_unreadable() {
        let dir = std::env::temp_dir().join(format!("superpi-acp-buffers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f.txt");
        std::fs::write(&file, "abc").unwrap();
        assert_eq!(Disk::read(file.to_str().unwrap()), Disk::Bytes(b"abc".to_vec()));
        assert_eq!(Disk::read(dir.join("none").to_str().unwrap()), Disk::Missing);
        assert_eq!(Disk::read(dir.to_str().unwrap()), Disk::Unreadable, "a directory");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--editor-buffers always` sent the editor any path the kernel had checked lexically:
    /// a workspace symlink to a file outside would be read by the editor.
    #[test]
    fn the_editor_is_asked_only_for_paths_that_resolve_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(dir.path().join("id_rsa"), "secret").unwrap();
        std::os::unix::fs::symlink(dir.path().join("id_rsa"), ws.join("key")).unwrap();
        std::os::unix::fs::symlink(dir.path(), ws.join("up")).unwrap();
        std::os::unix::fs::symlink(ws.join("src/main.rs"), ws.join("inner")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("gone"), ws.join("dangling")).unwrap();

        for inside in ["src/main.rs", "inner", "src/new.rs", "new/dir/file.rs"] {
            assert!(editor_may_read(&ws.join(inside), &ws), "{inside}");
        }
        for outside in ["key", "up/id_rsa", "up/new.rs", "dangling", "src/../../id_rsa"] {
            assert!(!editor_may_read(&ws.join(outside), &ws), "{outside}");
        }
        assert!(!editor_may_read(&dir.path().join("id_rsa"), &ws));
        assert!(!editor_may_read(Path::new("relative.rs"), &ws));
    }
}
