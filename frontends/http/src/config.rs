//! `gateway.json` in the config dir: bearer tokens kept in a file rather than the environment.
//!
//! The kernel's `settings.json` is read strictly by the policy crate and holds no secrets, so
//! the HTTP frontends keep their tokens in a file of their own, as the RPC frontend does with
//! `rpc.json`. The file is strict too: its only key is `tokens`, a list of strings.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The file of the config dir with the HTTP frontends' bearer tokens.
pub const CONFIG_FILE: &str = "gateway.json";

/// A `gateway.json` that cannot be used; the frontend refuses to start.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GatewayFile {
    #[serde(default)]
    tokens: Vec<String>,
}

/// The tokens of `gateway.json` in `config_dir`; none when the file does not exist.
pub(crate) fn read_tokens(config_dir: &Path) -> Result<Vec<String>, ConfigError> {
    let path = config_dir.join(CONFIG_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(ConfigError::Read { path, source }),
    };
    parse_tokens(&text).map_err(|message| ConfigError::Invalid { path, message })
}

/// Reads a `gateway.json` document: `{"tokens": ["...", ...]}`. Any other key, a token that is
/// not a string, or a blank token is an error.
pub(crate) fn parse_tokens(text: &str) -> Result<Vec<String>, String> {
    let file: GatewayFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut tokens = Vec::with_capacity(file.tokens.len());
    for (i, token) in file.tokens.iter().enumerate() {
        let token = token.trim();
        if token.is_empty() {
            return Err(format!("tokens[{i}] is blank"));
        }
        tokens.push(token.to_string());
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_holds_a_list_of_tokens() {
        assert_eq!(parse_tokens(r#"{"tokens": ["a", " b "]}"#).unwrap(), ["a", "b"]);
        assert!(parse_tokens("{}").unwrap().is_empty());
        assert!(parse_tokens(r#"{"tokens": []}"#).unwrap().is_empty());
    }

    #[test]
    fn the_file_is_strict() {
        let err = parse_tokens(r#"{"tokens": ["a"], "tokenz": ["b"]}"#).unwrap_err();
        assert!(err.contains("unknown field `tokenz`"), "{err}");
        assert!(parse_tokens(r#"{"tokens": "a,b"}"#).is_err());
        assert!(parse_tokens(r#"{"tokens": [1]}"#).is_err());
        assert!(parse_tokens(r#"{"tokens": null}"#).is_err());
        assert!(parse_tokens(r#"["a"]"#).is_err());
        assert!(parse_tokens("not json").is_err());
        assert_eq!(parse_tokens(r#"{"tokens": ["a", "  "]}"#).unwrap_err(), "tokens[1] is blank");
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_tokens(dir.path()).unwrap().is_empty(), "a missing file adds no tokens");
        std::fs::write(dir.path().join(CONFIG_FILE), r#"{"token": ["a"]}"#).unwrap();
        let err = read_tokens(dir.path()).unwrap_err().to_string();
        assert!(err.contains(&dir.path().join("gateway.json").display().to_string()), "{err}");
        assert!(err.contains("`token`"), "{err}");
        // A directory where the file should be cannot be read: an error, not "no tokens".
        let other = tempfile::tempdir().unwrap();
        std::fs::create_dir(other.path().join(CONFIG_FILE)).unwrap();
        let err = read_tokens(other.path()).unwrap_err();
        assert!(matches!(err, ConfigError::Read { .. }), "{err:?}");
    }
}
