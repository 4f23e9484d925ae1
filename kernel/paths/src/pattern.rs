//! The glob of `permissions.protected_paths`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{LazyLock, Mutex};

/// Globs compiled so far, by source and case-sensitivity: at most this many are kept.
const COMPILED_MAX: usize = 512;

/// The matcher of a glob (`/` matched only literally), compiled once per process: every
/// conversation's policy and every read of a permission rules file parse the same few
/// patterns, and compiling one builds a regex's automata, which cost more than the rest of a
/// one-shot turn's policy work. A matcher's clone shares them.
pub fn compiled_glob(source: &str, case_insensitive: bool) -> Result<globset::GlobMatcher, globset::Error> {
    static COMPILED: LazyLock<Mutex<HashMap<(String, bool), globset::GlobMatcher>>> = LazyLock::new(Default::default);
    let key = (source.to_string(), case_insensitive);
    if let Some(found) = COMPILED.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(found.clone());
    }
    let glob = globset::GlobBuilder::new(source).literal_separator(true).case_insensitive(case_insensitive).build()?;
    let matcher = glob.compile_matcher();
    let mut compiled = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    if compiled.len() >= COMPILED_MAX {
        compiled.clear();
    }
    compiled.insert(key, matcher.clone());
    Ok(matcher)
}

/// An extra protected path of `permissions.protected_paths`: a glob. Without a `/` it
/// matches any path element's name (`*.sqlite`, `secrets`); with one it matches the path
/// relative to the workspace root (`config/prod/**`), or the absolute path when it starts
/// with `/`.
#[derive(Debug, Clone)]
pub struct PathPattern {
    source: String,
    anchored: bool,
    matcher: globset::GlobMatcher,
}

impl PartialEq for PathPattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl PathPattern {
    pub fn parse(source: &str) -> Result<Self, String> {
        if source.is_empty() {
            return Err("a protected path pattern cannot be empty".into());
        }
        let matcher =
            compiled_glob(source, true).map_err(|e| format!("bad protected path pattern `{source}`: {}", e.kind()))?;
        Ok(PathPattern { source: source.to_string(), anchored: source.contains('/'), matcher })
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `path` (absolute, normalised) matches, `relative` being it relative to the
    /// workspace root when it is inside.
    pub fn matches(&self, path: &Path, relative: Option<&Path>) -> bool {
        if self.anchored {
            if self.source.starts_with('/') {
                self.matcher.is_match(path)
            } else {
                relative.is_some_and(|r| self.matcher.is_match(r))
            }
        } else {
            path.iter().any(|name| self.matcher.is_match(Path::new(name)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_patterns() {
        let name = PathPattern::parse("*.sqlite").unwrap();
        assert!(name.matches(Path::new("/w/data/app.SQLITE"), Some(Path::new("data/app.SQLITE"))));
        assert!(!name.matches(Path::new("/w/app.sql"), Some(Path::new("app.sql"))));
        let dir = PathPattern::parse("secrets").unwrap();
        assert!(dir.matches(Path::new("/w/secrets/a.txt"), Some(Path::new("secrets/a.txt"))));
        let rel = PathPattern::parse("config/prod/**").unwrap();
        assert!(rel.matches(Path::new("/w/config/prod/db.yml"), Some(Path::new("config/prod/db.yml"))));
        assert!(!rel.matches(Path::new("/w/x/config/prod/db.yml"), Some(Path::new("x/config/prod/db.yml"))));
        assert!(!rel.matches(Path::new("/elsewhere/config/prod/a"), None));
        let abs = PathPattern::parse("/etc/**").unwrap();
        assert!(abs.matches(Path::new("/etc/passwd"), None));
        assert!(PathPattern::parse("a[").is_err());
        // Kept per source and case-sensitivity: the second asks for another matcher.
        assert!(compiled_glob("Secret*", true).unwrap().is_match("secrets"));
        assert!(!compiled_glob("Secret*", false).unwrap().is_match("secrets"));
        assert!(compiled_glob("Secret*", true).unwrap().is_match("SECRETS"));
        assert!(PathPattern::parse("").is_err());
    }
}
