//! What the providers need to know from the environment and the providers file
//! (`CONFIG_DIR/providers.toml`, read by [`crate::config_file`]): keys, endpoints, auth
//! commands, extra models, retry limits.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use superpi_proto::Usage;

pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
pub const ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";
pub const GEMINI_API_KEY: &str = "GEMINI_API_KEY";
pub const OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";
pub const ANTHROPIC_BASE_URL: &str = "ANTHROPIC_BASE_URL";
pub const GEMINI_BASE_URL: &str = "GEMINI_BASE_URL";
/// The default model, when set (the config file's `default_model` otherwise).
pub const SUPERPI_MODEL: &str = "SUPERPI_MODEL";
/// A program that prints a bearer token for the OpenAI-compatible endpoint (a gateway with
/// short-lived tokens); `OPENAI_API_KEY` wins when both are set.
pub const SUPERPI_OPENAI_AUTH_COMMAND: &str = "SUPERPI_OPENAI_AUTH_COMMAND";

/// The providers file's name in the config directory.
pub const PROVIDERS_FILE: &str = "providers.toml";

/// The default of [`ProvidersConfig::compact_at_percent`].
pub const DEFAULT_COMPACT_AT_PERCENT: u8 = 80;

/// Which wire API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI Chat Completions (and every compatible server).
    #[default]
    Openai,
    Anthropic,
    Gemini,
    Mock,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
            ProviderKind::Mock => "mock",
        }
    }
}

/// Which of OpenAI's APIs a model is served through (`wire_api` of a `[[providers.models]]`
/// entry); unset, the built-in table chooses (the Responses API for the models OpenAI serves only
/// there: `gpt-5-codex`, `codex-mini-latest`, `o3-pro`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpenaiWire {
    /// Chat Completions (`POST /chat/completions`), what every compatible server speaks.
    Chat,
    /// The Responses API (`POST /responses`).
    Responses,
}

/// One vendor's settings (`[providers.openai]` and the like in the config file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VendorConfig {
    pub api_key: Option<String>,
    /// Overrides the endpoint (for OpenAI: any compatible server, e.g. `http://127.0.0.1:11434/v1`).
    pub base_url: Option<String>,
    /// A program (argv) that prints a bearer token, for gateways with short-lived tokens.
    /// Run with [`VendorConfig::auth_timeout_ms`] (default 10 s); its token is cached for at most
    /// 60 s and until 30 s before a JWT's `exp`. `api_key` wins when both are set. OpenAI only.
    pub auth_command: Option<Vec<String>>,
    pub auth_timeout_ms: Option<u64>,
    /// Model names to list in `superpi models` (the built-in list when empty).
    pub models: Vec<String>,
    /// Thinking tokens to allow: Anthropic's extended thinking (off when unset), Gemini's
    /// `thinkingBudget`. OpenAI ignores it.
    pub thinking_budget: Option<u32>,
    /// OpenAI reasoning models (o1, o3, o4, gpt-5 families): `minimal`, `low`, `medium` or
    /// `high` (the API's default when unset). Others ignore it.
    pub reasoning_effort: Option<String>,
    /// The vendor's built-in tool search for deferred MCP tools (Anthropic's tool search tool,
    /// the Responses API's `tool_search`) where it serves the model (default `true`); `false`
    /// uses superpi's own `tool_search` tool.
    pub builtin_tool_search: Option<bool>,
}

/// A model outside the built-in name rules (`[[providers.models]]`), e.g. one served by vLLM,
/// Ollama, llama.cpp or LiteLLM.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelEntry {
    /// The name users type (`--model NAME`).
    pub name: String,
    /// The wire API (default `openai`).
    pub provider: ProviderKind,
    /// The id sent upstream (default: `name`).
    pub model: Option<String>,
    /// OpenAI's API to speak (`provider = "openai"` only; default: the built-in table's choice).
    pub wire_api: Option<OpenaiWire>,
    /// The endpoint (default: the vendor's).
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// An environment variable holding the key.
    pub api_key_env: Option<String>,
    /// Overrides the vendor's `thinking_budget` for this model.
    pub thinking_budget: Option<u32>,
    /// Overrides the vendor's `reasoning_effort`; set, it also marks an OpenAI-API model as a
    /// reasoning model (sent `max_completion_tokens`) whatever its name.
    pub reasoning_effort: Option<String>,
    /// The model's context window in tokens (default: the built-in table, see `limits`).
    pub context_window: Option<u64>,
    /// The most tokens of one answer (default: the built-in table).
    pub max_output_tokens: Option<u64>,
    /// Whether it takes images in prompts (default: the built-in table, see `images`; a model
    /// the table does not know takes none).
    pub images: Option<bool>,
    /// Its prices in US dollars per million tokens (default: the built-in table, see
    /// `prices`; a model the table does not know has none, and its cost is not counted).
    pub price: Option<Price>,
    /// Overrides the vendor's `builtin_tool_search` for this model.
    pub builtin_tool_search: Option<bool>,
}

/// A model's prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input tokens neither read from nor written to the prompt cache.
    pub input: f64,
    /// Input tokens read from the prompt cache (default: `input`).
    #[serde(default)]
    pub cached_input: Option<f64>,
    /// Input tokens written to the prompt cache, where the vendor charges them apart
    /// (Anthropic; default: `input`).
    #[serde(default)]
    pub cache_write: Option<f64>,
    pub output: f64,
}

impl Price {
    /// What `usage` costs at these prices, in US dollars. Output tokens include reasoning
    /// tokens, as every vendor reports and bills them.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let written = usage.cache_write_tokens.min(usage.input_tokens - cached);
        let plain = usage.input_tokens - cached - written;
        let per_token = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per_token(plain, self.input)
            + per_token(cached, self.cached_input.unwrap_or(self.input))
            + per_token(written, self.cache_write.unwrap_or(self.input))
            + per_token(usage.output_tokens, self.output)
    }
}

/// Retry limits for 429, 529 and 503 answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryConfig {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff when the answer has no Retry-After; doubles per retry.
    pub initial_backoff_ms: u64,
    /// The cap of any wait, Retry-After included.
    pub max_backoff_ms: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig { max_retries: 4, initial_backoff_ms: 1000, max_backoff_ms: 60_000 }
    }
}

/// Runs an auth command (argv) with a timeout and returns its standard output. The kernel
/// supplies one backed by its process runner: this crate spawns no processes.
pub type CommandRunnerFn =
    dyn Fn(Vec<String>, Duration) -> BoxFuture<'static, Result<String, String>> + Send + Sync + 'static;

/// A shareable [`CommandRunnerFn`].
#[derive(Clone)]
pub struct CommandRunner(pub Arc<CommandRunnerFn>);

impl CommandRunner {
    pub fn new(
        run: impl Fn(Vec<String>, Duration) -> BoxFuture<'static, Result<String, String>> + Send + Sync + 'static,
    ) -> Self {
        CommandRunner(Arc::new(run))
    }
}

impl fmt::Debug for CommandRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CommandRunner")
    }
}

impl PartialEq for CommandRunner {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Everything the router needs. Deserialize the config file's `[providers]` section into it,
/// then [`ProvidersConfig::apply_env`]; or take [`ProvidersConfig::from_env`] alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProvidersConfig {
    pub default_model: Option<String>,
    pub openai: VendorConfig,
    pub anthropic: VendorConfig,
    pub gemini: VendorConfig,
    pub models: Vec<ModelEntry>,
    pub retry: RetryConfig,
    /// Connect timeout in milliseconds (default 30 s).
    pub connect_timeout_ms: Option<u64>,
    /// Compact a conversation when its next request would fill more than this percentage of
    /// the model's context window (default [`DEFAULT_COMPACT_AT_PERCENT`]; 100 turns it off).
    pub compact_at_percent: Option<u8>,
    /// Runs `auth_command`s; not part of the file.
    #[serde(skip)]
    pub command_runner: Option<CommandRunner>,
    /// Looks up `api_key_env` variables of model entries; captured by `apply_env`.
    #[serde(skip)]
    pub entry_keys: Vec<(String, String)>,
    /// The providers file this came from, named in errors that point at a setting.
    #[serde(skip)]
    pub file: Option<std::path::PathBuf>,
}

impl ProvidersConfig {
    /// Where errors tell users to put a setting: the providers file's path, or its name.
    pub fn file_name(&self) -> String {
        match &self.file {
            Some(path) => path.display().to_string(),
            None => format!("{PROVIDERS_FILE} of the config directory"),
        }
    }

    /// Parses a `[providers]` section already read as JSON (or any serde value turned into one).
    pub fn from_section(section: serde_json::Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(section)
    }

    /// Sets the runner for auth commands.
    pub fn with_command_runner(mut self, runner: CommandRunner) -> Self {
        self.command_runner = Some(runner);
        self
    }

    pub fn vendor(&self, kind: ProviderKind) -> Option<&VendorConfig> {
        match kind {
            ProviderKind::Openai => Some(&self.openai),
            ProviderKind::Anthropic => Some(&self.anthropic),
            ProviderKind::Gemini => Some(&self.gemini),
            ProviderKind::Mock => None,
        }
    }

    pub(crate) fn vendor_mut(&mut self, kind: ProviderKind) -> Option<&mut VendorConfig> {
        match kind {
            ProviderKind::Openai => Some(&mut self.openai),
            ProviderKind::Anthropic => Some(&mut self.anthropic),
            ProviderKind::Gemini => Some(&mut self.gemini),
            ProviderKind::Mock => None,
        }
    }

    pub(crate) fn entry_key(&self, var: &str) -> Option<&str> {
        self.entry_keys.iter().find(|(name, _)| name == var).map(|(_, value)| value.as_str())
    }

    /// The share of the context window past which a conversation is compacted, in percent.
    pub fn compact_at_percent(&self) -> u8 {
        self.compact_at_percent.unwrap_or(DEFAULT_COMPACT_AT_PERCENT).clamp(10, 100)
    }

    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms.unwrap_or(30_000))
    }
}
