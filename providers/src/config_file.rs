//! The providers file, `CONFIG_DIR/providers.toml`: its `[providers]` table is a
//! [`ProvidersConfig`]. Strict: an unknown key, a value of the wrong type, a model entry
//! without a name or with a bad endpoint, an unknown `default_model` or `reasoning_effort` is an
//! error naming the file and the key. The environment is laid over it afterwards
//! ([`ProvidersConfig::apply_env`], each wire API's variables): a variable that is set wins.

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use crate::config::PROVIDERS_FILE;
use crate::config::{ProvidersConfig, SUPERPI_MODEL, SUPERPI_OPENAI_AUTH_COMMAND};
use crate::stream::ProviderError;
use crate::vendor::WIRE_APIS;

/// The values `reasoning_effort` takes (OpenAI reasoning models).
pub const REASONING_EFFORTS: &[&str] = &["minimal", "low", "medium", "high"];

/// A providers file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProvidersFileError {
    #[error("{}: cannot read: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// `key` is the dotted path of the key at fault, empty when the file as a whole is wrong.
    #[error("{}: {}{message}", path.display(), if key.is_empty() { String::new() } else { format!("key `{key}`: ") })]
    Invalid { path: PathBuf, key: String, message: String },
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    providers: ProvidersConfig,
}

fn invalid(path: &Path, key: impl Into<String>, message: impl Into<String>) -> ProvidersFileError {
    ProvidersFileError::Invalid { path: path.to_path_buf(), key: key.into(), message: message.into() }
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn toml_error(text: &str, path: &Path, key: String, error: &toml::de::Error) -> ProvidersFileError {
    let message = match error.span() {
        Some(span) => {
            let (line, col) = line_col(text, span.start);
            format!("{} (line {line}, column {col})", error.message().trim_end())
        }
        None => error.message().trim_end().to_string(),
    };
    invalid(path, key, message)
}

impl ProvidersConfig {
    /// The configuration from the process environment alone.
    pub fn from_env() -> Self {
        let mut config = ProvidersConfig::default();
        config.apply_env(|name| std::env::var(name).ok());
        config
    }

    /// Lays the environment over the file: a variable that is set (and not empty) wins.
    pub fn apply_env(&mut self, lookup: impl Fn(&str) -> Option<String>) {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        for api in WIRE_APIS {
            let Some(vendor) = self.vendor_mut(api.kind) else { continue };
            if let Some(value) = get(api.key_var) {
                vendor.api_key = Some(value);
            }
            if let Some(value) = get(api.base_url_var) {
                vendor.base_url = Some(value);
            }
        }
        if let Some(program) = get(SUPERPI_OPENAI_AUTH_COMMAND) {
            self.openai.auth_command = Some(vec![program]);
        }
        if let Some(model) = get(SUPERPI_MODEL) {
            self.default_model = Some(model);
        }
        for entry in &self.models {
            if let Some(var) = &entry.api_key_env
                && let Some(value) = get(var)
            {
                self.entry_keys.push((var.clone(), value));
            }
        }
    }

    /// Reads `CONFIG_DIR/providers.toml` (a missing file is an empty one), then lays the
    /// environment (`lookup`) over it.
    pub fn load(config_dir: &Path, lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ProvidersFileError> {
        let path = config_dir.join(PROVIDERS_FILE);
        let mut config = match std::fs::read_to_string(&path) {
            Ok(text) => ProvidersConfig::from_toml(&text, &path)?,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => ProvidersConfig::default(),
            Err(source) => return Err(ProvidersFileError::Read { path, source }),
        };
        config.file = Some(path);
        config.apply_env(lookup);
        Ok(config)
    }

    /// The `[providers]` table of a providers file's text; `path` names it in errors.
    pub fn from_toml(text: &str, path: &Path) -> Result<Self, ProvidersFileError> {
        let de = toml::Deserializer::parse(text).map_err(|e| toml_error(text, path, String::new(), &e))?;
        let file: File = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            let key = if key == "." { String::new() } else { key };
            toml_error(text, path, key, e.inner())
        })?;
        let mut config = file.providers;
        config.check(path)?;
        config.file = Some(path.to_path_buf());
        Ok(config)
    }

    /// What serde cannot check.
    fn check(&self, path: &Path) -> Result<(), ProvidersFileError> {
        let endpoint = |key: String, url: &Option<String>| match url {
            Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                Err(invalid(path, key, format!("`{url}` is not an http:// or https:// URL")))
            }
            _ => Ok(()),
        };
        for (name, vendor) in [("openai", &self.openai), ("anthropic", &self.anthropic), ("gemini", &self.gemini)] {
            endpoint(format!("providers.{name}.base_url"), &vendor.base_url)?;
            if vendor.auth_command.as_ref().is_some_and(|argv| argv.first().is_none_or(|p| p.trim().is_empty())) {
                return Err(invalid(path, format!("providers.{name}.auth_command"), "names no program"));
            }
            effort(path, &format!("providers.{name}.reasoning_effort"), &vendor.reasoning_effort)?;
        }
        for (i, entry) in self.models.iter().enumerate() {
            let key = |field: &str| format!("providers.models[{i}].{field}");
            if entry.name.trim().is_empty() {
                return Err(invalid(path, key("name"), "a model entry needs the name users type (`--model NAME`)"));
            }
            if self.models[..i].iter().any(|earlier| earlier.name == entry.name) {
                return Err(invalid(path, key("name"), format!("`{}` is listed twice", entry.name)));
            }
            endpoint(key("base_url"), &entry.base_url)?;
            if entry.context_window == Some(0) || entry.max_output_tokens == Some(0) {
                let field = if entry.context_window == Some(0) { "context_window" } else { "max_output_tokens" };
                return Err(invalid(path, key(field), "must be at least 1"));
            }
            effort(path, &key("reasoning_effort"), &entry.reasoning_effort)?;
            if let Some(price) = &entry.price {
                let fields = [("input", Some(price.input)), ("output", Some(price.output))];
                let fields = fields
                    .into_iter()
                    .chain([("cached_input", price.cached_input), ("cache_write", price.cache_write)]);
                for (field, value) in fields {
                    if let Some(value) = value.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                        return Err(invalid(path, key(&format!("price.{field}")), format!("{value} is not a price")));
                    }
                }
            }
            if entry.wire_api.is_some() && entry.provider != crate::config::ProviderKind::Openai {
                return Err(invalid(
                    path,
                    key("wire_api"),
                    format!("chooses among OpenAI's APIs; a `{}` model speaks its own", entry.provider.as_str()),
                ));
            }
        }
        if let Some(percent) = self.compact_at_percent
            && !(10..=100).contains(&percent)
        {
            return Err(invalid(path, "providers.compact_at_percent", format!("{percent} is not between 10 and 100")));
        }
        if let Some(model) = &self.default_model
            && let Err(ProviderError::UnknownModel { hint, .. }) = crate::router::route(model, self)
        {
            return Err(invalid(path, "providers.default_model", format!("unknown model `{model}`: {hint}")));
        }
        Ok(())
    }
}

fn effort(path: &Path, key: &str, value: &Option<String>) -> Result<(), ProvidersFileError> {
    match value {
        Some(value) if !REASONING_EFFORTS.contains(&value.as_str()) => {
            Err(invalid(path, key, format!("`{value}` is not one of {}", REASONING_EFFORTS.join(", "))))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "config_file_tests.rs"]
mod tests;
