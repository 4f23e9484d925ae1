//! Principals named from tokens: the one rule every frontend that takes tokens uses, so one
//! token reaches the same conversations through the RPC server, the gateway and AG-UI.
//!
//! A listed token's principal is `key-` and the first 16 hex digits of its SHA-256: stable
//! across restarts and reorderings of the list, and it reveals nothing of the token. With no
//! token configured, every caller is [`LOCAL_PRINCIPAL`].

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The principal of every caller when authentication is off (and of a local frontend).
pub const LOCAL_PRINCIPAL: &str = "local";

/// A listed token's principal: `key-` and the first 16 hex digits of its SHA-256.
pub fn principal_for_token(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    let mut out = String::from("key-");
    for byte in &digest[..8] {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// Known tokens and the principal each stands for. Empty means authentication is off.
#[derive(Clone, Default)]
pub struct TokenTable {
    entries: Vec<(String, String)>,
}

impl std::fmt::Debug for TokenTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret.
        f.debug_struct("TokenTable").field("count", &self.entries.len()).finish()
    }
}

/// The entries of a comma-separated list; blanks around and between entries are ignored.
pub fn split_list(list: &str) -> Vec<String> {
    list.split(',').map(str::trim).filter(|t| !t.is_empty()).map(String::from).collect()
}

impl TokenTable {
    /// The tokens of a comma-separated list, each named by [`principal_for_token`].
    pub fn parse_list(list: &str) -> Self {
        let mut table = TokenTable::default();
        for token in split_list(list) {
            table.add_listed(&token);
        }
        table
    }

    /// Adds a token named by [`principal_for_token`]; a token already known counts once.
    pub fn add_listed(&mut self, token: &str) {
        self.add_named(token, &principal_for_token(token));
    }

    /// Adds a token standing for a principal of the configuration's choosing; a token already
    /// known keeps its first principal.
    pub fn add_named(&mut self, token: &str, principal: &str) {
        let token = token.trim();
        if !token.is_empty() && !self.entries.iter().any(|(known, _)| known == token) {
            self.entries.push((token.to_string(), principal.to_string()));
        }
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

    /// The principal of a token, when it is a known one. Every known token is compared in
    /// constant time, so the answer's timing tells nothing of them.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_names_principals_by_hash() {
        let tokens = TokenTable::parse_list(" one , ,two,one");
        assert_eq!(tokens.len(), 2, "blanks are skipped and a repeated token counts once");
        assert_eq!(tokens.principal_of("one"), Some(principal_for_token("one")));
        assert_eq!(tokens.principal_of("two"), Some(principal_for_token("two")));
        assert_eq!(tokens.principal_of("three"), None);
        assert_eq!(tokens.principal_of("on"), None, "a prefix of a token is not the token");
        assert_eq!(tokens.principal_of(""), None);
        assert!(!TokenTable::parse_list(" , ").is_enabled());
        assert!(!format!("{tokens:?}").contains("one"), "Debug never prints a token");
    }

    #[test]
    fn the_principal_is_stable_and_reveals_nothing() {
        // SHA-256("one") starts 7692c3ad3540bb80.
        assert_eq!(principal_for_token("one"), "key-7692c3ad3540bb80");
        assert_ne!(principal_for_token("one"), principal_for_token("two"));
        assert!(!principal_for_token("secret").contains("secret"));
    }

    #[test]
    fn named_tokens_keep_their_principal() {
        let mut tokens = TokenTable::default();
        tokens.add_named("ka", "alice");
        tokens.add_named(" ka ", "mallory");
        tokens.add_listed("kb");
        assert_eq!(tokens.principal_of("ka").as_deref(), Some("alice"));
        assert_eq!(tokens.principal_of("kb"), Some(principal_for_token("kb")));
        assert_eq!(tokens.len(), 2);
    }
}
