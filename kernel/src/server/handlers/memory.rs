//! The memory methods: the caller's durable notes as the person manages them (`superpi
//! memory`): list them in every workspace, add one, pin or unpin one, remove one with its links.

use serde_json::json;
use superpi_proto::ErrorObject;
use superpi_proto::memory::{MemoryAddParams, MemoryListResult, NoteInfo};
use superpi_proto::message::codes;
use superpi_store::PinOutcome;

use super::{Reply, internal, to_value};
use crate::features::memory::{MAX_PINNED, pins_full};
use crate::kernel::Kernel;
use superpi_store::NewNote;

fn no_note(id: i64) -> ErrorObject {
    ErrorObject::new(codes::NOT_FOUND, format!("no note {id}"))
}

pub(super) fn list(kernel: &Kernel, owner: &str, limit: Option<u32>) -> Reply {
    let limit = limit.unwrap_or(100).clamp(1, 1000) as usize;
    let notes = kernel.store.owner_notes(owner, limit).map_err(internal)?;
    let notes = notes
        .into_iter()
        .map(|n| NoteInfo {
            id: n.id,
            title: n.title,
            body: n.body,
            tags: n.tags,
            scope: if n.workspace.is_some() { "workspace" } else { "global" }.into(),
            workspace: n.workspace,
            source: n.source,
            pinned: n.pinned,
            superseded: n.superseded,
            created_at_ms: n.created_at_ms,
        })
        .collect();
    to_value(MemoryListResult { notes })
}

/// A note the person writes: bounded as the model's, in a workspace (a directory, canonical as
/// a conversation's) or in every one, pinned if they say so (within the pins' bound).
pub(super) fn add(kernel: &Kernel, owner: &str, p: MemoryAddParams) -> Reply {
    let invalid = |why: String| ErrorObject::new(codes::INVALID_PARAMS, why);
    let (title, tags) = crate::tools::memory::bounded(&p.title, &p.body, &p.tags).map_err(invalid)?;
    let workspace = match &p.workspace {
        None => None,
        Some(dir) => match std::fs::canonicalize(dir) {
            Ok(path) if path.is_dir() => Some(path.to_string_lossy().into_owned()),
            _ => return Err(invalid(format!("`workspace` {dir:?} is not a directory"))),
        },
    };
    let source = p.source.as_deref().map(crate::features::memory::one_line).filter(|s| !s.is_empty());
    let note = NewNote {
        owner: owner.into(),
        workspace,
        title,
        body: p.body,
        tags,
        source,
        conversation_id: None,
        pinned: p.pinned,
    };
    match kernel.store.write_note_within(&note, MAX_PINNED).map_err(internal)? {
        Some(id) => Ok(json!({"id": id})),
        None => Err(invalid(pins_full())),
    }
}

pub(super) fn pin(kernel: &Kernel, owner: &str, id: i64, pinned: bool) -> Reply {
    match kernel.store.pin_note(owner, id, pinned, MAX_PINNED).map_err(internal)? {
        PinOutcome::Done => Ok(json!({"id": id, "pinned": pinned})),
        PinOutcome::NoNote => Err(no_note(id)),
        PinOutcome::Full => Err(ErrorObject::new(codes::INVALID_PARAMS, pins_full())),
    }
}

pub(super) fn remove(kernel: &Kernel, owner: &str, id: i64) -> Reply {
    match kernel.store.remove_note(owner, id).map_err(internal)? {
        true => Ok(json!({"removed": true})),
        false => Err(no_note(id)),
    }
}
