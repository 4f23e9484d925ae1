//! Checkpoints of a turn's workspace and `session.undo`. A turn records its workspace once,
//! before its first call that may write it (a tool with a file-write or exec effect, or an
//! agent backend's turn, which writes through its own tools), and again at its end when it took
//! the first; the turn's changes are the paths that differ between the two. Undoing the turn
//! puts those paths back (a file it created is removed) unless something changed one of them
//! since. The snapshots live in a repository of superpi's own (`snapshots.rs`), never the
//! workspace's: its branches, index and HEAD stay as they are. With `checkpoints.auto_commit`
//! a turn's changes are also committed on the workspace repository's current branch at its
//! end, only those paths, built with plumbing that runs no program the workspace's
//! configuration names.
//!
//! Refs, per conversation C and turn T: `conversations/C/turns/T/before`, `.../after`, and
//! `.../undone` (the workspace as it was when the turn was undone). A turn that changed nothing
//! keeps none.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use superpi_policy::{CheckpointSettings, Mode};
use superpi_proto::message::codes;
use superpi_proto::method::UndoResult;
use superpi_proto::tool::{Effect, ToolDef};
use superpi_proto::{ErrorObject, Event};

use crate::conversation::Conversation;
use crate::features::snapshots::{Change, Repo};
use crate::kernel::Kernel;
use crate::sync::lock;

/// How long an auto-commit's git commands may take.
const COMMIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Whether a call of `tool` may change the workspace, so the turn records it first.
pub(crate) fn writes(tool: &ToolDef) -> bool {
    tool.effects.iter().any(|e| matches!(e, Effect::FsWrite | Effect::Exec))
}

fn settings(kernel: &Kernel) -> Result<CheckpointSettings, String> {
    superpi_policy::Settings::load(&kernel.config.config_dir, None).map(|s| s.checkpoints).map_err(|e| e.to_string())
}

fn turn_ref(conv: i64, turn: i64, which: &str) -> String {
    format!("conversations/{conv}/turns/{turn}/{which}")
}

/// Before a call that may write: the turn's checkpoint, once per turn. A failure is a notice
/// and the call goes on (a machine without git loses undo, not its turns).
pub(crate) async fn before_write(kernel: &Arc<Kernel>, conv: &Arc<Conversation>, turn_id: i64) {
    let key = (conv.id, turn_id);
    if lock(&kernel.snapshots.taken).contains_key(&key) {
        return;
    }
    let Some(workspace) = conv.settings().workspace.map(PathBuf::from) else { return };
    match settings(kernel) {
        Ok(s) if s.enabled => {}
        _ => return,
    }
    let repo = kernel.snapshots.open(&workspace).await;
    // Two calls of one turn may both be first: the second finds the snapshot taken.
    if lock(&kernel.snapshots.taken).contains_key(&key) {
        return;
    }
    let taken = async {
        let tree = repo.snapshot().await?;
        repo.set_ref(&turn_ref(conv.id, turn_id, "before"), &tree).await
    };
    match taken.await {
        Ok(()) => {
            lock(&kernel.snapshots.taken).insert(key, workspace);
        }
        Err(err) => {
            let message =
                format!("no checkpoint of the workspace before this turn's writes (it cannot be undone): {err}");
            conv.emit(&**kernel, Event::notice(conv.id, Some(turn_id), "warning", message));
        }
    }
}

/// At a turn's end: the workspace recorded again when the turn took a checkpoint, and its
/// changes committed when `checkpoints.auto_commit` says so. `prompt` begins the commit's message.
pub(crate) async fn turn_ended(kernel: &Arc<Kernel>, conv: &Arc<Conversation>, turn_id: i64, prompt: &str) {
    let Some(workspace) = lock(&kernel.snapshots.taken).remove(&(conv.id, turn_id)) else { return };
    let repo = kernel.snapshots.open(&workspace).await;
    let recorded = async {
        let before = repo.get_ref(&turn_ref(conv.id, turn_id, "before")).await.ok_or("its first record is gone")?;
        let after = repo.snapshot().await?;
        let changes = repo.changes(&before, &after).await?;
        if changes.is_empty() {
            repo.delete_ref(&turn_ref(conv.id, turn_id, "before")).await?;
        } else {
            repo.set_ref(&turn_ref(conv.id, turn_id, "after"), &after).await?;
        }
        Ok::<_, String>(changes)
    };
    let changes = match recorded.await {
        Ok(changes) => changes,
        Err(err) => {
            let message = format!("the workspace after this turn was not recorded: {err}");
            conv.emit(&**kernel, Event::notice(conv.id, Some(turn_id), "warning", message));
            return;
        }
    };
    let settings = settings(kernel).unwrap_or_default();
    if settings.auto_commit && !changes.is_empty() {
        let (level, message) = match commit(&repo, &changes, &settings.commit_prefix, prompt).await {
            Ok(summary) => ("info", summary),
            Err(err) => ("warning", format!("this turn's changes were not committed: {err}")),
        };
        conv.emit(&**kernel, Event::notice(conv.id, Some(turn_id), level, message));
    }
}

/// Commits `changes` (only those paths) on the workspace repository's current branch, as the
/// turn's end recorded them in `repo`: with plumbing that runs no program the workspace's
/// configuration names ([`superpi_sandbox::commit_paths`]).
async fn commit(repo: &Repo, changes: &[Change], prefix: &str, prompt: &str) -> Result<String, String> {
    let title: String = prompt.lines().find(|l| !l.trim().is_empty()).unwrap_or("a turn").chars().take(60).collect();
    let message = format!("{prefix}{}", title.trim());
    let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
    let done = repo.commit(&paths, &message, COMMIT_TIMEOUT).await?;
    Ok(format!("this turn's changes ({} files) were committed as {} on {}", changes.len(), done.short, done.branch))
}

fn refused(message: impl Into<String>, data: Value) -> ErrorObject {
    let mut error = ErrorObject::new(codes::INVALID_PARAMS, message);
    error.data = Some(data);
    error
}

/// `session.undo`: puts back what turn `turn_id` (else the latest turn with changes not yet
/// undone) changed in the workspace. Refused while a turn runs, for a caller that may not edit
/// (its ceiling `plan`), and when a path the turn changed has changed since (a later turn's or a
/// person's edit, which undo would lose): the paths are named.
pub(crate) async fn undo(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    ceiling: Mode,
    turn_id: Option<i64>,
) -> Result<Value, ErrorObject> {
    if ceiling < Mode::AcceptEdits {
        return Err(ErrorObject::new(codes::FORBIDDEN, "undo writes the workspace, which plan mode does not allow"));
    }
    if let Some(running) = *lock(&conv.running) {
        return Err(refused(
            format!("turn {running} is running: undo once it has ended (or cancel it)"),
            json!({"reason": "running", "turn_id": running}),
        ));
    }
    let workspace = conv.settings().workspace.map(PathBuf::from).ok_or_else(|| {
        refused(format!("conversation {} has no workspace", conv.id), json!({"reason": "no_workspace"}))
    })?;
    let repo = kernel.snapshots.open(&workspace).await;
    let internal = |e: String| ErrorObject::new(codes::INTERNAL_ERROR, format!("undo failed: {e}"));
    let turn_id = match turn_id {
        Some(id) => id,
        None => latest(&repo, conv.id).await.map_err(internal)?.ok_or_else(|| {
            refused(
                "nothing to undo: no turn of this conversation changed the workspace since its last undo",
                json!({"reason": "nothing"}),
            )
        })?,
    };
    let Some(before) = repo.get_ref(&turn_ref(conv.id, turn_id, "before")).await else {
        return Err(refused(format!("turn {turn_id} has no checkpoint"), json!({"reason": "nothing"})));
    };
    if repo.get_ref(&turn_ref(conv.id, turn_id, "undone")).await.is_some() {
        return Err(refused(format!("turn {turn_id} is undone already"), json!({"reason": "undone"})));
    }
    let now = repo.snapshot().await.map_err(internal)?;
    // A turn that never recorded its end (the kernel stopped in it) changed what differs now.
    let after = repo.get_ref(&turn_ref(conv.id, turn_id, "after")).await.unwrap_or_else(|| now.clone());
    let changes = repo.changes(&before, &after).await.map_err(internal)?;
    let since = repo.changes(&after, &now).await.map_err(internal)?;
    let conflicts: Vec<&str> =
        since.iter().filter(|s| changes.iter().any(|c| c.path == s.path)).map(|s| s.path.as_str()).collect();
    if !conflicts.is_empty() {
        return Err(refused(
            format!(
                "turn {turn_id} is not undone: {} changed since it ended (undo the later turns first, or put \
                 them back by hand)",
                conflicts.join(", ")
            ),
            json!({"reason": "changed_since", "paths": conflicts}),
        ));
    }
    let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
    repo.restore(&before, &paths).await.map_err(internal)?;
    repo.set_ref(&turn_ref(conv.id, turn_id, "undone"), &now).await.map_err(internal)?;
    drop(repo);
    let (removed, restored): (Vec<&Change>, Vec<&Change>) = changes.iter().partition(|c| c.created);
    let names = |list: Vec<&Change>| list.into_iter().map(|c| c.path.clone()).collect();
    let done = UndoResult { turn_id, restored: names(restored), removed: names(removed) };
    conv.emit(&**kernel, Event::notice(conv.id, None, "info", done.to_string()));
    serde_json::to_value(done).map_err(|e| internal(e.to_string()))
}

/// The latest turn of conversation `conv` with a checkpoint and no undo.
async fn latest(repo: &Repo, conv: i64) -> Result<Option<i64>, String> {
    let prefix = format!("conversations/{conv}/turns/");
    let (mut checkpointed, mut undone) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
    for name in repo.refs(&prefix).await? {
        let Some((turn, which)) = name.strip_prefix(&prefix).and_then(|rest| rest.split_once('/')) else { continue };
        let Ok(turn) = turn.parse::<i64>() else { continue };
        match which {
            "before" => checkpointed.insert(turn),
            "undone" => undone.insert(turn),
            _ => false,
        };
    }
    Ok(checkpointed.difference(&undone).last().copied())
}
