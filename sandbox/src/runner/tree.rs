//! A bounded read of a directory of configuration beneath the workspace (a workspace's
//! `.superpi/skills`), run by the confined tool runner for the kernel ([`crate::Sandbox::read_tree`]):
//! no tool, so neither a model nor a frontend can ask for it. Every entry to a depth, and the
//! text of the files asked for, each name opened from its parent's descriptor without following
//! a link and owned by the user or root (`beneath.rs`). Refused, each with its reason in words:
//! a symbolic link, what is neither a directory nor a regular file, a protected path (as the
//! `read` tool refuses it), a file with more than one name (its other name may be a file the
//! sandbox keeps from tools, which cannot be told from inside it), a file past the size asked.
//! The kernel then works from the answer and reads nothing again by path.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use superpi_paths::ProtectedPaths;

use crate::beneath::{self, Entry};

/// Most entries listed; past it the walk stops and says so.
const MAX_ENTRIES: usize = 5000;
/// Most bytes of text read in all (the runner's answer stays far below its bound).
const MAX_TEXT_BYTES: u64 = 4 * 1024 * 1024;

/// What to read of a directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeRead {
    /// The directory: names beneath the base directory (the workspace), each opened through no
    /// link.
    pub beneath: Vec<String>,
    /// How many names deep entries are listed (1: the directory's own).
    pub depth: usize,
    /// The files whose text is read, as paths relative to the directory (`/` between names); a
    /// name holding `*` matches any name with what is before and after it (`*.md`, `*`).
    pub texts: Vec<String>,
    /// The most bytes of one file's text: a longer file is refused.
    pub max_file_bytes: u64,
}

/// What was found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    /// The directory, for messages.
    pub path: PathBuf,
    /// Every entry, breadth first, by name within a directory.
    pub entries: Vec<TreeEntry>,
    /// Why the walk stopped short, when it did.
    pub cut: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeEntry {
    /// Relative to the directory, `/` between names.
    pub path: String,
    pub kind: TreeKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TreeKind {
    Dir,
    /// A regular file of one name: its length, and its text when it was asked for.
    File {
        len: u64,
        text: Option<String>,
    },
    /// Not read, and why.
    Refused(String),
}

impl Tree {
    /// The text of the file at `relative` (`/` between names): `Ok(None)` when there is none;
    /// the reason when it, or a directory on the way, was refused.
    pub fn text(&self, relative: &str) -> Result<Option<&str>, String> {
        let shown = || self.path.join(relative).display().to_string();
        match self.entries.iter().find(|e| e.path == relative).map(|e| &e.kind) {
            Some(TreeKind::File { text: Some(text), .. }) => Ok(Some(text)),
            Some(TreeKind::File { text: None, .. }) => Err(format!("{} was not read", shown())),
            Some(TreeKind::Refused(why)) => Err(why.clone()),
            Some(TreeKind::Dir) => Err(format!("{} is not a regular file", shown())),
            None => {
                let refused = relative.match_indices('/').find_map(|(end, _)| {
                    match self.entries.iter().find(|e| e.path == relative[..end]).map(|e| &e.kind) {
                        Some(TreeKind::Refused(why)) => Some(why.clone()),
                        _ => None,
                    }
                });
                refused.map_or(Ok(None), Err)
            }
        }
    }
}

/// Whether `path`'s names match `pattern`'s, name by name.
fn matches(pattern: &str, path: &[String]) -> bool {
    let names: Vec<&str> = pattern.split('/').collect();
    names.len() == path.len()
        && names.iter().zip(path).all(|(want, name)| match want.split_once('*') {
            None => want == name,
            Some((before, after)) => {
                name.len() >= before.len() + after.len() && name.starts_with(before) && name.ends_with(after)
            }
        })
}

/// Reads `read.beneath` under `base` (in this process: the confined runner calls it for the
/// workspace, the kernel for its own config directory). `Ok(None)` when the directory does not
/// exist; the reason when it, or a name on the way, was refused.
pub fn read_tree(base: &Path, read: &TreeRead, protected: &ProtectedPaths) -> Result<Option<Tree>, String> {
    let Some(mut fd) = beneath::open_root(base)? else { return Ok(None) };
    let mut path = base.to_path_buf();
    for name in &read.beneath {
        path.push(name);
        match beneath::open_dir(&fd, name, &path)? {
            Some(next) => fd = next,
            None => return Ok(None),
        }
    }
    let mut tree = Tree { path, entries: Vec::new(), cut: None };
    let mut text_bytes = 0;
    let mut queue = VecDeque::from([(fd, Vec::<String>::new())]);
    while let Some((dir, at)) = queue.pop_front() {
        for (name, entry) in beneath::entries(&dir) {
            if tree.entries.len() >= MAX_ENTRIES {
                tree.cut = Some(format!(
                    "{} holds more than {MAX_ENTRIES} entries; the rest is not read",
                    tree.path.display()
                ));
                return Ok(Some(tree));
            }
            let mut relative = at.clone();
            relative.push(name.clone());
            let shown = tree.path.join(relative.join("/"));
            let kind = if let Some(why) = protected.reason(&shown, Some(base)) {
                TreeKind::Refused(format!("{} is a protected path ({why})", shown.display()))
            } else {
                match entry {
                    Entry::Dir if relative.len() < read.depth => match beneath::open_dir(&dir, &name, &shown) {
                        Ok(Some(sub)) => {
                            queue.push_back((sub, relative.clone()));
                            TreeKind::Dir
                        }
                        Ok(None) => continue,
                        Err(why) => TreeKind::Refused(why),
                    },
                    Entry::Dir => TreeKind::Dir,
                    Entry::File { links, .. } if links > 1 => TreeKind::Refused(many_names(&shown, links)),
                    Entry::File { .. } if read.texts.iter().any(|t| matches(t, &relative)) => {
                        file_text(&dir, &name, &shown, read.max_file_bytes, &mut text_bytes)
                            .unwrap_or_else(TreeKind::Refused)
                    }
                    Entry::File { len, .. } => TreeKind::File { len, text: None },
                    Entry::Link => TreeKind::Refused(format!(
                        "{} is a symbolic link; superpi does not follow it (make it a directory or file of its own)",
                        shown.display()
                    )),
                    Entry::Other => TreeKind::Refused(format!("{} is not a regular file", shown.display())),
                }
            };
            tree.entries.push(TreeEntry { path: relative.join("/"), kind });
        }
    }
    Ok(Some(tree))
}

fn many_names(shown: &Path, links: u64) -> String {
    format!(
        "{} has {links} names (hard links); a file with another name is not read, as that name may be \
         outside the workspace",
        shown.display()
    )
}

/// A file's text, checked on the descriptor it is read from, within `max` bytes and what is left
/// of the whole read's budget (`spent`).
fn file_text(
    dir: &std::os::fd::OwnedFd,
    name: &str,
    shown: &Path,
    max: u64,
    spent: &mut u64,
) -> Result<TreeKind, String> {
    let Some(read) = beneath::read_file(dir, name, shown, max.saturating_add(1))? else {
        return Err(format!("{} is gone", shown.display()));
    };
    if read.links > 1 {
        return Err(many_names(shown, read.links));
    }
    if read.len > max {
        return Err(format!("{} holds {} bytes, more than the {max} read of one file", shown.display(), read.len));
    }
    if *spent + read.len > MAX_TEXT_BYTES {
        return Err(format!(
            "{} is not read: the files before it hold the {MAX_TEXT_BYTES} bytes read at most",
            shown.display()
        ));
    }
    *spent += read.len;
    let text = String::from_utf8(read.bytes).map_err(|_| format!("{} is not UTF-8 text", shown.display()))?;
    Ok(TreeKind::File { len: read.len, text: Some(text) })
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
