//! Reading configuration from places the user owns, beneath a directory, without following
//! links: the kernel's `AGENTS.md` and the user's skills, and inside the confined tool runner a
//! workspace's `.superpi/skills` (`runner/tree.rs`). Like git's `safe.directory`, a directory
//! or file owned by another user (a shared directory) is not read; each name is opened from
//! its parent's descriptor with `O_NOFOLLOW`, and a file is checked with `fstat` on the
//! descriptor it is then read from, so nothing is checked by path and read again.

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};

/// Whether `uid` is the kernel's user or root: whose files the kernel reads as configuration.
pub fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == nix::unistd::geteuid().as_raw()
}

// st_nlink is u32 on some targets.
#[allow(clippy::useless_conversion)]
fn links(stat: &FileStat) -> u64 {
    u64::from(stat.st_nlink)
}

fn kind(stat: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits())
}

/// Why a name beneath `dirfd` could not be opened, in words; `None` when it does not exist.
fn refusal(dirfd: impl AsFd, name: &str, shown: &Path, err: Errno) -> Option<String> {
    if err == Errno::ENOENT {
        return None;
    }
    let linked = fstatat(dirfd, name, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok_and(|s| kind(&s) == SFlag::S_IFLNK);
    Some(if linked {
        format!(
            "{} is a symbolic link; superpi does not follow it (make it a directory or file of its own)",
            shown.display()
        )
    } else {
        format!("{}: {err}", shown.display())
    })
}

/// A directory opened by path (the workspace, the config directory: chosen by the user), owned
/// by the user or root. `Ok(None)` when it does not exist.
pub fn open_root(path: &Path) -> Result<Option<OwnedFd>, String> {
    match nix::fcntl::open(path, OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty()) {
        Ok(fd) => owned(fd, path).map(Some),
        Err(Errno::ENOENT) => Ok(None),
        Err(err) => Err(format!("{}: {err}", path.display())),
    }
}

/// The directory `name` beneath `dirfd`, not through a link, owned by the user or root;
/// `Ok(None)` when there is none. `shown` names it in messages.
pub fn open_dir(dirfd: impl AsFd, name: &str, shown: &Path) -> Result<Option<OwnedFd>, String> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    match openat(dirfd.as_fd(), name, flags, Mode::empty()) {
        Ok(fd) => owned(fd, shown).map(Some),
        Err(err) => refusal(dirfd, name, shown, err).map_or(Ok(None), Err),
    }
}

fn owned(fd: OwnedFd, shown: &Path) -> Result<OwnedFd, String> {
    let stat = fstat(fd.as_fd()).map_err(|e| format!("{}: {e}", shown.display()))?;
    if !trusted_owner(stat.st_uid) {
        return Err(format!(
            "{} belongs to another user (uid {}); superpi reads configuration only from the user's or root's",
            shown.display(),
            stat.st_uid
        ));
    }
    Ok(fd)
}

/// A file read by [`read_file`].
#[derive(Debug, PartialEq)]
pub struct FileRead {
    /// At most the bytes asked for.
    pub bytes: Vec<u8>,
    /// The file's whole length.
    pub len: u64,
    /// Its names (hard links), as its descriptor says.
    pub links: u64,
}

/// A regular file's bytes beneath `dirfd`, not through a link, owned by the user or root, at
/// most `max` of them. `Ok(None)` when there is none.
pub fn read_file(dirfd: impl AsFd, name: &str, shown: &Path, max: u64) -> Result<Option<FileRead>, String> {
    // O_NONBLOCK: a FIFO planted under the name must not hang the kernel before fstat sees it.
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
    let fd = match openat(dirfd.as_fd(), name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(err) => return refusal(dirfd, name, shown, err).map_or(Ok(None), Err),
    };
    let fd = owned(fd, shown)?;
    let stat = fstat(fd.as_fd()).map_err(|e| format!("{}: {e}", shown.display()))?;
    if kind(&stat) != SFlag::S_IFREG {
        return Err(format!("{} is not a regular file", shown.display()));
    }
    let len = u64::try_from(stat.st_size).unwrap_or(0);
    let mut bytes = Vec::new();
    std::fs::File::from(fd).take(max).read_to_end(&mut bytes).map_err(|e| format!("{}: {e}", shown.display()))?;
    let len = len.max(bytes.len() as u64);
    Ok(Some(FileRead { bytes, len, links: links(&stat) }))
}

/// What an entry beneath a directory is, not following a link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Entry {
    Dir,
    /// A regular file: its length and its names (hard links).
    File {
        len: u64,
        links: u64,
    },
    Link,
    Other,
}

/// The names in a directory (but `.` and `..`) and what each is, sorted by name.
pub fn entries(dirfd: impl AsFd) -> Vec<(String, Entry)> {
    // A fresh open of `.`: a duplicate descriptor would share the directory's offset.
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let Ok(mut dir) = nix::dir::Dir::openat(dirfd.as_fd(), ".", flags, Mode::empty()) else { return Vec::new() };
    let mut found: Vec<(String, Entry)> = Vec::new();
    let names: Vec<String> = dir
        .iter()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().ok().map(String::from))
        .filter(|n| n != "." && n != "..")
        .collect();
    for name in names {
        let entry = match fstatat(dirfd.as_fd(), name.as_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => match kind(&stat) {
                SFlag::S_IFDIR => Entry::Dir,
                SFlag::S_IFREG => Entry::File { len: u64::try_from(stat.st_size).unwrap_or(0), links: links(&stat) },
                SFlag::S_IFLNK => Entry::Link,
                _ => Entry::Other,
            },
            Err(_) => Entry::Other,
        };
        found.push((name, entry));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::chown;

    use super::*;

    #[test]
    fn links_and_other_users_files_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::fs::write(dir.path().join("real/f.md"), "hello").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("linked")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real/f.md"), dir.path().join("real/l.md")).unwrap();
        let root = open_root(dir.path()).unwrap().unwrap();

        let real = open_dir(&root, "real", Path::new("real")).unwrap().unwrap();
        let read = FileRead { bytes: b"hel".to_vec(), len: 5, links: 1 };
        assert_eq!(read_file(&real, "f.md", Path::new("f"), 3).unwrap(), Some(read));
        assert_eq!(read_file(&real, "none", Path::new("none"), 3).unwrap(), None);
        assert!(read_file(&real, "l.md", Path::new("l"), 9).unwrap_err().contains("is a symbolic link"));
        assert!(open_dir(&root, "none", Path::new("none")).unwrap().is_none());
        assert!(open_dir(&root, "linked", Path::new("linked")).unwrap_err().contains("is a symbolic link"));
        let file = Entry::File { len: 5, links: 1 };
        assert_eq!(entries(&real), vec![("f.md".into(), file), ("l.md".into(), Entry::Link)]);

        if nix::unistd::geteuid().is_root() {
            chown(dir.path().join("real/f.md"), Some(65534), None).unwrap();
            assert!(read_file(&real, "f.md", Path::new("f"), 9).unwrap_err().contains("belongs to another user"));
            chown(dir.path().join("real"), Some(65534), None).unwrap();
            assert!(open_dir(&root, "real", Path::new("real")).unwrap_err().contains("belongs to another user"));
        }
    }
}
