//! The artifact methods: files turns wrote for the person (`tools/artifact.rs`), read from
//! the store (so from any kernel on it) by their conversation's principal only; another's
//! conversation answers like a missing one.

use superpi_proto::ErrorObject;
use superpi_proto::artifact::{ArtifactListResult, ArtifactReadResult};
use superpi_proto::message::codes;

use super::{Reply, found, internal, not_found, to_value};
use crate::kernel::Kernel;
use crate::server::peer::Peer;
use crate::tools::artifact;

/// Whether the caller owns the conversation (stored, wherever it runs).
fn owns(kernel: &Kernel, peer: &Peer, id: i64) -> Result<bool, ErrorObject> {
    Ok(kernel.store.conversation(id).map_err(internal)?.is_some_and(|row| row.owner == peer.principal))
}

pub(super) fn list(kernel: &std::sync::Arc<Kernel>, peer: &Peer, conversation: Option<i64>) -> Reply {
    if let Some(id) = conversation {
        found(kernel, peer, id)?;
    }
    let artifacts = artifact::list(&*kernel.store, &peer.principal, conversation).map_err(internal)?;
    to_value(ArtifactListResult { artifacts })
}

pub(super) fn read(kernel: &Kernel, peer: &Peer, id: i64, name: &str) -> Reply {
    if !owns(kernel, peer, id)? {
        return Err(not_found(id));
    }
    let (info, bytes) = artifact::read(&*kernel.store, id, name)
        .map_err(internal)?
        .ok_or_else(|| ErrorObject::new(codes::NOT_FOUND, format!("conversation {id} has no artifact `{name}`")))?;
    to_value(ArtifactReadResult { info, data: superpi_providers::images::encode(&bytes) })
}
