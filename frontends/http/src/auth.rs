//! Bearer tokens and the bind rule.

use std::net::IpAddr;
use std::path::Path;

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::{self, ConfigError};

/// The configured bearer tokens. Empty means authentication is off.
#[derive(Clone, Default)]
pub struct Tokens {
    tokens: Vec<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret.
        f.debug_struct("Tokens").field("count", &self.tokens.len()).finish()
    }
}

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

impl Tokens {
    /// Reads a comma-separated list; blanks around and between entries are ignored.
    pub fn parse(list: &str) -> Self {
        let tokens = list.split(',').map(str::trim).filter(|t| !t.is_empty()).map(String::from).collect();
        Tokens { tokens }
    }

    /// Tokens from an environment variable (unset means none).
    pub fn from_env(var: &str) -> Self {
        std::env::var(var).map(|v| Self::parse(&v)).unwrap_or_default()
    }

    /// The tokens of an environment variable's value (comma-separated; `None` when unset)
    /// merged with those of `gateway.json` in `config_dir` (a missing file adds none). A token
    /// named in both counts once. A `gateway.json` that cannot be read or parsed is an error.
    pub fn load(env_value: Option<&str>, config_dir: &Path) -> Result<Self, ConfigError> {
        let mut tokens = env_value.map(Self::parse).unwrap_or_default().tokens;
        for token in config::read_tokens(config_dir)? {
            if !tokens.contains(&token) {
                tokens.push(token);
            }
        }
        Ok(Tokens { tokens })
    }

    /// The entries themselves (for lists that are not secrets, read the same way).
    pub fn into_vec(self) -> Vec<String> {
        self.tokens
    }

    pub fn is_enabled(&self) -> bool {
        !self.tokens.is_empty()
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Checks the `Authorization: Bearer` header. With tokens configured, answers the
    /// principal the token stands for; with none, `Ok(None)`.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Option<String>, AuthError> {
        if !self.is_enabled() {
            return Ok(None);
        }
        let value = headers.get(AUTHORIZATION).ok_or(AuthError::Missing)?;
        let value = value.to_str().map_err(|_| AuthError::Invalid)?.trim();
        let (scheme, token) = value.split_once(' ').ok_or(AuthError::Invalid)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::Invalid);
        }
        self.principal_of(token.trim()).map(Some).ok_or(AuthError::Invalid)
    }

    /// The principal of a token, when it is one of the configured ones. Every configured
    /// token is compared in constant time so the answer's timing tells nothing.
    pub fn principal_of(&self, token: &str) -> Option<String> {
        let mut found = false;
        for known in &self.tokens {
            found |= bool::from(known.as_bytes().ct_eq(token.as_bytes()));
        }
        found.then(|| principal_for(token))
    }
}

/// A token's principal: `key-` and the first 16 hex digits of its SHA-256. Stable across
/// restarts and reorderings of the list, and it reveals nothing of the token.
pub fn principal_for(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    let mut out = String::from("key-");
    for byte in &digest[..8] {
        out.push_str(&format!("{byte:02x}"));
    }
    out
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
        let tokens = Tokens::parse(" a , ,b,");
        assert_eq!(tokens.len(), 2);
        assert!(Tokens::parse(" , ").is_empty());
    }

    #[test]
    fn authentication_off_lets_everyone_in() {
        assert_eq!(Tokens::default().authenticate(&HeaderMap::new()), Ok(None));
    }

    #[test]
    fn tokens_decide_and_name_the_principal() {
        let tokens = Tokens::parse("one,two");
        assert_eq!(tokens.authenticate(&HeaderMap::new()), Err(AuthError::Missing));
        assert_eq!(tokens.authenticate(&bearer("Bearer three")), Err(AuthError::Invalid));
        assert_eq!(tokens.authenticate(&bearer("Basic one")), Err(AuthError::Invalid));
        assert_eq!(tokens.authenticate(&bearer("Bearer")), Err(AuthError::Invalid));
        let one = tokens.authenticate(&bearer("Bearer one")).unwrap().unwrap();
        let two = tokens.authenticate(&bearer("bearer  two ")).unwrap().unwrap();
        assert_ne!(one, two);
        assert_eq!(one, principal_for("one"));
        assert!(one.starts_with("key-") && one.len() == 20);
        // A prefix of a token is not the token.
        assert_eq!(tokens.authenticate(&bearer("Bearer on")), Err(AuthError::Invalid));
    }

    #[test]
    fn load_merges_the_environment_and_gateway_json() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!Tokens::load(None, dir.path()).unwrap().is_enabled());
        assert_eq!(Tokens::load(Some("e1, e2"), dir.path()).unwrap().len(), 2);
        std::fs::write(dir.path().join(crate::CONFIG_FILE), r#"{"tokens": ["f1", "e2"]}"#).unwrap();
        let file_only = Tokens::load(None, dir.path()).unwrap();
        assert_eq!(file_only.len(), 2);
        assert_eq!(file_only.principal_of("f1"), Some(principal_for("f1")));
        assert_eq!(Tokens::load(Some(" , "), dir.path()).unwrap().len(), 2);
        let both = Tokens::load(Some("e1,e2"), dir.path()).unwrap();
        assert_eq!(both.len(), 3, "e2 is named twice and counts once");
        for token in ["e1", "e2", "f1"] {
            assert_eq!(both.principal_of(token), Some(principal_for(token)), "{token}");
        }
        assert_eq!(both.principal_of("f2"), None);
        // Tokens from the file alone satisfy the bind rule.
        assert!(check_bind("0.0.0.0".parse().unwrap(), &file_only, "V").is_ok());
        assert!(!format!("{both:?}").contains("f1"), "Debug never prints a token");

        std::fs::write(dir.path().join(crate::CONFIG_FILE), r#"{"tokens": ["f1"], "extra": 1}"#).unwrap();
        let err = Tokens::load(Some("e1"), dir.path()).unwrap_err().to_string();
        assert!(err.contains("gateway.json") && err.contains("`extra`"), "{err}");
    }

    #[test]
    fn bind_rule() {
        let none = Tokens::default();
        let some = Tokens::parse("k");
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
