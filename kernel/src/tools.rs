//! What a kernel offers and how it decides: harnesses, modes, models, tools and the policy
//! gate in front of the sandbox. Loaded once at start; a bad file is an error that names it.

use std::sync::Arc;

use superpi_policy::{Caller, Harness, Harnesses, Mode, effective_mode};
use superpi_proto::ErrorObject;
use superpi_proto::message::codes;
use superpi_proto::method::HarnessInfo;
use superpi_proto::tool::ToolDef;
use superpi_providers::{ProvidersConfig, SharedProvider};
use superpi_sandbox::SandboxConfig;

use crate::kernel::KernelConfig;

pub(crate) struct Catalog {
    pub harnesses: Harnesses,
    pub settings: superpi_policy::Settings,
    pub providers: ProvidersConfig,
    pub tools: Vec<ToolDef>,
}

/// What the policy says about one tool call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Gate {
    Allow {
        network: bool,
    },
    /// A person may lift the block; without an answer it is refused with `reason`.
    Ask {
        reason: String,
        risk: Option<String>,
        key: String,
    },
    Deny {
        reason: String,
    },
}

impl Catalog {
    pub fn load(config: &KernelConfig) -> Result<Catalog, String> {
        let harnesses = Harnesses::load(&config.config_dir).map_err(|e| e.to_string())?;
        let settings = superpi_policy::Settings::default();
        let providers = ProvidersConfig::from_env();
        Ok(Catalog { harnesses, settings, providers, tools: Vec::new() })
    }

    pub fn apply_sandbox_settings(&self, sandbox: &mut SandboxConfig) {
        let _ = sandbox;
    }

    pub fn with_tools(mut self, tools: Vec<ToolDef>) -> Self {
        self.tools = tools;
        self
    }

    pub fn harness(&self, id: Option<&str>) -> Result<&Harness, ErrorObject> {
        self.harnesses.resolve(id).map_err(|e| ErrorObject::new(codes::INVALID_PARAMS, e.to_string()))
    }

    pub fn harness_infos(&self) -> Vec<HarnessInfo> {
        self.harnesses.infos()
    }

    /// The tools a harness offers, as the model and MCP clients see them.
    pub fn tools_for(&self, harness: &Harness) -> Vec<ToolDef> {
        harness.loadout(&self.tools)
    }

    pub fn tool(&self, name: &str) -> Option<&ToolDef> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The mode a conversation gets: the request lowered to the harness ceiling and, for
    /// remote callers, to the remote ceiling.
    pub fn mode_for(&self, requested: Option<&str>, harness: &Harness, remote: bool) -> Result<Mode, ErrorObject> {
        let requested = requested
            .map(|m| m.parse::<Mode>().map_err(|e| ErrorObject::new(codes::INVALID_PARAMS, e.to_string())))
            .transpose()?;
        let caller = if remote { Caller::Remote } else { Caller::Local };
        Ok(effective_mode(requested, harness, caller, &self.settings))
    }

    pub fn max_mode(&self, harness: &Harness, remote: bool) -> Mode {
        let caller = if remote { Caller::Remote } else { Caller::Local };
        effective_mode(Some(Mode::Auto), harness, caller, &self.settings)
    }

    /// The model a new conversation gets when none is asked for, and whether that is the
    /// mock standing in for an unconfigured provider.
    pub fn default_model(&self) -> (String, bool) {
        superpi_providers::default_model(&self.providers)
    }

    pub fn provider(&self, model: &str) -> Result<SharedProvider, ErrorObject> {
        superpi_providers::resolve(model, &self.providers).map_err(|e| ErrorObject::new(codes::PROVIDER, e.to_string()))
    }

    /// How long a permission question waits for a person.
    pub fn question_timeout(&self) -> std::time::Duration {
        crate::turn::DEFAULT_QUESTION_TIMEOUT
    }

    /// The policy's decision for one call.
    pub fn gate(&self, facts: &CallFacts<'_>) -> Gate {
        let _ = facts;
        Gate::Allow { network: false }
    }
}

/// What the gate looks at.
pub(crate) struct CallFacts<'a> {
    pub tool: &'a ToolDef,
    pub arguments: &'a serde_json::Value,
    pub mode: Mode,
    pub workspace: Option<&'a std::path::Path>,
    pub overrides: &'a std::collections::HashMap<String, bool>,
}

pub(crate) type SharedCatalog = Arc<Catalog>;
