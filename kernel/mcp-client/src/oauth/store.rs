//! A server's OAuth tokens on disk: `DATA_DIR/mcp-oauth/NAME.json`, mode 0600 in a 0700
//! directory (the data directory is denied to every sandboxed process), bound to the URL
//! they were granted for: a server whose settings now name another URL gets no token.
//! Written whole to a temporary file and renamed, so a kernel refreshing and a `superpi mcp
//! login` never leave half a file.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

/// The file of `name`'s tokens under `data_dir`.
pub fn token_path(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join("mcp-oauth").join(format!("{name}.json"))
}

#[derive(Serialize, Deserialize)]
struct Saved {
    url: String,
    credentials: StoredCredentials,
}

/// rmcp's credential store over one server's file.
pub struct FileStore {
    pub path: PathBuf,
    pub url: String,
}

impl FileStore {
    /// The stored credentials, when the file holds some for this URL.
    pub fn read(&self) -> Result<Option<StoredCredentials>, std::io::Error> {
        let text = match std::fs::read(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        let saved: Saved = serde_json::from_slice(&text).map_err(std::io::Error::other)?;
        Ok((saved.url == self.url).then_some(saved.credentials))
    }

    fn write(&self, credentials: StoredCredentials) -> Result<(), std::io::Error> {
        let dir = self.path.parent().ok_or_else(|| std::io::Error::other("no directory"))?;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        let text = serde_json::to_vec(&Saved { url: self.url.clone(), credentials }).map_err(std::io::Error::other)?;
        let fresh = self.path.with_extension(format!("json.{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&fresh)?;
        file.write_all(&text)?;
        file.sync_all()?;
        std::fs::rename(&fresh, &self.path)
    }
}

fn failed(err: std::io::Error) -> AuthError {
    AuthError::CredentialStoreError(err.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for FileStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(failed)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials).map_err(failed)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(failed(err)),
            _ => Ok(()),
        }
    }
}
