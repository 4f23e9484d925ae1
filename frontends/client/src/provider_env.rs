//! Keys that take effect: the frontend's provider variables as `hello` carries them (names and
//! digests, never values). The wait for a kernel that stops for them is `Locations`'.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};
use superpi_proto::message::is_provider_variable;

/// The digests of the provider variables among `vars` that are not blank (blank counts as
/// unset, as the providers read them).
pub fn provider_env_digests(vars: impl IntoIterator<Item = (String, String)>) -> BTreeMap<String, String> {
    vars.into_iter()
        .filter(|(name, value)| is_provider_variable(name) && !value.trim().is_empty())
        .map(|(name, value)| {
            let digest = digest(&value);
            (name, digest)
        })
        .collect()
}

/// The digests of this process's provider variables (those that are valid UTF-8, as the
/// providers read them).
pub fn process_provider_env() -> BTreeMap<String, String> {
    provider_env_digests(
        std::env::vars_os().filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?))),
    )
}

/// The first 16 hex digits of the value's SHA-256: enough to tell values apart, not to
/// recover a key.
fn digest(value: &str) -> String {
    Sha256::digest(value.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_set_provider_variables_are_digested_and_no_value_is_kept() {
        let vars = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let digests = provider_env_digests(vars(&[
            ("OPENAI_API_KEY", "sk-secret"),
            ("GEMINI_API_KEY", "  "),
            ("OPENROUTER_API_KEY", "sk-or"),
            ("HOME", "/home/x"),
        ]));
        assert_eq!(digests.keys().collect::<Vec<_>>(), ["OPENAI_API_KEY", "OPENROUTER_API_KEY"]);
        let value = &digests["OPENAI_API_KEY"];
        assert_eq!(value.len(), 16);
        assert!(!value.contains("secret"));
        let other = provider_env_digests(vars(&[("OPENAI_API_KEY", "sk-other")]));
        assert_ne!(other["OPENAI_API_KEY"], *value, "different values, different digests");
        let same = provider_env_digests(vars(&[("OPENAI_API_KEY", "sk-secret")]));
        assert_eq!(same["OPENAI_API_KEY"], *value);
    }
}
