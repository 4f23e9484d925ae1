//! Bearer tokens and the bind rule.
//!
//! Tokens come from [`TOKEN_VAR`](crate::TOKEN_VAR) and `gateway.json` in the config dir, by
//! superpi-client's one rule for every frontend that takes tokens (the two count together; the
//! file is a list of tokens or a map from principal to token). A listed token's principal is
//! superpi-client's [`principal_for_token`], the function the RPC server names its listed
//! tokens with, so one token reaches the same conversations through every frontend.

use std::net::IpAddr;
use std::path::Path;

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
pub use superpi_client::principal::{TokenTable as Tokens, principal_for_token};

pub use superpi_client::tokens::TokenFileError;

/// The file of the config dir with the HTTP frontends' bearer tokens.
pub const CONFIG_FILE: &str = "gateway.json";

/// Why a request was not authenticated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("missing bearer token: send `Authorization: Bearer <token>`")]
    Missing,
    #[error("invalid bearer token")]
    Invalid,
}

/// A listener the bind rule refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "refusing to listen on the non-loopback address {0} without a token: set {1} (comma-separated tokens) or `tokens` in gateway.json of the config dir, or bind 127.0.0.1"
)]
pub struct BindError(pub IpAddr, pub &'static str);

/// The tokens of an environment variable's value (comma-separated; `None` when unset)
/// and of `gateway.json` in `config_dir` (a missing file adds none), together. A token named
/// in both counts once. A `gateway.json` that cannot be read or parsed is an error.
pub fn load_tokens(env_value: Option<&str>, config_dir: &Path) -> Result<Tokens, TokenFileError> {
    superpi_client::tokens::load_tokens(env_value, config_dir, CONFIG_FILE)
}

/// Checks the `Authorization: Bearer` header. With tokens configured, answers the principal
/// the token stands for; with none, `Ok(None)`.
pub fn authenticate(tokens: &Tokens, headers: &HeaderMap) -> Result<Option<String>, AuthError> {
    if !tokens.is_enabled() {
        return Ok(None);
    }
    let value = headers.get(AUTHORIZATION).ok_or(AuthError::Missing)?;
    let value = value.to_str().map_err(|_| AuthError::Invalid)?.trim();
    let (scheme, token) = value.split_once(' ').ok_or(AuthError::Invalid)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Invalid);
    }
    tokens.principal_of(token.trim()).map(Some).ok_or(AuthError::Invalid)
}

/// The bind rule: a non-loopback address needs a token. `var` names the variable to set.
pub fn check_bind(ip: IpAddr, tokens: &Tokens, var: &'static str) -> Result<(), BindError> {
    if ip.is_loopback() || tokens.is_enabled() { Ok(()) } else { Err(BindError(ip, var)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn bearer(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn parse_ignores_blanks() {
        let tokens = Tokens::parse_list(" a , ,b,");
        assert_eq!(tokens.len(), 2);
        assert!(Tokens::parse_list(" , ").is_empty());
    }

    #[test]
    fn authentication_off_lets_everyone_in() {
        assert_eq!(authenticate(&Tokens::default(), &HeaderMap::new()), Ok(None));
    }

    #[test]
    fn tokens_decide_and_name_the_principal() {
        let tokens = Tokens::parse_list("one,two");
        assert_eq!(authenticate(&tokens, &HeaderMap::new()), Err(AuthError::Missing));
        assert_eq!(authenticate(&tokens, &bearer("Bearer three")), Err(AuthError::Invalid));
        assert_eq!(authenticate(&tokens, &bearer("Basic one")), Err(AuthError::Invalid));
        assert_eq!(authenticate(&tokens, &bearer("Bearer")), Err(AuthError::Invalid));
        let one = authenticate(&tokens, &bearer("Bearer one")).unwrap().unwrap();
        let two = authenticate(&tokens, &bearer("bearer  two ")).unwrap().unwrap();
        assert_ne!(one, two);
        assert_eq!(one, principal_for_token("one"));
        assert!(one.starts_with("key-") && one.len() == 20);
        // A prefix of a token is not the token.
        assert_eq!(authenticate(&tokens, &bearer("Bearer on")), Err(AuthError::Invalid));
    }

    #[test]
    fn load_merges_the_environment_and_gateway_json() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!load_tokens(None, dir.path()).unwrap().is_enabled());
        assert_eq!(load_tokens(Some("e1, e2"), dir.path()).unwrap().len(), 2);
        std::fs::write(dir.path().join(crate::CONFIG_FILE), r#"{"tokens": ["f1", "e2"]}"#).unwrap();
        let private = std::os::unix::fs::PermissionsExt::from_mode(0o600);
        std::fs::set_permissions(dir.path().join(crate::CONFIG_FILE), private).unwrap();
        let file_only = load_tokens(None, dir.path()).unwrap();
        assert_eq!(file_only.len(), 2);
        assert_eq!(file_only.principal_of("f1"), Some(principal_for_token("f1")));
        assert_eq!(load_tokens(Some(" , "), dir.path()).unwrap().len(), 2);
        let both = load_tokens(Some("e1,e2"), dir.path()).unwrap();
        assert_eq!(both.len(), 3, "e2 is named twice and counts once");
        for token in ["e1", "e2", "f1"] {
            assert_eq!(both.principal_of(token), Some(principal_for_token(token)), "{token}");
        }
        assert_eq!(both.principal_of("f2"), None);
        // Tokens from the file alone satisfy the bind rule.
        assert!(check_bind("0.0.0.0".parse().unwrap(), &file_only, "V").is_ok());
        assert!(!format!("{both:?}").contains("f1"), "Debug never prints a token");

        std::fs::write(dir.path().join(crate::CONFIG_FILE), r#"{"tokens": ["f1"], "extra": 1}"#).unwrap();
        let err = load_tokens(Some("e1"), dir.path()).unwrap_err().to_string();
        assert!(err.contains("gateway.json") && err.contains("`extra`"), "{err}");
    }

    #[test]
    fn bind_rule() {
        let none = Tokens::default();
        let some = Tokens::parse_list("k");
        assert!(check_bind("127.0.0.1".parse().unwrap(), &none, "V").is_ok());
        assert!(check_bind("::1".parse().unwrap(), &none, "V").is_ok());
        assert!(check_bind("0.0.0.0".parse().unwrap(), &none, "V").is_err());
        assert!(check_bind("192.168.1.2".parse().unwrap(), &none, "V").is_err());
        assert!(check_bind("0.0.0.0".parse().unwrap(), &some, "V").is_ok());
        let err = check_bind("::".parse().unwrap(), &none, "SUPERPI_GATEWAY_TOKEN").unwrap_err();
        assert!(err.to_string().contains("SUPERPI_GATEWAY_TOKEN"));
        assert!(err.to_string().contains("gateway.json"));
    }
}
