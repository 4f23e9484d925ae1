//! The `artifact` tool: the model writes a file for the person (a report, a table, a patch),
//! kept per conversation in `DATA_DIR/artifacts/CONVERSATION/NAME`, outside every workspace,
//! so it outlives a scratch directory and reaches a person with no filesystem of theirs
//! (`superpi artifacts`, the gateway's and AG-UI's download route, ACP's resource link).
//!
//! Its runner runs in the kernel's process: it writes only below the kernel's own data dir,
//! under a name it made safe itself (one file name of `[A-Za-z0-9._-]`, never `.` or `..`,
//! never a path), through a temporary file renamed into place (a second write of a name
//! replaces it whole). Files are 0600, directories 0700. Size and count are bounded
//! ([`MAX_BYTES`], [`MAX_COUNT`]). Effect `state_write`: `plan` refuses it, `accept-edits`
//! lets it through (it touches nothing of the person's).

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;
use superpi_proto::Event;
use superpi_proto::artifact::ArtifactInfo;
use superpi_proto::tool::{Effect, ToolCallResult, ToolDef, ToolKind, ToolUi};
use superpi_providers::images;
use superpi_sandbox::{RunFuture, ToolCall, ToolRunner};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::kernel::KernelSlot;
use crate::sync::lock;
use crate::tools::common::{ok, parse};

/// The tool's name.
pub(crate) const NAME: &str = "artifact";
/// The largest artifact, in bytes (its base64 in `artifact.read` stays well under a frame).
pub(crate) const MAX_BYTES: usize = 8 * 1024 * 1024;
/// The most artifacts of one conversation.
pub(crate) const MAX_COUNT: usize = 200;
/// The longest name.
const MAX_NAME: usize = 128;

/// The tool's facts.
pub(crate) fn def() -> ToolDef {
    ToolDef {
        name: NAME.into(),
        description: "Save a file for the person: a report, a table, a document they download. It is kept with \
                      this conversation outside any workspace, listed by `superpi artifacts` and offered to them \
                      as a download. A second call with the same name replaces the file. Give text in `content`, \
                      or base64 with `encoding: \"base64\"` for binary data."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The file name, with its extension (report.md, data.csv)"},
                "content": {"type": "string", "description": "The file's contents"},
                "encoding": {"type": "string", "enum": ["utf-8", "base64"], "description": "How `content` is written (default utf-8)"}
            },
            "required": ["name", "content"],
            "additionalProperties": false
        }),
        effects: vec![Effect::StateWrite],
        ui: ToolUi { kind: ToolKind::Other, title: Some("Save artifact {name}".into()), ..ToolUi::default() },
        turn_only: true,
        ..ToolDef::default()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    name: String,
    content: String,
    #[serde(default)]
    encoding: Option<String>,
}

/// A name made safe: its last path component, every character outside `[A-Za-z0-9._-]` a `_`,
/// leading dots dropped, at most [`MAX_NAME`] characters; `None` when nothing is left.
pub(crate) fn sanitize(name: &str) -> Option<String> {
    let last = name.rsplit(['/', '\\']).next().unwrap_or("");
    let safe: String =
        last.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect();
    let safe = safe.trim_start_matches('.');
    let safe: String = safe.chars().take(MAX_NAME).collect();
    (!safe.is_empty() && safe.chars().any(|c| c != '_')).then_some(safe)
}

/// The media type of a name, by its extension.
pub(crate) fn media_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "txt" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "html" | "htm" => "text/html",
        "json" => "application/json",
        "xml" => "application/xml",
        "yaml" | "yml" => "application/yaml",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "zip" => "application/zip",
        "diff" | "patch" => "text/x-diff",
        _ => "application/octet-stream",
    }
}

/// Where a conversation's artifacts are.
pub(crate) fn dir(data_dir: &Path, conversation: i64) -> PathBuf {
    data_dir.join("artifacts").join(conversation.to_string())
}

fn private_dir(path: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
}

/// Writes (or replaces) an artifact; its description, or why not.
pub(crate) fn write(data_dir: &Path, conversation: i64, name: &str, bytes: &[u8]) -> Result<ArtifactInfo, String> {
    if bytes.len() > MAX_BYTES {
        return Err(format!("an artifact holds at most {MAX_BYTES} bytes, not {}", bytes.len()));
    }
    let root = data_dir.join("artifacts");
    let dir = dir(data_dir, conversation);
    private_dir(&root)
        .and_then(|()| private_dir(&dir))
        .map_err(|e| format!("cannot make the artifacts directory: {e}"))?;
    let target = dir.join(name);
    if !target.exists() && list_dir(&dir, conversation).len() >= MAX_COUNT {
        return Err(format!("a conversation keeps at most {MAX_COUNT} artifacts: replace one by its name"));
    }
    let write = || -> std::io::Result<()> {
        // tempfile makes it 0600 with O_EXCL, so nothing planted is written through.
        let mut file = tempfile::NamedTempFile::new_in(&dir)?;
        file.write_all(bytes)?;
        file.as_file().sync_all()?;
        file.persist(&target).map_err(|e| e.error)?;
        Ok(())
    };
    write().map_err(|e| format!("cannot write the artifact: {e}"))?;
    info(&dir, conversation, name).ok_or_else(|| "the artifact vanished as it was written".into())
}

fn info(dir: &Path, conversation: i64, name: &str) -> Option<ArtifactInfo> {
    let meta = std::fs::symlink_metadata(dir.join(name)).ok().filter(|m| m.is_file())?;
    let created_at_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64);
    Some(ArtifactInfo {
        conversation_id: conversation,
        name: name.to_string(),
        bytes: meta.len(),
        media_type: media_type(name).into(),
        created_at_ms,
    })
}

fn list_dir(dir: &Path, conversation: i64) -> Vec<ArtifactInfo> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| sanitize(name).as_deref() == Some(name.as_str()))
        .filter_map(|name| info(dir, conversation, &name))
        .collect()
}

/// The artifacts of these conversations, newest first.
pub(crate) fn list(data_dir: &Path, conversations: impl IntoIterator<Item = i64>) -> Vec<ArtifactInfo> {
    let mut all: Vec<ArtifactInfo> =
        conversations.into_iter().flat_map(|id| list_dir(&dir(data_dir, id), id)).collect();
    all.sort_by(|a, b| b.created_at_ms.cmp(&a.created_at_ms).then_with(|| a.name.cmp(&b.name)));
    all
}

/// The conversations that have an artifacts directory.
pub(crate) fn conversations(data_dir: &Path) -> Vec<i64> {
    let Ok(entries) = std::fs::read_dir(data_dir.join("artifacts")) else { return Vec::new() };
    entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()
}

/// One artifact with its bytes; `None` when there is none of that name.
pub(crate) fn read(data_dir: &Path, conversation: i64, name: &str) -> Option<(ArtifactInfo, Vec<u8>)> {
    if sanitize(name).as_deref() != Some(name) {
        return None;
    }
    let dir = dir(data_dir, conversation);
    let info = info(&dir, conversation, name)?;
    let bytes = std::fs::read(dir.join(name)).ok()?;
    Some((info, bytes))
}

/// Removes a conversation's artifacts (with the conversation).
pub(crate) fn remove_all(data_dir: &Path, conversation: i64) {
    let dir = dir(data_dir, conversation);
    if let Err(e) = std::fs::remove_dir_all(&dir)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("could not remove {}: {e}", dir.display());
    }
}

/// The runner: writes the file and announces it on the calling turn's conversation.
pub(crate) struct ArtifactTool {
    pub kernel: KernelSlot,
}

impl ToolRunner for ArtifactTool {
    fn run<'a>(&'a self, call: &'a ToolCall, _: CancellationToken, _: Option<mpsc::Sender<String>>) -> RunFuture<'a> {
        Box::pin(async move {
            let args: Args = match parse(&call.arguments) {
                Ok(args) => args,
                Err(why) => return ToolCallResult::error(why),
            };
            let Some(name) = sanitize(&args.name) else {
                return ToolCallResult::error("an artifact's name needs letters or digits (report.md)".to_string());
            };
            let bytes = match args.encoding.as_deref() {
                None | Some("utf-8") => args.content.into_bytes(),
                Some("base64") => match images::decode(&args.content) {
                    Ok(bytes) => bytes,
                    Err(why) => return ToolCallResult::error(format!("`content` is not base64: {why}")),
                },
                Some(other) => return ToolCallResult::error(format!("unknown encoding `{other}`")),
            };
            let conv = self.kernel.get().and_then(|kernel| Some((kernel.live.get(call.conversation_id)?, kernel)));
            let Some((conv, kernel)) = conv else {
                return ToolCallResult::error(format!("`{NAME}` is called by a model during a turn"));
            };
            let data_dir = kernel.config.data_dir.clone();
            let id = conv.id;
            let written = tokio::task::spawn_blocking(move || write(&data_dir, id, &name, &bytes)).await;
            let info = match written {
                Ok(Ok(info)) => info,
                Ok(Err(why)) => return ToolCallResult::error(why),
                Err(e) => return ToolCallResult::error(format!("the write failed: {e}")),
            };
            let turn = *lock(&conv.running);
            let event = Event::artifact_created(conv.id, turn, &call.call_id, &info.name, info.bytes, &info.media_type);
            conv.emit(&kernel, event);
            let output = format!("Saved artifact {} ({} bytes) for the person.", info.name, info.bytes);
            ok(output, json!({"name": info.name, "bytes": info.bytes, "media_type": info.media_type}))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_safe_file_name_or_nothing() {
        assert_eq!(sanitize("report.md").as_deref(), Some("report.md"));
        assert_eq!(sanitize("../../etc/passwd").as_deref(), Some("passwd"));
        assert_eq!(sanitize("a/b\\c d.csv").as_deref(), Some("c_d.csv"));
        assert_eq!(sanitize("..hidden").as_deref(), Some("hidden"));
        assert_eq!(sanitize(".."), None);
        assert_eq!(sanitize("dir/"), None);
        assert_eq!(sanitize("¿¿"), None);
        assert_eq!(sanitize(&"x".repeat(300)).map(|s| s.len()), Some(MAX_NAME));
        assert_eq!(media_type("t.CSV"), "text/csv");
        assert_eq!(media_type("blob"), "application/octet-stream");
    }

    #[test]
    fn a_write_is_private_bounded_and_replaces_by_name() {
        let data = tempfile::tempdir().unwrap();
        let first = write(data.path(), 7, "a.txt", b"one").unwrap();
        assert_eq!((first.bytes, first.media_type.as_str()), (3, "text/plain"));
        write(data.path(), 7, "a.txt", b"second").unwrap();
        let (info, bytes) = read(data.path(), 7, "a.txt").unwrap();
        assert_eq!((info.bytes, bytes.as_slice()), (6, b"second".as_slice()));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir(data.path(), 7).join("a.txt")), 0o600);
        assert_eq!(mode(&dir(data.path(), 7)), 0o700);
        assert_eq!(mode(&data.path().join("artifacts")), 0o700);
        assert!(write(data.path(), 7, "big.bin", &vec![0; MAX_BYTES + 1]).unwrap_err().contains("at most"));
        assert!(read(data.path(), 7, "../7/a.txt").is_none());
        assert_eq!(list(data.path(), conversations(data.path())).len(), 1);
        remove_all(data.path(), 7);
        assert!(list(data.path(), [7]).is_empty());
    }
}
