//! The params and results of the memory methods (`memory.list`, `memory.add`, `memory.pin`,
//! `memory.remove`): the caller's durable notes, as the person manages them.

use serde::{Deserialize, Serialize};

/// `memory.list`: the caller's notes in every workspace, pinned first, then newest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryListParams {
    /// The most notes answered (default 100, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// A note as `memory.list` answers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoteInfo {
    pub id: i64,
    pub title: String,
    pub body: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// `global` (every workspace) or `workspace` (only `workspace`).
    pub scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub pinned: bool,
    pub superseded: bool,
    pub created_at_ms: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryListResult {
    pub notes: Vec<NoteInfo>,
}

/// `memory.add`: a note the person writes (as the model's `memory_write`, bounded alike).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryAddParams {
    pub title: String,
    pub body: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The workspace (a directory) it holds in; without it, every workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default)]
    pub pinned: bool,
}

/// `memory.pin`: pins (or, with `pinned: false`, unpins) one of the caller's notes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryPinParams {
    pub id: i64,
    #[serde(default = "yes")]
    pub pinned: bool,
}

fn yes() -> bool {
    true
}

/// `memory.remove`: removes one of the caller's notes and its links.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryRemoveParams {
    pub id: i64,
}
