//! The model router: a model name to a provider, by name rules and the config's models list.
//! Never a silent fallback: an unknown name or missing credentials is an error naming the gap.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{ModelEntry, OpenaiWire, ProviderKind, ProvidersConfig};
use crate::http::HttpProvider;
use crate::mock::MockProvider;
pub use crate::route::{Auth, Route};
use crate::vendor::{WIRE_APIS, wire_api};
use crate::{ProviderError, SharedProvider};

/// A model `superpi models` lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub name: String,
    pub provider: String,
    /// Whether it is the default model.
    pub default: bool,
}

/// The wire API a name's prefix leads to, and the id to send upstream.
pub(crate) fn prefixed_kind(model: &str) -> Option<(ProviderKind, &str)> {
    for api in WIRE_APIS {
        for (prefix, strip) in api.name_prefixes {
            if let Some(rest) = model.strip_prefix(prefix) {
                return Some((api.kind, if *strip { rest } else { model }));
            }
        }
    }
    None
}

/// The vendor and upstream id of a model name as users type it, and its entry if it has one,
/// without credentials (a name no rule routes is taken as OpenAI's).
pub(crate) fn model_parts<'a>(
    model: &str,
    config: &'a ProvidersConfig,
) -> (ProviderKind, String, Option<&'a ModelEntry>) {
    let name = model.trim();
    if let Some(entry) = config.models.iter().find(|entry| entry.name == name) {
        return (entry.provider, entry.model.clone().unwrap_or_else(|| entry.name.clone()), Some(entry));
    }
    if name == "mock" {
        return (ProviderKind::Mock, name.to_string(), None);
    }
    match prefixed_kind(name) {
        Some((kind, upstream)) => (kind, upstream.to_string(), None),
        None => (ProviderKind::Openai, name.to_string(), None),
    }
}

fn missing(kind: ProviderKind, config: &ProvidersConfig) -> String {
    if kind == ProviderKind::Mock {
        return String::new();
    }
    let api = wire_api(kind);
    let name = kind.as_str();
    let file = config.file_name();
    // Auth commands (gateway tokens) and keyless endpoints serve OpenAI-compatible servers.
    if api.keyless_with_base_url {
        format!(
            "set {} (or providers.{name}.api_key or auth_command in {file}; {} alone for a local server without keys)",
            api.key_var, api.base_url_var
        )
    } else {
        format!("set {} (or providers.{name}.api_key in {file})", api.key_var)
    }
}

fn default_base(kind: ProviderKind) -> &'static str {
    if kind == ProviderKind::Mock { "" } else { wire_api(kind).default_base_url }
}

/// The vendor's credentials, or `None` when it is not configured.
fn vendor_auth(kind: ProviderKind, config: &ProvidersConfig) -> Result<Option<Auth>, ProviderError> {
    let Some(vendor) = config.vendor(kind) else { return Ok(Some(Auth::None)) };
    if let Some(key) = &vendor.api_key {
        return Ok(Some(Auth::Key(key.clone())));
    }
    if let Some(argv) = vendor.auth_command.as_ref().filter(|argv| !argv.is_empty()) {
        let Some(runner) = config.command_runner.clone() else {
            return Err(ProviderError::NotConfigured {
                provider: kind.as_str().to_string(),
                missing: "auth_command is set but this program has no command runner for it".to_string(),
            });
        };
        let timeout = Duration::from_millis(vendor.auth_timeout_ms.unwrap_or(10_000));
        return Ok(Some(Auth::Command { argv: argv.clone(), timeout, runner }));
    }
    if vendor.base_url.is_some() && wire_api(kind).keyless_with_base_url {
        return Ok(Some(Auth::None));
    }
    Ok(None)
}

fn entry_route(entry: &ModelEntry, config: &ProvidersConfig) -> Result<Route, ProviderError> {
    let kind = entry.provider;
    let model = entry.model.clone().unwrap_or_else(|| entry.name.clone());
    if kind == ProviderKind::Mock {
        return Ok(Route {
            kind,
            name: entry.name.clone(),
            model,
            base_url: String::new(),
            auth: Auth::None,
            thinking_budget: None,
            reasoning_effort: None,
            reasoning: false,
            responses: false,
            tool_search: false,
        });
    }
    let own_key = match &entry.api_key_env {
        Some(var) => match config.entry_key(var) {
            Some(key) => Some(key.to_string()),
            None => {
                return Err(ProviderError::NotConfigured {
                    provider: kind.as_str().to_string(),
                    missing: format!("model `{}` reads its key from {var}, which is not set", entry.name),
                });
            }
        },
        None => entry.api_key.clone(),
    };
    let vendor_base = config.vendor(kind).and_then(|v| v.base_url.clone());
    let (base_url, auth) = match (own_key, &entry.base_url) {
        (Some(key), base) => {
            (base.clone().or(vendor_base).unwrap_or_else(|| default_base(kind).into()), Auth::Key(key))
        }
        (None, Some(base)) if wire_api(kind).keyless_with_base_url => (base.clone(), Auth::None),
        (None, base) => {
            let auth = vendor_auth(kind, config)?.ok_or_else(|| ProviderError::NotConfigured {
                provider: kind.as_str().to_string(),
                missing: format!("model `{}`: {}", entry.name, missing(kind, config)),
            })?;
            (base.clone().or(vendor_base).unwrap_or_else(|| default_base(kind).into()), auth)
        }
    };
    let vendor = config.vendor(kind);
    let thinking_budget = entry.thinking_budget.or_else(|| vendor.and_then(|v| v.thinking_budget));
    let reasoning_effort = entry.reasoning_effort.clone().or_else(|| vendor.and_then(|v| v.reasoning_effort.clone()));
    let reasoning = entry.reasoning_effort.is_some() || (wire_api(kind).is_reasoning_model)(&model);
    let responses = kind == ProviderKind::Openai
        && match entry.wire_api {
            Some(wire) => wire == OpenaiWire::Responses,
            None => crate::openai::served_by_responses(&model),
        };
    Ok(Route {
        kind,
        name: entry.name.clone(),
        model,
        base_url,
        auth,
        thinking_budget,
        reasoning_effort,
        reasoning,
        responses,
        tool_search: entry.builtin_tool_search.or_else(|| vendor.and_then(|v| v.builtin_tool_search)).unwrap_or(true),
    })
}

/// Where `model` leads, without building a client.
pub fn route(model: &str, config: &ProvidersConfig) -> Result<Route, ProviderError> {
    let name = model.trim();
    if let Some(entry) = config.models.iter().find(|entry| entry.name == name) {
        return entry_route(entry, config);
    }
    if name == "mock" {
        return Ok(Route {
            kind: ProviderKind::Mock,
            name: name.into(),
            model: name.into(),
            base_url: String::new(),
            auth: Auth::None,
            thinking_budget: None,
            reasoning_effort: None,
            reasoning: false,
            responses: false,
            tool_search: false,
        });
    }
    let Some((kind, upstream)) = prefixed_kind(name).filter(|(_, upstream)| !upstream.is_empty()) else {
        return Err(ProviderError::UnknownModel {
            model: name.to_string(),
            hint: format!(
                "names starting gpt-, o1, o3, o4 or openai/ go to OpenAI, claude- or anthropic/ to Anthropic, \
                 gemini- or google/ to Gemini, `mock` to the offline model; other names need an entry in the \
                 [[providers.models]] list of {}",
                config.file_name()
            ),
        });
    };
    let auth = vendor_auth(kind, config)?.ok_or_else(|| ProviderError::NotConfigured {
        provider: kind.as_str().to_string(),
        missing: missing(kind, config),
    })?;
    let base_url = config.vendor(kind).and_then(|v| v.base_url.clone()).unwrap_or_else(|| default_base(kind).into());
    let api = wire_api(kind);
    if let Some(reason) = (api.unsupported)(upstream) {
        return Err(ProviderError::Unsupported { model: name.to_string(), reason });
    }
    let vendor = config.vendor(kind);
    let thinking_budget = vendor.and_then(|v| v.thinking_budget);
    let reasoning = (api.is_reasoning_model)(upstream);
    let reasoning_effort = vendor.and_then(|v| v.reasoning_effort.clone()).filter(|_| reasoning);
    Ok(Route {
        kind,
        name: name.to_string(),
        model: upstream.to_string(),
        base_url,
        auth,
        thinking_budget,
        reasoning_effort,
        reasoning,
        responses: kind == ProviderKind::Openai && crate::openai::served_by_responses(upstream),
        tool_search: vendor.and_then(|v| v.builtin_tool_search).unwrap_or(true),
    })
}

/// A model's limits where it leads: [`crate::limits::for_model`], a model the table does not
/// know on a local endpoint (the vendor's `base_url` for a prefixed name) getting
/// [`crate::limits::UNKNOWN_LOCAL_MODEL`].
pub fn model_limits(model: &str, config: &ProvidersConfig) -> crate::ModelLimits {
    let base_url = route(model, config).ok().map(|route| route.base_url);
    crate::limits::at_endpoint(model, config, base_url.as_deref())
}

/// The provider for `model`. The provider streams with the routed upstream model id, whatever
/// `ModelRequest::model` says; resolve again when the model changes.
pub fn resolve(model: &str, config: &ProvidersConfig) -> Result<SharedProvider, ProviderError> {
    let route = route(model, config)?;
    match route.kind {
        ProviderKind::Mock => Ok(Arc::new(MockProvider::with_limits(crate::limits::for_model(model, config)))),
        _ => Ok(Arc::new(HttpProvider::new(route, config)?)),
    }
}

fn vendor_configured(kind: ProviderKind, config: &ProvidersConfig) -> bool {
    matches!(vendor_auth(kind, config), Ok(Some(_)))
}

/// The model to use when none is asked for, and whether it is the `mock` fallback (which the
/// caller must say out loud). The mock is chosen only when nothing at all is configured.
pub fn default_model(config: &ProvidersConfig) -> (String, bool) {
    if let Some(model) = &config.default_model {
        return (model.clone(), false);
    }
    if let Some(entry) = config.models.first() {
        return (entry.name.clone(), false);
    }
    for api in WIRE_APIS {
        let kind = api.kind;
        if vendor_configured(kind, config) {
            let listed = config.vendor(kind).and_then(|v| v.models.first().cloned());
            let builtin = api.builtin_models.first().copied().unwrap_or("mock");
            return (listed.unwrap_or_else(|| builtin.to_string()), false);
        }
    }
    ("mock".to_string(), true)
}

/// The models whose provider is configured, the default first among equals marked, `mock` last.
pub fn configured_models(config: &ProvidersConfig) -> Vec<ModelInfo> {
    let (default, _) = default_model(config);
    let mut out: Vec<ModelInfo> = Vec::new();
    let mut push = |name: String, provider: ProviderKind| {
        if !out.iter().any(|m| m.name == name) {
            out.push(ModelInfo { default: name == default, name, provider: provider.as_str().to_string() });
        }
    };
    for entry in &config.models {
        if entry_route(entry, config).is_ok() {
            push(entry.name.clone(), entry.provider);
        }
    }
    for api in WIRE_APIS {
        let kind = api.kind;
        if !vendor_configured(kind, config) {
            continue;
        }
        let listed = config.vendor(kind).map(|v| v.models.clone()).unwrap_or_default();
        if listed.is_empty() {
            api.builtin_models.iter().for_each(|name| push(name.to_string(), kind));
        } else {
            listed.into_iter().for_each(|name| push(name, kind));
        }
    }
    if let Some(model) = config.default_model.clone()
        && let Ok(route) = route(&model, config)
    {
        push(model, route.kind);
    }
    push("mock".to_string(), ProviderKind::Mock);
    out
}

#[cfg(test)]
#[path = "router_tests.rs"]
mod tests;
