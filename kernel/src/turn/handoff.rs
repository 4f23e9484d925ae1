//! Hand-off (seed 003's Handoff): the model gives the conversation to another harness with
//! its `handoff` tool, offered only where the harness names the harnesses it may hand to
//! (`handoff` in harnesses.toml, as `subagents` names the roles it may start). The turn's next
//! steps, and every later turn, run with the target's prompt, tools and model (its first model;
//! else the conversation keeps its own); the history stays whole.
//!
//! A hand-off never moves the conversation's files: one to a harness of another workspace
//! (`workspace` in harnesses.toml) is refused.
//!
//! A hand-off never widens what the conversation may do: the mode is lowered to the target's
//! ceiling and never raised, and the lower of the two harnesses' ceilings is stored with the
//! conversation (`mode_ceiling`), so neither `session.set_mode` nor a later turn lifts it. The
//! harness, mode, model and ceiling are written in one statement, so a restarted kernel reads
//! the conversation's current harness from the store. Recorded as a `handoff` event.
//!
//! A registry tool (`tools/handover.rs` runs it): hooks and the policy see its calls like any.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;
use superpi_policy::{Harness, Mode};
use superpi_proto::Event;
use superpi_proto::tool::{Effect, ToolDef, ToolKind, ToolUi};
use superpi_providers::ToolSpec;

use crate::catalog::HANDOFF_TOOL;
use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::sync::lock;

/// The tool's facts in the registry: it touches no file and no network (its effect is `read`,
/// as `subagent`'s: what the target may do is decided call by call under the lowered ceiling).
pub(crate) fn def() -> ToolDef {
    ToolDef {
        name: HANDOFF_TOOL.into(),
        description: "Hand this conversation to another harness, which takes over from the next step with \
                      its own instructions and tools and sees the whole history. Call it alone, with a \
                      summary of where things stand and what is left to do."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "harness": {"type": "string", "description": "The harness to hand to"},
                "summary": {"type": "string", "description": "Where things stand and what is left"}
            },
            "required": ["harness"],
            "additionalProperties": false
        }),
        effects: vec![Effect::Read],
        ui: ToolUi { kind: ToolKind::Other, title: Some("Hand the conversation over".into()), ..ToolUi::default() },
        turn_only: true,
        ..ToolDef::default()
    }
}

/// The tool as a step of `harness` offers it: its targets named in the schema.
pub(crate) fn tool(harness: &Harness) -> Option<ToolSpec> {
    if harness.handoff.is_empty() {
        return None;
    }
    let ToolDef { name, description, mut input_schema, .. } = def();
    input_schema["properties"]["harness"]["enum"] = json!(harness.handoff);
    Some(ToolSpec { name, description, input_schema, deferred: false })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    harness: String,
    #[serde(default)]
    summary: Option<String>,
}

/// A `handoff` call of a turn running `from`: the conversation handed over (a message for the
/// model saying so), or why not. The turn's new ceiling is then the stored `mode_ceiling`.
pub(crate) fn hand_off(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    from: &Harness,
    arguments: &serde_json::Value,
) -> Result<String, String> {
    let args: Args = serde_json::from_value(arguments.clone()).map_err(|e| format!("bad arguments: {e}"))?;
    let target = kernel.catalog.harness(Some(&args.harness)).map_err(|e| e.message)?;
    if !from.handoff.contains(&target.id) {
        let allowed = from.handoff.join(", ");
        return Err(format!("the harness `{}` may hand the conversation only to: {allowed}", from.id));
    }
    // The conversation keeps its directory: its files and history name it.
    if from.workspace != target.workspace {
        return Err(format!(
            "`{}` has workspace `{}` and `{}` has `{}`: a hand-off keeps the conversation's workspace",
            from.id, from.workspace, target.id, target.workspace
        ));
    }
    let settings = conv.settings();
    let model = target.cost.models.first().cloned().unwrap_or(settings.model);
    // Nothing changes when the target's model leads nowhere.
    kernel.catalog.provider(&model).map_err(|e| e.message)?;
    let ceiling = settings.mode_ceiling.unwrap_or(from.max_mode).min(from.max_mode).min(target.max_mode);
    let before = settings.mode.parse::<Mode>().unwrap_or(Mode::Plan);
    let mode = before.min(ceiling);
    let store_err = |e: superpi_store::StoreError| format!("could not store the hand-off: {e}");
    let mut stored = kernel.store.conversation(conv.id).map_err(store_err)?.map(|row| row.settings).unwrap_or_default();
    stored.mode_ceiling = Some(ceiling.as_str().to_string());
    {
        // Stored under the settings' lock, as `session.set_mode` does.
        let mut held = lock(&conv.settings);
        kernel.store.set_harness(conv.id, &target.id, (mode.as_str(), &model), &stored).map_err(store_err)?;
        held.harness = target.id.clone();
        held.mode = mode.as_str().to_string();
        held.model = model.clone();
        held.mode_ceiling = Some(ceiling);
    }
    if let Ok(policy) = lock(&conv.policy).as_mut() {
        policy.set_mode(mode);
    }
    // The policy is made again for the target harness (its loadout decides the calls).
    super::refresh_policy(kernel, conv, turn_id)?;
    conv.emit(kernel, Event::handoff(conv.id, Some(turn_id), &from.id, &target.id, args.summary));
    if mode != before {
        conv.emit(kernel, Event::mode_changed(conv.id, mode.as_str(), Some(ceiling.as_str().to_string())));
    }
    let said = format!(
        "The conversation is now with `{}` (model {model}, mode {}): its instructions and tools apply from the next step.",
        target.id,
        mode.as_str()
    );
    Ok(said)
}
