//! What a turn offers the model, step by step: its harness's prompt and tools, the model of
//! the step, and the turn's own tools (`respond` for an output schema, `escalate` in a
//! cascade, `handoff` where the harness names targets). Made at the turn's start and again
//! after a hand-off (`handoff.rs`), when another harness takes over.
//!
//! A cascade (a harness's `model = ["cheap", "strong"]`) starts each turn at the
//! conversation's model; the step after a failure (a provider error after its retries, an
//! answer the output schema refused after its retry) or the model's `escalate` call runs on
//! the next model, for the rest of the turn, with a notice saying why. The next turn starts
//! again at the first model. `escalate` and `handoff` are registry tools (`tools/handover.rs`
//! runs them); each step offers the ones that apply, and the loop moves the turn on once one
//! ran.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::json;
use superpi_policy::Harness;
use superpi_proto::Event;
use superpi_proto::tool::{Effect, ToolDef, ToolKind, ToolUi};
use superpi_providers::{SharedProvider, ToolSpec};
use tokio_util::sync::CancellationToken;

use crate::catalog::{ESCALATE_TOOL, HANDOFF_TOOL};
use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::sync::lock;
use crate::turn::compaction::tool_specs;
use crate::turn::structured::Structured;
use superpi_mcp_client::Attached;

/// `escalate`'s facts in the registry: the tool a cheaper model of a cascade hands the rest of
/// the turn on with. It touches no file and no network (its effect is `read`).
pub(crate) fn escalate_def() -> ToolDef {
    ToolDef {
        name: ESCALATE_TOOL.into(),
        description: "Hand the rest of this turn to a stronger model, which sees everything so far: call it \
                      alone when the task is beyond you or you keep failing at it."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {"reason": {"type": "string", "description": "Why, in a sentence"}},
            "additionalProperties": false
        }),
        effects: vec![Effect::Read],
        ui: ToolUi { kind: ToolKind::Other, title: Some("Escalate to a stronger model".into()), ..ToolUi::default() },
        turn_only: true,
        ..ToolDef::default()
    }
}

/// The harness, model and tools of a turn's next steps.
pub(crate) struct Loadout<'k> {
    pub harness: &'k Harness,
    pub model: String,
    pub provider: SharedProvider,
    /// The provider has a structured-output mode (else an output schema is the `respond` tool).
    pub native: bool,
    /// The frontend's own tools offered in this turn.
    pub client: BTreeSet<String>,
    pub system: Option<String>,
    /// The harness's tools and the MCP tools found so far, as the model sees them.
    pub specs: Vec<ToolSpec>,
    /// The deferred MCP tools already offered.
    pub loaded: BTreeSet<String>,
}

impl<'k> Loadout<'k> {
    /// The conversation's harness and model as they are now, its tools (its MCP servers
    /// started on the first turn that needs them) and its system prompt.
    pub(crate) async fn new(
        kernel: &'k Arc<Kernel>,
        conv: &Arc<Conversation>,
        turn_id: i64,
        cancel: &CancellationToken,
    ) -> Result<Loadout<'k>, String> {
        let settings = conv.settings();
        let catalog = &kernel.catalog;
        let harness = catalog.harness(Some(&settings.harness)).map_err(|e| e.message)?;
        let provider = catalog.provider(&settings.model).map_err(|e| e.message)?;
        let mut tools = catalog.tools_for(harness);
        // External MCP servers start on the first turn that needs them; one that does not start
        // is a notice, and the turn goes on without its tools.
        let attached = match harness.offers_live_tools() {
            true => super::attach_mcp(kernel, conv, turn_id, harness, cancel).await,
            false => Attached::default(),
        };
        // Past a threshold, deferred MCP tools are found with the vendor's built-in tool search
        // where it serves the model, else with superpi's `tool_search` (superpi-mcp-client).
        // The choice follows the turn's first model; a cascade's next model without a built-in
        // search gets the deferred tools as ordinary ones (`escalate`).
        let loaded = lock(&conv.mcp_loaded).clone();
        let mut deferred = Vec::new();
        match provider.tool_search() {
            true => {
                let (eager, later) = attached.offered_to_builtin_search();
                tools.extend(eager);
                deferred = later;
            }
            false => tools.extend(attached.offered(&loaded)),
        }
        // A subagent is offered at most its parent's tools (its policy refuses the rest too).
        if let Ok(policy) = &*lock(&conv.policy) {
            tools.retain(|t| policy.within_limit(&t.name));
            deferred.retain(|t| policy.within_limit(&t.name));
        }
        // A client tool may not take a hand-over tool's name (the harness offers it): refused
        // with a notice; then each step offers the hand-over tools that apply (`offered`).
        let client = super::client_tools::offer(kernel, conv, turn_id, &mut tools);
        tools.retain(|t| ![HANDOFF_TOOL, ESCALATE_TOOL].contains(&t.name.as_str()));
        *lock(&conv.turn_model) = Some(settings.model.clone());
        *lock(&conv.mcp_attached) = attached;
        let mut specs = tool_specs(&tools);
        specs.extend(tool_specs(&deferred).into_iter().map(|spec| ToolSpec { deferred: true, ..spec }));

        // The harness's prompt, then the repository's AGENTS.md files and the index of the
        // owner's notes (a harness with memory), read at each turn.
        let system =
            crate::features::memory::system_prompt(&*kernel.store, harness, &conv.owner, settings.workspace.as_deref());
        let offers_skills = tools.iter().any(|t| t.name == crate::features::skills::SKILL_TOOL);
        let skills = crate::features::skills::Reader {
            sandbox: &kernel.sandbox,
            config_dir: &catalog.config_dir,
            workspace: settings.workspace.as_deref().map(std::path::Path::new),
            protected: lock(&conv.policy).as_ref().map(|p| p.protected_paths()).unwrap_or_default(),
        };
        let system = crate::features::skills::system_prompt(system, offers_skills, &skills, cancel).await;
        // A frontend's instructions (`session.open` `system_prompt`, an editor's), last.
        let system = match (system, settings.system_prompt.as_deref()) {
            (Some(system), Some(extra)) => Some(format!("{system}\n\n{extra}")),
            (system, extra) => system.or_else(|| extra.map(str::to_string)),
        };
        // What the session_start hooks added (each fenced, after a blank line), after that.
        let started = crate::turn::hooks::session_start(kernel, conv, turn_id, cancel).await;
        let system = match (system, started.trim_start()) {
            (system, "") => system,
            (Some(system), added) => Some(format!("{system}\n\n{added}")),
            (None, added) => Some(added.to_string()),
        };
        Ok(Loadout {
            harness,
            native: provider.structured_output(),
            model: settings.model,
            provider,
            client,
            system,
            specs,
            loaded,
        })
    }

    /// The model a failure or an `escalate` call would move the turn to.
    pub(crate) fn escalation(&self) -> Option<&str> {
        self.harness.cost.escalation(&self.model)
    }

    /// Moves the rest of the turn to the cascade's next model, saying why in a notice; false
    /// when there is none (or it does not route: then the notice says so).
    pub(crate) fn escalate(&mut self, kernel: &Kernel, conv: &Conversation, turn_id: i64, why: &str) -> bool {
        let Some(next) = self.escalation().map(str::to_string) else { return false };
        let (level, said) = match kernel.catalog.provider(&next) {
            Ok(provider) => {
                self.native = provider.structured_output();
                // The list was made for the first model's built-in search: a model without one
                // gets the deferred tools as ordinary ones (its API would refuse the search tool).
                if !provider.tool_search() {
                    self.specs.iter_mut().for_each(|spec| spec.deferred = false);
                }
                self.provider = provider;
                let said = format!("escalated from {} to {next}: {why}", self.model);
                *lock(&conv.turn_model) = Some(next.clone());
                self.model = next;
                ("info", said)
            }
            Err(err) => ("warning", format!("could not escalate to {next}: {}", err.message)),
        };
        conv.emit(kernel, Event::notice(conv.id, Some(turn_id), level, said));
        level == "info"
    }

    /// The tools of the next request: the harness's, then the turn's own (within a subagent's
    /// limit, as the policy decides them).
    pub(crate) fn offered(&self, conv: &Conversation, structured: Option<&Structured>) -> Vec<ToolSpec> {
        let mut specs = self.specs.clone();
        specs.extend(structured.filter(|_| !self.native).map(Structured::respond_tool));
        let mut handover = Vec::new();
        if let Some(next) = self.escalation() {
            let ToolDef { name, description, input_schema, .. } = escalate_def();
            let description = description.replace("a stronger model", &format!("a stronger model ({next})"));
            handover.push(ToolSpec { name, description, input_schema, deferred: false });
        }
        handover.extend(super::handoff::tool(self.harness));
        if let Ok(policy) = &*lock(&conv.policy) {
            handover.retain(|t| policy.within_limit(&t.name));
        }
        specs.extend(handover);
        specs
    }
}
