//! superpi-paths: which paths no tool may touch, as data and pure functions, shared by the
//! policy that decides a call (superpi-policy) and the sandbox that runs it (superpi-sandbox).
//!
//! Owns lexical normalisation of a path argument, the built-in protected-path rules (`.env`
//! files, `.git` internals, private keys, credential files), the `permissions.protected_paths`
//! glob ([`PathPattern`]) and [`ProtectedPaths`], the whole rule as the kernel hands it to the
//! confined tool runner. It must not read settings or decide a call, and its path checks touch
//! no file: they are lexical (`..` is resolved against the path itself, symbolic links are not
//! followed) and give the early, explainable refusal; the sandbox's runner applies
//! [`ProtectedPaths`] again to every path it opens or walks, resolved through symlinks (a link
//! in the workspace to `.git` or `~/.ssh`) and hard links.
//!
//! Its own crate so that the sandbox needs no policy and the policy's tests can decide over
//! the sandbox's real tools without a dependency cycle.
//!
//! Beside the lexical rules, two checks the frontends make before the kernel would, so that
//! they need not link the sandbox: which directory may be a workspace ([`check_workspace`],
//! reading the filesystem) and whether a peer process is a confined tool ([`confined`],
//! reading /proc). The sandbox applies the first and puts the marks the second reads.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub mod confined;
mod pattern;
mod workspace;
pub use pattern::{PathPattern, compiled_glob};
pub use workspace::{check_canonical_workspace, check_workspace, home_dir};

/// Why a path argument is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathProblem {
    /// `~/…` and friends: the tool would read them relative to a home directory.
    HomeRelative,
    /// A relative path with no workspace to resolve it against.
    NoWorkspace,
    /// A NUL byte or an empty component the kernel will not pass on.
    Malformed,
}

/// The absolute, lexically normalised form of `arg`, relative paths taken from `root`.
pub fn normalize(arg: &str, root: Option<&Path>) -> Result<PathBuf, PathProblem> {
    if arg.contains('\0') {
        return Err(PathProblem::Malformed);
    }
    if arg.starts_with('~') {
        return Err(PathProblem::HomeRelative);
    }
    let joined = if Path::new(arg).is_absolute() {
        PathBuf::from(arg)
    } else {
        match root {
            Some(root) => root.join(arg),
            None => return Err(PathProblem::NoWorkspace),
        }
    };
    Ok(lexical(&joined))
}

/// Resolves `.` and `..` without touching the filesystem; `/..` is `/`.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

/// Why a path is protected, when it is: `.env` files, `.git` internals, private keys and
/// credential files (by built-in rules), or a pattern of `permissions.protected_paths`.
/// Names compare without regard to ASCII case.
pub fn protected(path: &Path, root: Option<&Path>, extra: &[PathPattern]) -> Option<String> {
    let names: Vec<String> = path.iter().map(|n| n.to_string_lossy().to_ascii_lowercase()).collect();
    let last = names.last().map(String::as_str).unwrap_or("");
    for (i, name) in names.iter().enumerate() {
        match name.as_str() {
            ".git" => return Some("a .git internal".into()),
            ".ssh" | ".gnupg" => return Some("a private key directory".into()),
            ".aws" | ".azure" | ".kube" => return Some("a credential directory".into()),
            ".docker" if names.get(i + 1).is_some_and(|n| n == "config.json") => {
                return Some("a credential file".into());
            }
            ".config" if names.get(i + 1).is_some_and(|n| n == "gcloud" || n == "gh") => {
                return Some("a credential directory".into());
            }
            _ => {}
        }
    }
    if is_env_file(last) {
        return Some("an environment file (.env)".into());
    }
    const CREDENTIALS: [&str; 9] = [
        ".netrc",
        "_netrc",
        ".npmrc",
        ".pypirc",
        ".pgpass",
        ".git-credentials",
        "credentials.json",
        ".credentials.json",
        ".htpasswd",
    ];
    if CREDENTIALS.contains(&last) {
        return Some("a credential file".into());
    }
    const KEYS: [&str; 6] = ["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"];
    const KEY_EXTENSIONS: [&str; 6] = ["pem", "key", "p12", "pfx", "jks", "keystore"];
    let extension = last.rsplit_once('.');
    if KEYS.contains(&last) || extension.is_some_and(|(stem, ext)| !stem.is_empty() && KEY_EXTENSIONS.contains(&ext)) {
        return Some("a private key".into());
    }
    let relative = root.and_then(|r| path.strip_prefix(r).ok());
    extra
        .iter()
        .find(|p| p.matches(path, relative))
        .map(|p| format!("protected by permissions.protected_paths `{}`", p.as_str()))
}

/// Everything a conversation's tools must not touch: the built-in rules of [`protected`], the
/// `permissions.protected_paths` patterns, and superpi's own directories (config, data,
/// runtime: settings, tokens, the store, the socket), which are protected wherever they are,
/// inside a workspace or out, whatever `allow_outside_workspace` says. Data, so the kernel can
/// hand it to the confined tool runner.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProtectedPaths {
    #[serde(serialize_with = "patterns_out", deserialize_with = "patterns_in")]
    pub patterns: Vec<PathPattern>,
    pub private_dirs: Vec<PathBuf>,
}

impl ProtectedPaths {
    /// Why `path` (absolute, normalised) is protected, when it is; `root` is the workspace.
    pub fn reason(&self, path: &Path, root: Option<&Path>) -> Option<String> {
        self.private_dir(path).or_else(|| protected(path, root, &self.patterns))
    }

    /// Why `path` is inside one of superpi's own directories, when it is. Applies to listing
    /// too, not only to reading contents.
    pub fn private_dir(&self, path: &Path) -> Option<String> {
        self.private_dirs
            .iter()
            .find(|dir| path.starts_with(dir))
            .map(|dir| format!("superpi's own directory {}", dir.display()))
    }
}

fn patterns_out<S: Serializer>(patterns: &[PathPattern], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(patterns.iter().map(PathPattern::as_str))
}

fn patterns_in<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PathPattern>, D::Error> {
    let sources = Vec::<String>::deserialize(d)?;
    sources.iter().map(|s| PathPattern::parse(s).map_err(serde::de::Error::custom)).collect()
}

/// `.env`, `.env.local`, `.envrc`, … but not the committed templates (`.env.example`).
fn is_env_file(name: &str) -> bool {
    if name == ".env" || name == ".envrc" {
        return true;
    }
    match name.strip_prefix(".env.") {
        Some(rest) => !matches!(rest, "example" | "sample" | "template" | "dist" | "defaults"),
        None => name.ends_with(".env") && name.len() > 4 && !name.starts_with('.'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_lexically() {
        let root = Some(Path::new("/w"));
        assert_eq!(normalize("src/../a.rs", root).unwrap(), PathBuf::from("/w/a.rs"));
        assert_eq!(normalize("./x/./y", root).unwrap(), PathBuf::from("/w/x/y"));
        assert_eq!(normalize("", root).unwrap(), PathBuf::from("/w"));
        assert_eq!(normalize("../../etc/passwd", root).unwrap(), PathBuf::from("/etc/passwd"));
        assert_eq!(normalize("/../../x", root).unwrap(), PathBuf::from("/x"));
        assert_eq!(normalize("/w/a/../../w2", root).unwrap(), PathBuf::from("/w2"));
        assert_eq!(normalize("~/x", root), Err(PathProblem::HomeRelative));
        assert_eq!(normalize("a", None), Err(PathProblem::NoWorkspace));
        assert_eq!(normalize("/abs", None).unwrap(), PathBuf::from("/abs"));
        assert_eq!(normalize("a\0b", root), Err(PathProblem::Malformed));
    }

    #[test]
    fn protected_paths() {
        let root = Some(Path::new("/w"));
        let p = |s: &str| protected(Path::new(s), root, &[]);
        for yes in [
            "/w/.env",
            "/w/app/.env.local",
            "/w/.ENV",
            "/w/.envrc",
            "/w/prod.env",
            "/w/.git/config",
            "/w/.git",
            "/w/sub/.git/hooks/pre-commit",
            "/home/u/.ssh/config",
            "/w/id_rsa",
            "/w/keys/server.pem",
            "/w/tls.KEY",
            "/w/cert.p12",
            "/home/u/.aws/credentials",
            "/home/u/.netrc",
            "/w/.npmrc",
            "/w/.pypirc",
            "/w/.git-credentials",
            "/home/u/.docker/config.json",
            "/home/u/.config/gh/hosts.yml",
            "/home/u/.kube/config",
        ] {
            assert!(p(yes).is_some(), "{yes} should be protected");
        }
        for no in [
            "/w/.env.example",
            "/w/.env.sample",
            "/w/.gitignore",
            "/w/.github/workflows/ci.yml",
            "/w/id_rsa.pub",
            "/w/src/key.rs",
            "/w/environment.rs",
            "/w/.pem",
            "/w/docker/config.json",
            "/w/README.md",
        ] {
            assert!(p(no).is_none(), "{no} should not be protected: {:?}", p(no));
        }
        let extra = [PathPattern::parse("*.sqlite").unwrap()];
        assert_eq!(
            protected(Path::new("/w/db/app.sqlite"), root, &extra).unwrap(),
            "protected by permissions.protected_paths `*.sqlite`"
        );
    }
}
