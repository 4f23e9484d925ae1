//! Tokens for `auth.login`: where they come from and which principal each stands for.
//!
//! With no token configured, authentication is off and every caller is the principal
//! `local`. The tokens are `SUPERPI_TOKENS` and `rpc.json` of the config directory, by
//! superpi-client's one rule for every frontend that takes tokens ([`load_tokens`]: the two
//! count together). A listed token is named by [`principal_for_token`] (the gateway and AG-UI
//! name their bearer tokens with the same function, so one token reaches the same
//! conversations through all three); a token of `rpc.json`'s map is the principal it is named
//! by.
//!
//! [`load_tokens`]: superpi_client::tokens::load_tokens

use std::path::Path;

pub use superpi_client::principal::{LOCAL_PRINCIPAL, TokenTable as Tokens, principal_for_token};
pub use superpi_client::tokens::TokenFileError;

/// The environment variable with comma-separated tokens.
pub const TOKENS_VAR: &str = "SUPERPI_TOKENS";
/// The file of the config dir with the server's tokens.
pub const CONFIG_FILE: &str = "rpc.json";

/// The tokens of `SUPERPI_TOKENS` (its value, `None` when unset) and of `rpc.json` in
/// `config_dir`, together.
pub fn load(env_value: Option<&str>, config_dir: &Path) -> Result<Tokens, TokenFileError> {
    superpi_client::tokens::load_tokens(env_value, config_dir, CONFIG_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_and_the_config_file_count_together() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!load(None, dir.path()).unwrap().is_enabled());
        std::fs::write(dir.path().join(CONFIG_FILE), r#"{"tokens": {"alice": "ka"}}"#).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path().join(CONFIG_FILE), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(load(None, dir.path()).unwrap().principal_of("ka").as_deref(), Some("alice"));
        assert_eq!(load(Some("  "), dir.path()).unwrap().principal_of("ka").as_deref(), Some("alice"));
        let both = load(Some("e1, ,e2"), dir.path()).unwrap();
        assert_eq!(both.principal_of("ka").as_deref(), Some("alice"));
        assert_eq!(both.len(), 3);
        assert_eq!(both.principal_of("e2"), Some(principal_for_token("e2")));
    }
}
