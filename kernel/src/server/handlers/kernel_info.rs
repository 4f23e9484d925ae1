//! What the kernel offers and how it is: tools, status, and schedules added by request.

use std::sync::Arc;

use super::sessions::open;
use super::{Reply, found, internal, not_found, to_value};

use superpi_proto::ErrorObject;
use superpi_proto::message::codes;
use superpi_proto::method::{ConversationInfo, OpenParams, ToolListResult};

use crate::kernel::Kernel;
use crate::server::peer::Peer;

/// `schedule.add`: its runs are turns of the caller's conversation named, or of a new one (of
/// the harness named, default the librarian), at most in the caller's ceiling.
pub(super) fn schedule_add(kernel: &Arc<Kernel>, peer: &Peer, p: superpi_proto::schedule::ScheduleAddParams) -> Reply {
    let conversation_id = match p.conversation_id {
        Some(id) => {
            found(kernel, peer, id)?;
            id
        }
        None => {
            takes_webhooks(
                kernel.catalog.harness(Some(p.harness.as_deref().unwrap_or(superpi_policy::LIBRARIAN)))?,
                &p,
            )?;
            let title = p.name.clone().filter(|n| !n.trim().is_empty()).unwrap_or_else(|| "Scheduled runs".into());
            let params = OpenParams {
                harness: Some(p.harness.clone().unwrap_or_else(|| superpi_policy::LIBRARIAN.to_string())),
                workspace: p.workspace.clone(),
                title: Some(title),
                ..OpenParams::default()
            };
            let opened: ConversationInfo = serde_json::from_value(open(kernel, peer, params)?)
                .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))?;
            opened.conversation_id
        }
    };
    let row =
        kernel.store.conversation(conversation_id).map_err(internal)?.ok_or_else(|| not_found(conversation_id))?;
    let harness = kernel.catalog.harness(Some(&row.harness))?;
    takes_webhooks(harness, &p)?;
    // The lower ceiling a hand-off kept with the conversation binds its scheduled runs too.
    let kept = row.settings.mode_ceiling.as_deref().and_then(|m| m.parse().ok());
    let ceiling = kernel.catalog.ceiling(harness, kept, peer.remote);
    crate::scheduler::add(kernel, &p, &peer.principal, conversation_id, ceiling)
}

/// A webhook trigger only for a harness that takes webhooks.
fn takes_webhooks(harness: &superpi_policy::Harness, p: &superpi_proto::schedule::ScheduleAddParams) -> Reply {
    if p.webhook && !harness.webhooks {
        let why = format!("harness {} does not take webhooks (`webhooks = true` in harnesses.toml)", harness.id);
        return Err(ErrorObject::new(codes::INVALID_PARAMS, why));
    }
    Ok(serde_json::Value::Null)
}

pub(super) fn tool_list(kernel: &Arc<Kernel>, harness: Option<&str>) -> Reply {
    let harness = kernel.catalog.harness(harness)?;
    // A turn's own tools (the plan) have no conversation to act on outside a turn.
    let tools = kernel.catalog.tools_for(harness).into_iter().filter(|t| !t.turn_only).collect();
    to_value(ToolListResult { tools })
}

pub(super) fn status(kernel: &Kernel, peer: &Peer) -> Reply {
    to_value(superpi_proto::method::KernelStatus {
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        uptime_ms: kernel.activity.uptime().as_millis() as u64,
        clients: kernel.activity.clients(),
        live_conversations: kernel.live.len() as u64,
        kernel_id: kernel.id.clone(),
        // Each live conversation is one whose lease this kernel holds.
        owned_conversations: kernel.live.leases().into_iter().map(|(id, _)| id).collect(),
        data_dir: kernel.config.data_dir.display().to_string(),
        socket: kernel.config.locations().socket_path().display().to_string(),
        // Workspaces and conversations are the local user's business.
        mcp_servers: if peer.remote { Vec::new() } else { kernel.mcp.status() },
    })
}
