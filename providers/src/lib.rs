//! superpi-providers: model providers behind one closed stream algebra.
//!
//! Owns the stream algebra ([`stream`]): a `Start` first, per content block start, deltas and
//! end in increasing index order, and exactly one terminal (`Done` or `Error`) carrying the
//! assembled message. Owns the [`Provider`] trait, the model router, the vendor APIs and the
//! offline `mock` model.
//!
//! It must not know the kernel's conversations, the store, the event protocol's envelope or
//! any frontend: it turns a [`ModelRequest`] into a stream of [`StreamEvent`]s, nothing more.
//! It spawns no process: an auth command runs through the [`CommandRunner`] its caller gives.
//!
//! Use: build a [`ProvidersConfig`] ([`ProvidersConfig::load`] reads `CONFIG_DIR/providers.toml`
//! and lays the environment over it; [`ProvidersConfig::from_env`] takes the environment alone); [`default_model`] names the
//! model to use when none is asked for (and whether that is the mock fallback);
//! [`resolve`] gives the [`Provider`] of a model name or an error naming what is missing;
//! [`configured_models`] lists what `superpi models` shows. See README.md beside this crate.

pub mod anthropic;
pub mod assemble;
pub mod auth;
pub mod config;
pub mod config_file;
pub mod effort;
pub mod gemini;
pub mod gemini_schema;
pub mod history;
pub mod http;
mod image_data;
pub mod images;
pub mod limits;
pub mod mock;
pub mod openai;
pub mod openai_responses;
mod openai_wire;
pub mod overflow;
pub mod partial_json;
pub mod prices;
pub mod reassemble;
pub mod route;
pub mod router;
pub mod sse;
pub mod stream;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tokens;
pub mod tool_search;
pub mod validate;
pub mod vendor;
mod wire;
pub mod wire_api;

pub use assemble::StreamBuilder;
pub use config::Price;
pub use config::{
    CommandRunner, DEFAULT_COMPACT_AT_PERCENT, ModelEntry, OpenaiWire, PROVIDERS_FILE, ProviderKind, ProvidersConfig,
    RetryConfig, VendorConfig,
};
pub use config_file::ProvidersFileError;
pub use http::{HttpProvider, parse_recorded, parse_recorded_by};
pub use limits::ModelLimits;
pub use mock::{MockProvider, mock_directives_help};
pub use reassemble::{Reassembler, reassemble};
pub use route::Route;
pub use router::{ModelInfo, configured_models, default_model, model_limits, resolve, route};
pub use stream::{
    EventStream, ModelRequest, OutputSchema, ProviderError, StopReason, StreamEvent, Terminal, ToolSpec, UsageDetails,
};
pub use validate::{AlgebraViolation, Validator, validate};

use std::sync::Arc;

/// A model API (or the mock) that streams one assistant message per request.
pub trait Provider: Send + Sync {
    /// The provider's name: `openai`, `anthropic`, `gemini`, `mock`.
    fn name(&self) -> &str;

    /// Streams the answer to `request`. The stream always begins with `Start` and ends with
    /// exactly one terminal, also when the request fails before the first byte. Dropping the
    /// stream cancels the request.
    fn stream(&self, request: ModelRequest) -> EventStream;

    /// Whether the provider constrains an answer to [`ModelRequest::output_schema`] itself (a
    /// vendor's structured-output mode); without one the caller offers a tool instead.
    fn structured_output(&self) -> bool {
        false
    }

    /// Whether the vendor's built-in tool search serves this model (see [`tool_search`]): the
    /// caller then sends deferred tools marked [`ToolSpec::deferred`] instead of its own search.
    fn tool_search(&self) -> bool {
        false
    }
}

pub type SharedProvider = Arc<dyn Provider>;
