//! A conversation's settings (mode, model, effort) and the commands it can call.

use std::sync::Arc;

use super::{Reply, found, internal, not_found, to_value};

use serde_json::json;
use superpi_proto::method::CommandListResult;
use superpi_proto::{Effort, ErrorObject, Event};

use crate::kernel::Kernel;
use crate::live::Found;
use crate::server::peer::Peer;
use crate::sync::lock;
use superpi_store::Notice;

/// `session.set_mode`. Through a kernel that does not run the conversation, the mode is
/// stored and that kernel told, which applies it and publishes `mode_changed`.
pub(super) fn set_mode(kernel: &Arc<Kernel>, peer: &Peer, id: i64, mode: &str) -> Reply {
    let found = found(kernel, peer, id)?;
    let (harness_id, ceiling) = match &found {
        Found::Here(conv) => (conv.settings().harness, conv.settings().mode_ceiling),
        Found::Elsewhere { row, .. } => {
            (row.harness.clone(), row.settings.mode_ceiling.as_deref().and_then(|m| m.parse().ok()))
        }
    };
    let harness = kernel.catalog.harness(Some(&harness_id))?;
    // Never above the ceiling a hand-off kept.
    let lower = |mode: superpi_policy::Mode| ceiling.map_or(mode, |ceiling| mode.min(ceiling));
    let effective = lower(kernel.catalog.mode_for(Some(mode), harness, peer.remote)?);
    let max_mode = kernel.catalog.ceiling(harness, ceiling, peer.remote);
    let answer = json!({"mode": effective.as_str(), "max_mode": max_mode.as_str()});
    let Found::Here(conv) = found else {
        kernel.store.set_mode(id, effective.as_str()).map_err(internal)?;
        settings_changed(kernel, peer, id)?;
        return Ok(answer);
    };
    {
        // Stored under the settings' lock, as a change told by another kernel is read.
        let mut settings = lock(&conv.settings);
        kernel.store.set_mode(id, effective.as_str()).map_err(internal)?;
        settings.mode = effective.as_str().to_string();
    }
    if let Ok(policy) = lock(&conv.policy).as_mut() {
        policy.set_mode(effective);
    }
    conv.emit(kernel, Event::mode_changed(id, effective.as_str(), Some(max_mode.as_str().to_string())));
    Ok(answer)
}

/// `command.list`: the user-defined commands, with those of the conversation's workspace.
pub(super) fn command_list(kernel: &Arc<Kernel>, peer: &Peer, id: Option<i64>) -> Reply {
    let workspace = match id.map(|id| found(kernel, peer, id)).transpose()? {
        Some(Found::Here(conv)) => conv.settings().workspace,
        Some(Found::Elsewhere { row, .. }) => row.workspace,
        None => None,
    };
    let commands =
        crate::features::commands::load(&kernel.catalog.config_dir, workspace.as_deref().map(std::path::Path::new));
    to_value(CommandListResult { commands: commands.into_values().map(|c| c.info).collect() })
}

/// `session.set_model`; through a kernel that does not run the conversation, as `set_mode`.
pub(super) fn set_model(kernel: &Arc<Kernel>, peer: &Peer, id: i64, model: &str) -> Reply {
    let found = found(kernel, peer, id)?;
    kernel.catalog.provider(model)?;
    match found {
        Found::Here(conv) => {
            let mut settings = lock(&conv.settings);
            kernel.store.set_model(id, model).map_err(internal)?;
            settings.model = model.to_string();
        }
        Found::Elsewhere { .. } => {
            kernel.store.set_model(id, model).map_err(internal)?;
            settings_changed(kernel, peer, id)?;
        }
    }
    Ok(json!({"model": model}))
}

/// Tells the kernel that runs the conversation that its stored settings changed (it applies
/// them, and says a mode change with the ceiling of the frontend that made it).
pub(super) fn settings_changed(kernel: &Kernel, peer: &Peer, id: i64) -> Result<(), ErrorObject> {
    kernel.store.notify(Notice::Settings { conversation_id: id, remote: peer.remote }).map_err(internal)
}

/// `session.set_effort`: the thinking effort of the next requests, one the current model takes
/// (`None`: the provider settings' default). A later model that lacks it is sent its nearest.
/// Through a kernel that does not run the conversation, as `set_mode`.
pub(super) fn set_effort(kernel: &Arc<Kernel>, peer: &Peer, id: i64, effort: Option<Effort>) -> Reply {
    let found = found(kernel, peer, id)?;
    let (model, harness) = match &found {
        Found::Here(conv) => {
            let settings = conv.settings();
            (settings.model, settings.harness)
        }
        Found::Elsewhere { row, .. } => (row.model.clone(), row.harness.clone()),
    };
    if let Some(effort) = effort {
        kernel.catalog.check_effort(kernel.catalog.harness(Some(&harness)).ok(), &model, effort)?;
    }
    let mut settings = kernel.store.conversation(id).map_err(internal)?.ok_or_else(|| not_found(id))?.settings;
    settings.effort = effort;
    match found {
        Found::Here(conv) => {
            let mut held = lock(&conv.settings);
            kernel.store.set_settings(id, &settings).map_err(internal)?;
            held.effort = effort;
        }
        Found::Elsewhere { .. } => {
            kernel.store.set_settings(id, &settings).map_err(internal)?;
            settings_changed(kernel, peer, id)?;
        }
    }
    Ok(json!({"effort": effort}))
}
