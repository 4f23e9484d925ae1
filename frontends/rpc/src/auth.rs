//! Tokens for `auth.login`: where they come from and which principal each stands for.
//!
//! With no token configured, authentication is off and every caller is the principal
//! `local`. A token from a list is named by superpi-client's [`principal_for_token`] (the
//! gateway and AG-UI name their bearer tokens with the same function, so one token reaches
//! the same conversations through all three); a token of a map is the principal it is named
//! by.

use std::path::Path;

use serde_json::Value;
pub use superpi_client::principal::{LOCAL_PRINCIPAL, TokenTable as Tokens, principal_for_token};

/// The environment variable with comma-separated tokens.
pub const TOKENS_VAR: &str = "SUPERPI_TOKENS";
/// The file of the config dir with the server's tokens.
pub const CONFIG_FILE: &str = "rpc.json";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// `SUPERPI_TOKENS` when set and not blank, else `tokens` of `rpc.json` in the config dir
/// (not `settings.json`: the kernel reads that one strictly, and it holds no secrets).
pub fn load(env_value: Option<&str>, config_dir: &Path) -> Result<Tokens, ConfigError> {
    if let Some(list) = env_value.filter(|v| !v.trim().is_empty()) {
        return Ok(Tokens::parse_list(list));
    }
    let path = config_dir.join(CONFIG_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Tokens::default()),
        Err(source) => return Err(ConfigError::Read { path: path.display().to_string(), source }),
    };
    from_config(&text).map_err(|message| ConfigError::Invalid { path: path.display().to_string(), message })
}

/// Reads an `rpc.json` document: `{"tokens": [token, ...]}` or
/// `{"tokens": {"principal": "token", ...}}`. Any other key is an error.
pub fn from_config(text: &str) -> Result<Tokens, String> {
    let config: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(config) = config else {
        return Err("the file must hold a JSON object".into());
    };
    if let Some(key) = config.keys().find(|k| k.as_str() != "tokens") {
        return Err(format!("unknown key `{key}` (the only key is `tokens`)"));
    }
    let mut table = Tokens::default();
    match config.get("tokens") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for token in list {
                let token = token.as_str().ok_or("tokens: every token must be a string")?;
                table.add_listed(token);
            }
        }
        Some(Value::Object(map)) => {
            for (principal, token) in map {
                let token = token.as_str().ok_or("tokens: every token must be a string")?;
                if principal.trim().is_empty() || token.trim().is_empty() {
                    return Err("tokens: a blank principal or token".into());
                }
                table.add_named(token, principal);
            }
        }
        Some(_) => return Err("tokens must be a list of tokens or a map from principal to token".into()),
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_file_gives_a_list_or_named_principals() {
        let t = from_config(r#"{"tokens": {"alice": "ka", "bob": "kb"}}"#).unwrap();
        assert_eq!(t.principal_of("ka").as_deref(), Some("alice"));
        assert_eq!(t.principal_of("kb").as_deref(), Some("bob"));
        let t = from_config(r#"{"tokens": ["x"]}"#).unwrap();
        assert_eq!(t.principal_of("x"), Some(principal_for_token("x")));
        assert!(!from_config("{}").unwrap().is_enabled());
        assert!(from_config(r#"{"tokens": "x"}"#).is_err());
        assert!(from_config(r#"{"tokens": [1]}"#).is_err());
        assert!(from_config(r#"{"tokens": [], "tokenz": []}"#).unwrap_err().contains("tokenz"));
        assert!(from_config("[]").is_err());
        assert!(from_config("nope").is_err());
    }

    #[test]
    fn the_environment_wins_over_the_config_file() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!load(None, dir.path()).unwrap().is_enabled());
        std::fs::write(dir.path().join(CONFIG_FILE), r#"{"tokens": {"alice": "ka"}}"#).unwrap();
        assert_eq!(load(None, dir.path()).unwrap().principal_of("ka").as_deref(), Some("alice"));
        assert_eq!(load(Some("  "), dir.path()).unwrap().principal_of("ka").as_deref(), Some("alice"));
        let env = load(Some("e1, ,e2"), dir.path()).unwrap();
        assert_eq!(env.principal_of("ka"), None);
        assert_eq!(env.len(), 2);
        assert_eq!(env.principal_of("e2"), Some(principal_for_token("e2")));
    }
}
