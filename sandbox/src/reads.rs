//! What a call may read outside the workspace: the system's program directories, the home
//! directory's toolchains and configuration, `extra_read_paths`, less the secrets.
//!
//! Landlock only grants, so a secret inside a granted directory cannot be taken away: the
//! grants are computed instead. A read root with no denied path beneath it is granted whole; one
//! with a denied path beneath is never granted itself, its entries are decided one by one
//! (recursively), so a denied entry is simply left out, and one made later is out as well (its
//! directory was not granted). The home directory always has denied paths beneath it, so it is
//! granted entry by entry. Symlinked entries are decided by where they lead.
//!
//! Computed once per sandbox; the directories whose entries were decided one by one are watched
//! (device, inode, mtime and ctime), and the grants are computed again when one changed (an
//! entry made or removed), not on every call.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// Where programs live: readable and executable by every call. /run/systemd/resolve is where
/// /etc/resolv.conf points on systemd machines (name resolution when network is granted).
pub const DEFAULT_READ_EXEC: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
    "/proc",
    "/sys",
    "/run/systemd/resolve",
];

/// Paths under the home directory a tool never reads: credentials and tokens, keyrings,
/// browser profiles, shell histories, superpi's own directories. `*` matches any part of one
/// name. The reasons are in sandbox/ARCHITECTURE.md ("Reads").
pub const DEFAULT_DENIED_IN_HOME: &[&str] = &[
    // Keys and cloud credentials.
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".oci",
    ".config/gcloud",
    ".config/doctl",
    ".config/rclone",
    ".s3cfg",
    ".boto",
    ".kube",
    ".docker/config.json",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    // Forges and git credentials.
    ".config/gh",
    ".config/hub",
    ".config/glab-cli",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    // Package registries' tokens.
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    ".config/uv/uv.toml",
    ".local/share/uv/credentials",
    // Databases' passwords.
    ".pgpass",
    ".my.cnf",
    // Password stores and keyrings.
    ".password-store",
    ".local/share/keyrings",
    ".gnome2/keyrings",
    ".pki",
    ".config/op",
    ".config/keepassxc",
    ".local/share/kwalletd",
    // Browser and mail profiles.
    ".mozilla",
    ".thunderbird",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    ".config/opera",
    "snap/firefox",
    "snap/chromium",
    // Shell and REPL histories.
    ".*history*",
    ".histfile",
    ".lesshst",
    ".local/share/fish",
    ".config/fish/fish_history",
    // superpi's own (also denied wherever the configuration puts them).
    ".config/superpi",
    ".local/share/superpi",
    ".local/state/superpi",
];

/// A denied path as absolute components, each possibly with `*`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Pattern(Vec<String>);

impl Pattern {
    fn new(path: &Path) -> Pattern {
        Pattern(
            path.components()
                .filter_map(|c| match c {
                    Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
                    _ => None,
                })
                .collect(),
        )
    }
}

/// `name` matched by `pattern`, where `*` stands for any run of characters.
fn matches(pattern: &str, name: &str) -> bool {
    let Some((first, rest)) = pattern.split_once('*') else { return pattern == name };
    let Some(mut name) = name.strip_prefix(first) else { return false };
    let parts: Vec<&str> = rest.split('*').collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return name.len() >= part.len() && name.ends_with(part);
        }
        match name.find(part) {
            Some(at) => name = &name[at + part.len()..],
            None => return false,
        }
    }
    true
}

fn components(path: &Path) -> Vec<String> {
    Pattern::new(path).0
}

/// What is denied, as patterns over canonical paths.
#[derive(Debug, Clone, Default)]
pub(crate) struct Denied(Vec<Pattern>);

impl Denied {
    /// The default list under `home`, and `extra` (absolute paths, canonical where they exist).
    pub(crate) fn new(home: Option<&Path>, extra: &[PathBuf]) -> Denied {
        let mut patterns = Vec::new();
        if let Some(home) = home {
            patterns.extend(DEFAULT_DENIED_IN_HOME.iter().map(|rel| Pattern::new(&home.join(rel))));
        }
        for path in extra {
            patterns.push(Pattern::new(path));
            if let Ok(canonical) = path.canonicalize() {
                patterns.push(Pattern::new(&canonical));
            }
        }
        patterns.sort();
        patterns.dedup();
        Denied(patterns)
    }

    /// `path` (canonical) is denied, or lies beneath a denied path.
    fn covers(&self, path: &[String]) -> bool {
        self.0.iter().any(|p| p.0.len() <= path.len() && p.0.iter().zip(path).all(|(p, n)| matches(p, n)))
    }

    /// Something denied may lie strictly beneath `path` (canonical).
    fn beneath(&self, path: &[String]) -> bool {
        self.0.iter().any(|p| p.0.len() > path.len() && p.0.iter().zip(path).all(|(p, n)| matches(p, n)))
    }
}

/// A directory whose entries were decided one by one, as it was then.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Watched {
    path: PathBuf,
    stamp: Option<(u64, u64, i64, i64, i64, i64)>,
}

fn stamp(path: &Path) -> Option<(u64, u64, i64, i64, i64, i64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()))
}

/// The read grants of a sandbox: what is granted, what was left out, and what to watch.
#[derive(Debug, Clone, Default)]
pub struct ReadGrants {
    /// Granted read and execute, beneath.
    pub granted: Vec<PathBuf>,
    /// Existing paths left out because they are denied (for `superpi doctor`).
    pub denied: Vec<PathBuf>,
    watched: Vec<Watched>,
}

impl ReadGrants {
    /// Decides `roots` against `denied`.
    pub(crate) fn compute(roots: &[PathBuf], denied: &Denied) -> ReadGrants {
        let mut grants = ReadGrants::default();
        let mut seen = BTreeSet::new();
        for root in roots {
            grants.decide(root, denied, &mut seen, 0);
        }
        grants
    }

    /// Whether a watched directory changed since (an entry made or removed).
    pub(crate) fn stale(&self) -> bool {
        self.watched.iter().any(|w| stamp(&w.path) != w.stamp)
    }

    fn decide(&mut self, path: &Path, denied: &Denied, seen: &mut BTreeSet<PathBuf>, depth: usize) {
        // Decided by where it leads: a link to a secret is the secret.
        let Ok(canonical) = path.canonicalize() else { return };
        // A link up to an ancestor (`~/root -> /`) would widen the grant to all it holds.
        let upward = depth > 0 && path.parent().is_some_and(|parent| parent.starts_with(&canonical));
        if upward || !seen.insert(canonical.clone()) || depth > 16 {
            return;
        }
        let parts = components(&canonical);
        if denied.covers(&parts) {
            self.denied.push(canonical);
            return;
        }
        if !denied.beneath(&parts) {
            self.granted.push(canonical);
            return;
        }
        // Only a directory can hold a denied path; a file or the like is granted as it is.
        if !canonical.is_dir() {
            self.granted.push(canonical);
            return;
        }
        self.watched.push(Watched { stamp: stamp(&canonical), path: canonical.clone() });
        let Ok(entries) = std::fs::read_dir(&canonical) else { return };
        let mut children: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        children.sort();
        for child in children {
            self.decide(&child, denied, seen, depth + 1);
        }
    }
}

/// The read roots and denied paths of a sandbox's configuration.
pub(crate) fn roots(config: &crate::SandboxConfig) -> (Vec<PathBuf>, Denied) {
    let mut roots: Vec<PathBuf> = DEFAULT_READ_EXEC.iter().map(PathBuf::from).collect();
    let home = config.home.as_ref().and_then(|h| h.canonicalize().ok()).filter(|h| h != Path::new("/"));
    if config.home_reads
        && let Some(home) = &home
    {
        roots.push(home.clone());
    }
    roots.extend(config.extra_read_paths.iter().cloned());
    let mut deny: Vec<PathBuf> = config.deny_read_paths.clone();
    deny.push(config.data_dir.clone());
    deny.extend(config.private_dirs.iter().cloned());
    (roots, Denied::new(home.as_deref(), &deny))
}

/// What a tool of a sandbox with `config` may read (and what was left out), as `superpi doctor`
/// shows it.
pub fn read_grants(config: &crate::SandboxConfig) -> ReadGrants {
    let (roots, denied) = roots(config);
    ReadGrants::compute(&roots, &denied)
}

#[cfg(test)]
#[path = "reads_tests.rs"]
mod tests;
