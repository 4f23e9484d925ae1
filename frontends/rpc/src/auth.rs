//! Tokens for `auth.login`: where they come from and which principal each stands for.
//!
//! With no token configured, authentication is off and every caller is the principal
//! `local`. A token from a list is the principal `key-` plus 16 hex digits of its SHA-256
//! (the gateway names its bearer tokens the same way, so one token reaches the same
//! conversations through both); a token of a map is the principal it is named by.

use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The environment variable with comma-separated tokens.
pub const TOKENS_VAR: &str = "SUPERPI_TOKENS";
/// The principal of every caller when authentication is off.
pub const LOCAL_PRINCIPAL: &str = "local";
/// The file of the config dir with the server's tokens.
pub const CONFIG_FILE: &str = "rpc.json";

/// The configured tokens. Empty means authentication is off.
#[derive(Clone, Default)]
pub struct Tokens {
    entries: Vec<(String, String)>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret.
        f.debug_struct("Tokens").field("count", &self.entries.len()).finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl Tokens {
    /// A comma-separated list; blanks around and between entries are ignored.
    pub fn parse_list(list: &str) -> Self {
        let entries = list
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| (t.to_string(), principal_for(t)))
            .collect();
        Tokens { entries }
    }

    /// `SUPERPI_TOKENS` when set and not blank, else `tokens` of `rpc.json` in the config dir
    /// (not `settings.json`: the kernel reads that one strictly, and it holds no secrets).
    pub fn load(env_value: Option<&str>, config_dir: &Path) -> Result<Self, ConfigError> {
        if let Some(list) = env_value.filter(|v| !v.trim().is_empty()) {
            return Ok(Self::parse_list(list));
        }
        let path = config_dir.join(CONFIG_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Tokens::default()),
            Err(source) => return Err(ConfigError::Read { path: path.display().to_string(), source }),
        };
        Self::from_config(&text).map_err(|message| ConfigError::Invalid { path: path.display().to_string(), message })
    }

    /// Reads an `rpc.json` document: `{"tokens": [token, ...]}` or
    /// `{"tokens": {"principal": "token", ...}}`. Any other key is an error.
    pub fn from_config(text: &str) -> Result<Self, String> {
        let config: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let Value::Object(config) = config else {
            return Err("the file must hold a JSON object".into());
        };
        if let Some(key) = config.keys().find(|k| k.as_str() != "tokens") {
            return Err(format!("unknown key `{key}` (the only key is `tokens`)"));
        }
        let mut entries = Vec::new();
        match config.get("tokens") {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                for token in list {
                    let token = token.as_str().ok_or("tokens: every token must be a string")?;
                    if !token.trim().is_empty() {
                        entries.push((token.trim().to_string(), principal_for(token.trim())));
                    }
                }
            }
            Some(Value::Object(map)) => {
                for (principal, token) in map {
                    let token = token.as_str().ok_or("tokens: every token must be a string")?;
                    if principal.trim().is_empty() || token.trim().is_empty() {
                        return Err("tokens: a blank principal or token".into());
                    }
                    entries.push((token.trim().to_string(), principal.clone()));
                }
            }
            Some(_) => return Err("tokens must be a list of tokens or a map from principal to token".into()),
        }
        Ok(Tokens { entries })
    }

    pub fn is_enabled(&self) -> bool {
        !self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The principal of a token, when it is a configured one. Every configured token is
    /// compared in constant time, so the answer's timing tells nothing of them.
    pub fn principal_of(&self, token: &str) -> Option<String> {
        let mut found = None;
        for (known, principal) in &self.entries {
            if bool::from(known.as_bytes().ct_eq(token.as_bytes())) && found.is_none() {
                found = Some(principal.clone());
            }
        }
        found
    }
}

/// A listed token's principal: `key-` and the first 16 hex digits of its SHA-256.
pub fn principal_for(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    let mut out = String::from("key-");
    for byte in &digest[..8] {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_names_principals_by_hash() {
        let tokens = Tokens::parse_list(" one , ,two,");
        assert_eq!(tokens.len(), 2);
        assert_eq!(tokens.principal_of("one"), Some(principal_for("one")));
        assert_eq!(tokens.principal_of("two"), Some(principal_for("two")));
        assert_eq!(tokens.principal_of("three"), None);
        assert_eq!(tokens.principal_of(""), None);
        assert!(principal_for("one").starts_with("key-"));
        assert_eq!(principal_for("one").len(), 20);
        assert_ne!(principal_for("one"), principal_for("two"));
        assert!(!Tokens::parse_list(" , ").is_enabled());
        assert!(!format!("{tokens:?}").contains("one"));
    }

    #[test]
    fn the_config_file_gives_a_list_or_named_principals() {
        let t = Tokens::from_config(r#"{"tokens": {"alice": "ka", "bob": "kb"}}"#).unwrap();
        assert_eq!(t.principal_of("ka").as_deref(), Some("alice"));
        assert_eq!(t.principal_of("kb").as_deref(), Some("bob"));
        let t = Tokens::from_config(r#"{"tokens": ["x"]}"#).unwrap();
        assert_eq!(t.principal_of("x"), Some(principal_for("x")));
        assert!(!Tokens::from_config("{}").unwrap().is_enabled());
        assert!(Tokens::from_config(r#"{"tokens": "x"}"#).is_err());
        assert!(Tokens::from_config(r#"{"tokens": [1]}"#).is_err());
        assert!(Tokens::from_config(r#"{"tokens": [], "tokenz": []}"#).unwrap_err().contains("tokenz"));
        assert!(Tokens::from_config("[]").is_err());
        assert!(Tokens::from_config("nope").is_err());
    }

    #[test]
    fn the_environment_wins_over_the_config_file() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!Tokens::load(None, dir.path()).unwrap().is_enabled());
        std::fs::write(dir.path().join(CONFIG_FILE), r#"{"tokens": {"alice": "ka"}}"#).unwrap();
        assert_eq!(Tokens::load(None, dir.path()).unwrap().principal_of("ka").as_deref(), Some("alice"));
        assert_eq!(Tokens::load(Some("  "), dir.path()).unwrap().principal_of("ka").as_deref(), Some("alice"));
        let env = Tokens::load(Some("e1,e2"), dir.path()).unwrap();
        assert_eq!(env.principal_of("ka"), None);
        assert_eq!(env.len(), 2);
    }
}
