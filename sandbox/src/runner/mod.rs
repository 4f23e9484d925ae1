//! The file tools' bodies and what they share (typed arguments, the workspace and the paths
//! no tool may touch), run inside the confined process (`tool_process.rs`). The kernel never
//! touches the files of a call itself. The process runs already confined: the checks here
//! only give clear errors ("outside the workspace") before the OS refuses.

pub(crate) mod files;
pub use files::format_read;
mod links;
pub(crate) mod search;
pub(crate) mod tree;

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use superpi_paths::ProtectedPaths;

use crate::ToolCallResult;

/// A file tool's body: what it answers for its arguments, run inside the confined process.
pub(crate) type FileBody = fn(&Ctx, &Args) -> Result<ToolCallResult, String>;

/// Typed access to the arguments, with errors that name the field.
pub(crate) struct Args<'a> {
    tool: &'a str,
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    pub(crate) fn new(tool: &'a str, map: &'a Map<String, Value>) -> Self {
        Args { tool, map }
    }

    pub(crate) fn allow_only(&self, fields: &[&str]) -> Result<(), String> {
        match self.map.keys().find(|k| !fields.contains(&k.as_str())) {
            Some(k) => Err(format!("{}: unknown field `{k}` (expected: {})", self.tool, fields.join(", "))),
            None => Ok(()),
        }
    }

    pub(crate) fn string(&self, field: &str) -> Result<&str, String> {
        match self.map.get(field) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(format!("{}: `{field}` must be a string", self.tool)),
            None => Err(format!("{}: missing required field `{field}`", self.tool)),
        }
    }

    pub(crate) fn opt_string(&self, field: &str) -> Result<Option<&str>, String> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("{}: `{field}` must be a string", self.tool)),
        }
    }

    pub(crate) fn opt_count(&self, field: &str) -> Result<Option<usize>, String> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => Ok(Some(n.min(usize::MAX as u64) as usize)),
                _ => Err(format!("{}: `{field}` must be a positive integer", self.tool)),
            },
        }
    }

    pub(crate) fn flag(&self, field: &str) -> Result<bool, String> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(format!("{}: `{field}` must be true or false", self.tool)),
        }
    }

    pub(crate) fn tool(&self) -> &str {
        self.tool
    }
}

pub(crate) struct Ctx {
    pub workspace: PathBuf,
    pub read_roots: Vec<PathBuf>,
    /// Trees written as the workspace is (a conversation's extra directories).
    pub write_roots: Vec<PathBuf>,
    pub protected: ProtectedPaths,
    /// The workspace's protected files with other names, found when first needed.
    linked: links::LinkedProtected,
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `path` with its longest existing ancestor resolved through symlinks.
fn resolve_existing(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut cur = path.to_path_buf();
    loop {
        if let Ok(real) = cur.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return normalize(&out);
        }
        match (cur.file_name().map(|n| n.to_os_string()), cur.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                cur = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

impl Ctx {
    pub(crate) fn new(workspace: PathBuf, read_roots: Vec<PathBuf>, protected: ProtectedPaths) -> Ctx {
        Ctx { workspace, read_roots, write_roots: Vec::new(), protected, linked: Default::default() }
    }

    /// Lets the tools write in `roots` as in the workspace.
    pub(crate) fn with_write_roots(mut self, roots: Vec<PathBuf>) -> Ctx {
        self.write_roots = roots;
        self
    }

    /// Resolves a path argument and checks it stays inside the workspace (or, for reading,
    /// inside a read root), lexically and through symlinks.
    pub(crate) fn resolve(&self, tool: &str, field: &str, raw: &str, write: bool) -> Result<PathBuf, String> {
        if raw.is_empty() {
            return Err(format!("{tool}: `{field}` is empty"));
        }
        let joined = if Path::new(raw).is_absolute() { PathBuf::from(raw) } else { self.workspace.join(raw) };
        let lexical = normalize(&joined);
        let real = resolve_existing(&lexical);
        let inside = |p: &Path| {
            p.starts_with(&self.workspace)
                || self.write_roots.iter().any(|r| p.starts_with(r))
                || (!write && self.read_roots.iter().any(|r| p.starts_with(r)))
        };
        if !inside(&lexical) {
            return Err(format!(
                "{tool}: `{field}` {raw} is outside the workspace {}; the sandbox allows {} only inside it",
                self.workspace.display(),
                if write { "writing" } else { "reading" }
            ));
        }
        if !inside(&real) {
            return Err(format!(
                "{tool}: `{field}` {raw} leads outside the workspace {} (through a symbolic link, to {})",
                self.workspace.display(),
                real.display()
            ));
        }
        // superpi's own directories may not even be listed (the spill files the kernel hands
        // this call as read roots excepted).
        let private = |p: &Path| self.protected.private_dir(p).filter(|_| !self.in_read_root(p));
        if let Some(why) = private(&lexical).or_else(|| private(&real)) {
            return Err(format!("{tool}: `{field}` {raw} is a protected path ({why})"));
        }
        Ok(lexical)
    }

    /// Refuses a path whose contents a tool would read or write when it, or what it leads to
    /// through symlinks, is protected (a link in the workspace to `.git/hooks` or `.env`), or
    /// when it is a hard link to a protected file.
    pub(crate) fn check_contents(&self, tool: &str, path: &Path) -> Result<(), String> {
        if let Some(why) = self.protected_reason(path) {
            return Err(format!("{tool}: {} is a protected path ({why})", self.display(path)));
        }
        match self.hard_link_twin(path) {
            Ok(None) => Ok(()),
            Ok(Some(twin)) => Err(format!(
                "{tool}: {} is a hard link to the protected {} (the same file)",
                self.display(path),
                self.display(&twin)
            )),
            Err(why) => Err(format!("{tool}: {}: {why}", self.display(path))),
        }
    }

    /// The protected file `path` is another name of (a hard link), when it is one.
    pub(crate) fn hard_link_twin(&self, path: &Path) -> Result<Option<PathBuf>, String> {
        if self.in_read_root(path) {
            return Ok(None);
        }
        Ok(self.linked.twin_of(path, &self.workspace, &self.protected)?.map(Path::to_path_buf))
    }

    /// Why `path` is protected, by its own name or by where it leads.
    fn protected_reason(&self, path: &Path) -> Option<String> {
        if self.in_read_root(path) {
            return None;
        }
        let root = Some(self.workspace.as_path());
        self.protected.reason(path, root).or_else(|| self.protected.reason(&resolve_existing(path), root))
    }

    fn in_read_root(&self, path: &Path) -> bool {
        self.read_roots.iter().any(|r| path.starts_with(r))
    }

    /// Whether a search or listing skips `path`: protected by its name or by where it leads.
    /// Cheap for the common case: only a symlink is resolved.
    pub(crate) fn skips(protected: &ProtectedPaths, root: &Path, path: &Path, symlink: bool) -> bool {
        protected.reason(path, Some(root)).is_some()
            || (symlink && path.canonicalize().is_ok_and(|real| protected.reason(&real, Some(root)).is_some()))
    }

    /// How to show `path` to the model: relative to the workspace when inside it.
    pub(crate) fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.workspace) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
