//! Where a frontend's tokens come from: one rule for every frontend that takes them
//! (`superpi rpc`: `SUPERPI_TOKENS` and `rpc.json`; `superpi gateway` and `superpi agui`:
//! `SUPERPI_GATEWAY_TOKEN` and `gateway.json`).
//!
//! The rule: the variable's tokens (comma-separated) and the file's count together; a token
//! named in both counts once, with the file's principal. The file (in the config directory,
//! never `settings.json`, which the kernel reads strictly and which holds no secrets) has one
//! key, `tokens`: a list of tokens, each its own principal ([`principal_for_token`]), or a
//! map from principal to token. Anything else in it stops the frontend with an error naming
//! the file and what is wrong; a missing file adds no tokens. A file that its group or
//! others may read or write (`mode & 0o077`) is refused, with the `chmod 600` that fixes it:
//! its tokens may already be someone else's.
//!
//! [`principal_for_token`]: crate::principal::principal_for_token

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::principal::TokenTable;

/// A token file that cannot be used; the frontend refuses to start.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("reading {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error(
        "{path} holds tokens but its group or others may read or write it (mode {mode:o}); \
         run `chmod 600 {path}` (and replace its tokens if others could read them)",
        path = path.display()
    )]
    Exposed { path: PathBuf, mode: u32 },
}

/// The tokens of `env_value` (the variable's value; `None` when unset) and of the file
/// `file_name` in `config_dir`, by the rule of this module.
pub fn load_tokens(env_value: Option<&str>, config_dir: &Path, file_name: &str) -> Result<TokenTable, TokenFileError> {
    let path = config_dir.join(file_name);
    let mut tokens = match read_private(&path) {
        Ok(Some(text)) => parse_token_file(&text).map_err(|message| TokenFileError::Invalid { path, message })?,
        Ok(None) => TokenTable::default(),
        Err(err) => return Err(err),
    };
    for token in env_value.map(crate::principal::split_list).unwrap_or_default() {
        tokens.add_listed(&token);
    }
    Ok(tokens)
}

/// A token file's text, `None` when there is none; an error when its group or others may read
/// or write it (checked on the open file, so the mode and the text are the same file's).
fn read_private(path: &Path) -> Result<Option<String>, TokenFileError> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let read_error = |source| TokenFileError::Read { path: path.to_path_buf(), source };
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(read_error(source)),
    };
    let meta = file.metadata().map_err(read_error)?;
    let mode = meta.permissions().mode() & 0o7777;
    // Not a file (a directory): reading it says what is wrong.
    if meta.is_file() && mode & 0o077 != 0 {
        return Err(TokenFileError::Exposed { path: path.to_path_buf(), mode });
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(read_error)?;
    Ok(Some(text))
}

/// Reads a token file: `{"tokens": ["token", ...]}` or `{"tokens": {"principal": "token",
/// ...}}`. Another key, a token that is not a string, a blank token or principal is an error.
pub fn parse_token_file(text: &str) -> Result<TokenTable, String> {
    let file: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(file) = file else {
        return Err("the file must hold a JSON object".into());
    };
    if let Some(key) = file.keys().find(|k| k.as_str() != "tokens") {
        return Err(format!("unknown key `{key}` (the only key is `tokens`)"));
    }
    let mut table = TokenTable::default();
    match file.get("tokens") {
        None => {}
        Some(Value::Array(list)) => {
            for (i, token) in list.iter().enumerate() {
                let token = token.as_str().ok_or_else(|| format!("tokens[{i}] is not a string"))?;
                if token.trim().is_empty() {
                    return Err(format!("tokens[{i}] is blank"));
                }
                table.add_listed(token.trim());
            }
        }
        Some(Value::Object(map)) => {
            for (principal, token) in map {
                let token = token.as_str().ok_or_else(|| format!("tokens.{principal} is not a string"))?;
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
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::principal::principal_for_token;

    fn write_private(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    #[test]
    fn the_file_gives_a_list_or_named_principals() {
        let t = parse_token_file(r#"{"tokens": {"alice": "ka", "bob": "kb"}}"#).unwrap();
        assert_eq!(t.principal_of("ka").as_deref(), Some("alice"));
        assert_eq!(t.principal_of("kb").as_deref(), Some("bob"));
        let t = parse_token_file(r#"{"tokens": ["x", " y "]}"#).unwrap();
        assert_eq!(t.principal_of("x"), Some(principal_for_token("x")));
        assert_eq!(t.principal_of("y"), Some(principal_for_token("y")));
        assert!(!parse_token_file("{}").unwrap().is_enabled());
        assert!(!parse_token_file(r#"{"tokens": []}"#).unwrap().is_enabled());
    }

    #[test]
    fn the_file_is_strict() {
        assert!(parse_token_file(r#"{"tokens": [], "tokenz": []}"#).unwrap_err().contains("`tokenz`"));
        assert_eq!(parse_token_file(r#"{"tokens": [1]}"#).unwrap_err(), "tokens[0] is not a string");
        assert_eq!(parse_token_file(r#"{"tokens": ["a", "  "]}"#).unwrap_err(), "tokens[1] is blank");
        assert!(parse_token_file(r#"{"tokens": {"alice": " "}}"#).is_err());
        assert!(parse_token_file(r#"{"tokens": {"alice": 1}}"#).is_err());
        for bad in [r#"{"tokens": "a,b"}"#, r#"{"tokens": null}"#, r#"["a"]"#, "not json"] {
            assert!(parse_token_file(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_variable_and_the_file_count_together() {
        let dir = tempfile::tempdir().unwrap();
        let file = "tokens.json";
        assert!(!load_tokens(None, dir.path(), file).unwrap().is_enabled(), "a missing file adds none");
        assert_eq!(load_tokens(Some("e1, ,e2"), dir.path(), file).unwrap().len(), 2);
        write_private(&dir.path().join(file), r#"{"tokens": {"alice": "ka", "bob": "e2"}}"#);
        assert_eq!(load_tokens(Some("  "), dir.path(), file).unwrap().len(), 2);
        let both = load_tokens(Some("e1,e2"), dir.path(), file).unwrap();
        assert_eq!(both.len(), 3, "e2 is named twice and counts once");
        assert_eq!(both.principal_of("ka").as_deref(), Some("alice"));
        assert_eq!(both.principal_of("e2").as_deref(), Some("bob"), "the file names a token in both");
        assert_eq!(both.principal_of("e1"), Some(principal_for_token("e1")));
    }

    #[test]
    fn errors_name_the_file_and_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        write_private(&dir.path().join("gateway.json"), r#"{"token": ["a"]}"#);
        let err = load_tokens(Some("e1"), dir.path(), "gateway.json").unwrap_err().to_string();
        assert!(err.contains(&dir.path().join("gateway.json").display().to_string()), "{err}");
        assert!(err.contains("`token`"), "{err}");
        // A directory where the file should be cannot be read: an error, not "no tokens".
        std::fs::create_dir(dir.path().join("rpc.json")).unwrap();
        let err = load_tokens(None, dir.path(), "rpc.json").unwrap_err();
        assert!(matches!(err, TokenFileError::Read { .. }), "{err:?}");
    }

    #[test]
    fn a_file_others_may_read_or_write_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rpc.json");
        write_private(&path, r#"{"tokens": ["k"]}"#);
        assert!(load_tokens(None, dir.path(), "rpc.json").unwrap().is_enabled());
        for mode in [0o644, 0o640, 0o604, 0o620, 0o602, 0o660] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = load_tokens(None, dir.path(), "rpc.json").unwrap_err();
            assert!(matches!(err, TokenFileError::Exposed { .. }), "{mode:o}: {err:?}");
            let said = err.to_string();
            assert!(said.contains(&format!("run `chmod 600 {}`", path.display())), "{said}");
            assert!(said.contains(&format!("mode {mode:o}")), "{said}");
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert!(load_tokens(None, dir.path(), "rpc.json").unwrap().is_enabled());
    }
}
