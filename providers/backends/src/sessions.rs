//! Where a backend's state lives under the kernel's data directory:
//! `backends/ID/home` is the program's own home and configuration directory (its transcripts,
//! the one place it may write besides the workspace), and `backends/ID/sessions/CONV` holds the
//! backend's session id of a conversation, so the conversation continues after a restart.
//! The sessions directory is not the program's to write.

use std::io::Write;
use std::path::{Path, PathBuf};

use superpi_policy::BackendKind;

/// The state directories of one kernel's backends.
#[derive(Debug, Clone)]
pub struct Sessions {
    root: PathBuf,
}

impl Sessions {
    pub fn new(data_dir: &Path) -> Self {
        Sessions { root: data_dir.join("backends") }
    }

    /// The program's home directory, made (0700) when missing.
    pub fn home(&self, kind: BackendKind) -> std::io::Result<PathBuf> {
        let dir = self.root.join(kind.id()).join("home");
        make_private_dir(&dir)?;
        Ok(dir)
    }

    /// The backend's session id of a conversation, when one was stored.
    pub fn get(&self, kind: BackendKind, conversation_id: i64) -> Option<String> {
        let text = std::fs::read_to_string(self.path(kind, conversation_id)).ok()?;
        let id = text.trim();
        (!id.is_empty()).then(|| id.to_string())
    }

    /// Stores the session id durably (a new file renamed over the old one, synced).
    pub fn set(&self, kind: BackendKind, conversation_id: i64, session: &str) -> std::io::Result<()> {
        let path = self.path(kind, conversation_id);
        let dir = path.parent().unwrap_or(&self.root);
        make_private_dir(dir)?;
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(session.as_bytes())?;
        file.as_file().sync_all()?;
        file.persist(&path).map_err(|e| e.error)?;
        std::fs::File::open(dir)?.sync_all()
    }

    fn path(&self, kind: BackendKind, conversation_id: i64) -> PathBuf {
        self.root.join(kind.id()).join("sessions").join(conversation_id.to_string())
    }
}

fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_survives_a_new_instance_and_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = Sessions::new(dir.path());
        assert_eq!(sessions.get(BackendKind::ClaudeCode, 7), None);
        sessions.set(BackendKind::ClaudeCode, 7, "s-1").unwrap();
        sessions.set(BackendKind::ClaudeCode, 7, "s-2").unwrap();
        let again = Sessions::new(dir.path());
        assert_eq!(again.get(BackendKind::ClaudeCode, 7).as_deref(), Some("s-2"));
        assert_eq!(again.get(BackendKind::Codex, 7), None);
        assert!(again.home(BackendKind::ClaudeCode).unwrap().ends_with("backends/claude-code/home"));
    }
}
