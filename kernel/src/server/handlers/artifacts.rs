//! The artifact methods: files turns wrote for the person (`tools/artifact.rs`), listed and
//! read by their conversation's principal only; another's conversation answers like a
//! missing one.

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
    let data_dir = &kernel.config.data_dir;
    let ids = match conversation {
        Some(id) => {
            found(kernel, peer, id)?;
            vec![id]
        }
        None => {
            let mut mine = Vec::new();
            for id in artifact::conversations(data_dir) {
                if owns(kernel, peer, id)? {
                    mine.push(id);
                }
            }
            mine
        }
    };
    to_value(ArtifactListResult { artifacts: artifact::list(data_dir, ids) })
}

pub(super) fn read(kernel: &Kernel, peer: &Peer, id: i64, name: &str) -> Reply {
    if !owns(kernel, peer, id)? {
        return Err(not_found(id));
    }
    let (info, bytes) = artifact::read(&kernel.config.data_dir, id, name)
        .ok_or_else(|| ErrorObject::new(codes::NOT_FOUND, format!("conversation {id} has no artifact `{name}`")))?;
    to_value(ArtifactReadResult { info, data: superpi_providers::images::encode(&bytes) })
}
