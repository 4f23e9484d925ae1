//! The `artifact` tool: the model writes a file for the person (a report, a table, a patch),
//! kept in the store with its conversation (`artifacts`), outside every workspace, so it
//! outlives a scratch directory, reaches a person with no filesystem of theirs (`superpi
//! artifacts`, the gateway's and AG-UI's download route, ACP's resource link) and is served by
//! every kernel on a shared database, whichever ran the turn.
//!
//! The kernel that writes one also keeps a copy in `DATA_DIR/artifacts/CONVERSATION/NAME` for
//! the person's editor on this machine (ACP's `file://` link, the CLI's FILE column); the
//! store's is the one listed and read. The copy is written only below the kernel's own data
//! dir, under a name made safe here (one file name of `[A-Za-z0-9._-]`, never `.` or `..`,
//! never a path), through a temporary file renamed into place; files 0600, directories 0700.
//! Files an older kernel kept there alone are put into the store once at start
//! ([`import_files`]). Size and count are bounded ([`MAX_BYTES`], [`MAX_COUNT`]). Effect
//! `state_write`: `plan` refuses it, `accept-edits` lets it through (it touches nothing of the
//! person's).

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;
use superpi_proto::Event;
use superpi_proto::artifact::ArtifactInfo;
use superpi_proto::event::now_ms;
use superpi_proto::tool::{Effect, ToolCallResult, ToolDef, ToolKind, ToolUi};
use superpi_providers::images;
use superpi_sandbox::{RunFuture, ToolCall, ToolRunner};
use superpi_store::{ArtifactRow, NewArtifact, Store, StoreError};
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

/// Where this kernel keeps its copy of a conversation's artifacts.
pub(crate) fn dir(data_dir: &Path, conversation: i64) -> PathBuf {
    data_dir.join("artifacts").join(conversation.to_string())
}

fn private_dir(path: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
}

fn info_of(row: ArtifactRow) -> ArtifactInfo {
    ArtifactInfo {
        conversation_id: row.conversation_id,
        name: row.name,
        bytes: row.size,
        media_type: row.media_type,
        created_at_ms: row.created_at_ms,
    }
}

/// Writes (or replaces) an artifact in the store, then this kernel's copy of it (a copy that
/// cannot be written is logged: the store has it); its description, or why not.
pub(crate) fn write(
    store: &dyn Store,
    data_dir: &Path,
    conversation: i64,
    name: &str,
    bytes: &[u8],
) -> Result<ArtifactInfo, String> {
    if bytes.len() > MAX_BYTES {
        return Err(format!("an artifact holds at most {MAX_BYTES} bytes, not {}", bytes.len()));
    }
    let new = NewArtifact {
        conversation_id: conversation,
        name,
        media_type: media_type(name),
        bytes,
        created_at_ms: now_ms(),
    };
    let row = store
        .put_artifact(&new, MAX_COUNT)
        .map_err(|e| format!("cannot store the artifact: {e}"))?
        .ok_or_else(|| format!("a conversation keeps at most {MAX_COUNT} artifacts: replace one by its name"))?;
    if let Err(e) = write_copy(data_dir, conversation, name, bytes) {
        tracing::warn!("artifact {name} of conversation {conversation} is stored; its local copy is not: {e}");
    }
    Ok(info_of(row))
}

/// This kernel's copy, replaced whole.
fn write_copy(data_dir: &Path, conversation: i64, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let dir = dir(data_dir, conversation);
    private_dir(&data_dir.join("artifacts"))?;
    private_dir(&dir)?;
    // tempfile makes it 0600 with O_EXCL, so nothing planted is written through.
    let mut file = tempfile::NamedTempFile::new_in(&dir)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(dir.join(name)).map_err(|e| e.error)?;
    Ok(())
}

/// The artifacts of `owner`'s conversations (or of one), newest first.
pub(crate) fn list(store: &dyn Store, owner: &str, conversation: Option<i64>) -> Result<Vec<ArtifactInfo>, StoreError> {
    Ok(store.artifacts(owner, conversation)?.into_iter().map(info_of).collect())
}

/// One artifact with its bytes; `None` when there is none of that name.
pub(crate) fn read(
    store: &dyn Store,
    conversation: i64,
    name: &str,
) -> Result<Option<(ArtifactInfo, Vec<u8>)>, StoreError> {
    if sanitize(name).as_deref() != Some(name) {
        return Ok(None);
    }
    Ok(store.artifact(conversation, name)?.map(|(row, bytes)| (info_of(row), bytes)))
}

/// Removes this kernel's copies of a conversation's artifacts (the store's go with the
/// conversation).
pub(crate) fn remove_all(data_dir: &Path, conversation: i64) {
    let dir = dir(data_dir, conversation);
    if let Err(e) = std::fs::remove_dir_all(&dir)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("could not remove {}: {e}", dir.display());
    }
}

/// Marks a data dir whose artifact files are in the store.
const IMPORTED: &str = ".in-store";

/// Puts the artifact files an older kernel kept only in the data dir into the store, once
/// (a marker file says it was done): each of a stored conversation, with a safe name, within
/// the bounds and not yet stored, keeping its time. Its files stay as this kernel's copies.
/// How many it stored.
pub(crate) fn import_files(store: &dyn Store, data_dir: &Path) -> Result<usize, StoreError> {
    let root = data_dir.join("artifacts");
    if root.join(IMPORTED).exists() {
        return Ok(0);
    }
    let Ok(conversations) = std::fs::read_dir(&root) else { return Ok(0) };
    let mut stored = 0;
    for id in conversations.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i64>().ok()) {
        let (dir, Some(_)) = (dir(data_dir, id), store.conversation(id)?) else { continue };
        let Ok(files) = std::fs::read_dir(&dir) else { continue };
        for name in files.filter_map(|e| e.ok()?.file_name().into_string().ok()) {
            let path = dir.join(&name);
            let meta = std::fs::symlink_metadata(&path).ok().filter(|m| m.is_file() && m.len() <= MAX_BYTES as u64);
            let (Some(meta), true) = (meta, sanitize(&name).as_deref() == Some(name.as_str())) else { continue };
            if store.artifact(id, &name)?.is_some() {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else { continue };
            let created_at_ms = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as i64);
            let new = NewArtifact {
                conversation_id: id,
                name: &name,
                media_type: media_type(&name),
                bytes: &bytes,
                created_at_ms,
            };
            stored += usize::from(store.put_artifact(&new, MAX_COUNT)?.is_some());
        }
    }
    if let Err(e) = std::fs::write(root.join(IMPORTED), b"") {
        tracing::warn!("could not mark {} imported: {e}", root.display());
    }
    Ok(stored)
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
            let (store, data_dir, id) = (kernel.store.clone(), kernel.config.data_dir.clone(), conv.id);
            let written = tokio::task::spawn_blocking(move || write(&*store, &data_dir, id, &name, &bytes)).await;
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

    fn store_with(conversations: usize) -> (superpi_store::SqliteStore, Vec<i64>) {
        let store = superpi_store::SqliteStore::open_in_memory().unwrap();
        let new = superpi_store::NewConversation { owner: "me".into(), ..Default::default() };
        let ids = (0..conversations).map(|_| store.create_conversation(&new).unwrap().id).collect();
        (store, ids)
    }

    #[test]
    fn a_write_is_stored_copied_privately_bounded_and_replaces_by_name() {
        let data = tempfile::tempdir().unwrap();
        let (store, ids) = store_with(1);
        let id = ids[0];
        let first = write(&store, data.path(), id, "a.txt", b"one").unwrap();
        assert_eq!((first.bytes, first.media_type.as_str()), (3, "text/plain"));
        write(&store, data.path(), id, "a.txt", b"second").unwrap();
        let (info, bytes) = read(&store, id, "a.txt").unwrap().unwrap();
        assert_eq!((info.bytes, bytes.as_slice()), (6, b"second".as_slice()));
        let copy = dir(data.path(), id).join("a.txt");
        assert_eq!(std::fs::read(&copy).unwrap(), b"second", "this kernel's copy");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&copy), 0o600);
        assert_eq!(mode(&dir(data.path(), id)), 0o700);
        assert_eq!(mode(&data.path().join("artifacts")), 0o700);
        assert!(write(&store, data.path(), id, "big.bin", &vec![0; MAX_BYTES + 1]).unwrap_err().contains("at most"));
        assert!(read(&store, id, "../1/a.txt").unwrap().is_none());
        // Served from the store without the copy (another kernel's data dir).
        std::fs::remove_file(&copy).unwrap();
        assert_eq!(read(&store, id, "a.txt").unwrap().unwrap().1, b"second");
        for n in 1..MAX_COUNT {
            write(&store, data.path(), id, &format!("f{n}.txt"), b"x").unwrap();
        }
        assert!(write(&store, data.path(), id, "one-more.txt", b"x").unwrap_err().contains("at most 200"));
        assert_eq!(list(&store, "me", Some(id)).unwrap().len(), MAX_COUNT);
        remove_all(data.path(), id);
        assert!(!dir(data.path(), id).exists());
    }

    #[test]
    fn an_older_kernels_files_are_put_in_the_store_once() {
        let data = tempfile::tempdir().unwrap();
        let (store, ids) = store_with(2);
        let old = dir(data.path(), ids[0]);
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("report.md"), "# old").unwrap();
        std::fs::write(old.join(".hidden"), "not an artifact name").unwrap();
        std::fs::create_dir_all(dir(data.path(), 9999)).unwrap();
        std::fs::write(dir(data.path(), 9999).join("gone.txt"), "of no stored conversation").unwrap();
        assert_eq!(import_files(&store, data.path()).unwrap(), 1);
        let listed = list(&store, "me", None).unwrap();
        assert_eq!(
            listed.iter().map(|a| (a.conversation_id, a.name.as_str(), a.media_type.as_str())).collect::<Vec<_>>(),
            [(ids[0], "report.md", "text/markdown")]
        );
        assert!(listed[0].created_at_ms > 0, "the file's time");
        assert_eq!(read(&store, ids[0], "report.md").unwrap().unwrap().1, b"# old");
        // Once: a file put there later by hand is not imported.
        std::fs::write(old.join("later.md"), "later").unwrap();
        assert_eq!(import_files(&store, data.path()).unwrap(), 0);
    }
}
