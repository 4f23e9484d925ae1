//! Where a backend's state lives under the kernel's data directory:
//! `backends/ID/home` is the program's own home and configuration directory (its transcripts,
//! the one place it may write besides the workspace), and `backends/ID/sessions/CONV` holds the
//! backend's session id of a conversation, so the conversation continues after a restart, with
//! the seq of the last history entry that session saw (`through_seq`, on a second line), so a
//! kernel can tell a session that missed turns run elsewhere (another kernel on a shared
//! database, whose machine keeps its own sessions). The sessions directory is not the program's
//! to write.

use std::io::Write;
use std::path::{Path, PathBuf};

use superpi_policy::BackendKind;

/// A conversation's backend session as this machine keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    pub id: String,
    /// The seq of the last entry of the conversation's history the session saw; `None` when an
    /// older kernel stored the id alone.
    pub through_seq: Option<u64>,
}

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

    /// The backend's session of a conversation, when one was stored here.
    pub fn get(&self, kind: BackendKind, conversation_id: i64) -> Option<SessionRecord> {
        let text = std::fs::read_to_string(self.path(kind, conversation_id)).ok()?;
        let mut lines = text.lines();
        let id = lines.next()?.trim();
        let through_seq = lines.next().and_then(|seq| seq.trim().parse().ok());
        (!id.is_empty()).then(|| SessionRecord { id: id.to_string(), through_seq })
    }

    /// Stores the session id and the seq of the last entry it saw durably (a new file renamed
    /// over the old one, synced).
    pub fn set(&self, kind: BackendKind, conversation_id: i64, session: &str, through_seq: u64) -> std::io::Result<()> {
        let path = self.path(kind, conversation_id);
        let dir = path.parent().unwrap_or(&self.root);
        make_private_dir(dir)?;
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(format!("{session}\n{through_seq}\n").as_bytes())?;
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
        sessions.set(BackendKind::ClaudeCode, 7, "s-1", 3).unwrap();
        sessions.set(BackendKind::ClaudeCode, 7, "s-2", 9).unwrap();
        let again = Sessions::new(dir.path());
        let record = SessionRecord { id: "s-2".into(), through_seq: Some(9) };
        assert_eq!(again.get(BackendKind::ClaudeCode, 7), Some(record));
        // An id stored alone (an older kernel's) reads without a seq.
        std::fs::write(dir.path().join("backends/claude-code/sessions/8"), "old-1").unwrap();
        assert_eq!(
            again.get(BackendKind::ClaudeCode, 8),
            Some(SessionRecord { id: "old-1".into(), through_seq: None })
        );
        assert_eq!(again.get(BackendKind::Codex, 7), None);
        assert!(again.home(BackendKind::ClaudeCode).unwrap().ends_with("backends/claude-code/home"));
    }
}
