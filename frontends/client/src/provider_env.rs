//! Keys that take effect: the frontend's provider variables as `hello` carries them (names and
//! digests, never values), and the wait for a kernel that stops so that one with this
//! frontend's environment can start.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use superpi_proto::message::is_provider_variable;

use crate::{ClientError, Locations};

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

/// Waits until no kernel holds the data directory's lock (a kernel that stopped for us has
/// exited and removed its socket), for at most `timeout`.
pub(crate) async fn wait_for_release(locations: &Locations, timeout: Duration) -> Result<(), ClientError> {
    let deadline = Instant::now() + timeout;
    let mut delay = Duration::from_millis(2);
    while is_locked(&locations.lock_path())? {
        if Instant::now() >= deadline {
            return Err(ClientError::NoKernel(format!(
                "the kernel that stopped for this frontend's provider variables still holds {} after {timeout:?}",
                locations.lock_path().display()
            )));
        }
        // Polling a lock that a dying process is about to release: back off up to 50 ms.
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(50));
    }
    Ok(())
}

/// Whether a kernel holds `path` (its flock). Taking the lock to find out releases it at once.
fn is_locked(path: &Path) -> Result<bool, ClientError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err.into()),
    };
    match file.try_lock() {
        Ok(()) => Ok(false),
        Err(std::fs::TryLockError::WouldBlock) => Ok(true),
        Err(std::fs::TryLockError::Error(err)) => Err(err.into()),
    }
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

    #[tokio::test]
    async fn a_held_lock_is_waited_for_and_a_free_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let locations = Locations {
            data_dir: dir.path().to_path_buf(),
            config_dir: dir.path().to_path_buf(),
            runtime_dir: dir.path().to_path_buf(),
        };
        wait_for_release(&locations, Duration::from_millis(10)).await.unwrap();
        let held = std::fs::File::create(locations.lock_path()).unwrap();
        held.lock().unwrap();
        assert!(wait_for_release(&locations, Duration::from_millis(30)).await.is_err());
        drop(held);
        wait_for_release(&locations, Duration::from_millis(30)).await.unwrap();
    }
}
