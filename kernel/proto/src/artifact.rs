//! The params and results of the artifact methods (`artifact.list`, `artifact.read`): files a
//! turn's `artifact` tool wrote for the person, kept per conversation outside the workspace.

use serde::{Deserialize, Serialize};

/// `artifact.list`: the caller's artifacts, of one conversation or of all of theirs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactListParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<i64>,
}

/// An artifact as `artifact.list` answers it and `artifact_created` announces it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactInfo {
    pub conversation_id: i64,
    /// Its name: one sanitised file name, unique in the conversation.
    pub name: String,
    pub bytes: u64,
    /// Its media type, from the name's extension (`application/octet-stream` when unknown).
    pub media_type: String,
    pub created_at_ms: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ArtifactListResult {
    pub artifacts: Vec<ArtifactInfo>,
}

/// `artifact.read`: one artifact's bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactReadParams {
    pub conversation_id: i64,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactReadResult {
    #[serde(flatten)]
    pub info: ArtifactInfo,
    /// The bytes, base64 (standard alphabet, padded).
    pub data: String,
}
