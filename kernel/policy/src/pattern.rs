//! Patterns of the settings: shell command prefixes, and the protected path glob (superpi-paths'
//! [`PathPattern`], named here too).

use crate::shell::{self, Word, basename, strip_wrappers};

pub use superpi_paths::PathPattern;

/// A shell command pattern of `permissions.allow` or `permissions.deny`: literal words,
/// optionally ending in a lone `*` that stands for any further arguments. A permission rule's
/// pattern ([`parse_prefix`](Self::parse_prefix)) may also end in a `*` glued to its last
/// word (`npm run test:*`): that word is then a prefix, and any further arguments follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPattern {
    source: String,
    words: Vec<String>,
    rest: bool,
    /// The last word is a prefix (`test:` of `test:*`); implies `rest`.
    prefix: bool,
}

/// How a command compares with a deny pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenyMatch {
    Yes,
    No,
    /// A word that the pattern looks at is not literal (`$CMD`, `$(…)`, a glob): it may
    /// expand to a match.
    Maybe,
}

impl CommandPattern {
    /// Reads a pattern such as `git status`, `cargo test *` or `rm -rf *`.
    pub fn parse(source: &str) -> Result<Self, String> {
        let cmds =
            shell::simple_commands(source).map_err(|e| format!("cannot read command pattern `{source}`: {e}"))?;
        let [cmd] = cmds.as_slice() else {
            return Err(format!("command pattern `{source}` must be one simple command (no `;`, `&&`, `|`, …)"));
        };
        if !cmd.redirects.is_empty() {
            return Err(format!("command pattern `{source}` cannot hold a redirection"));
        }
        let mut words: Vec<&Word> = cmd.words.iter().collect();
        let rest = words.last().is_some_and(|w| w.text == "*" && !w.literal);
        if rest {
            words.pop();
        }
        if words.is_empty() {
            return Err(format!("command pattern `{source}` names no command"));
        }
        if let Some(w) = words.iter().find(|w| !w.literal) {
            return Err(format!(
                "command pattern `{source}`: `{}` is not a literal word (only a final lone `*` is a wildcard)",
                w.text
            ));
        }
        let words = words.iter().map(|w| w.text.clone()).collect();
        Ok(CommandPattern { source: source.to_string(), words, rest, prefix: false })
    }

    /// Reads a permission rule's pattern: as [`parse`](Self::parse), or literal words whose
    /// last one ends in a glued `*` (`npm run test:*`, `git log*`).
    pub fn parse_prefix(source: &str) -> Result<Self, String> {
        let trimmed = source.trim_end();
        let glued = trimmed.strip_suffix('*').filter(|head| !head.ends_with(char::is_whitespace) && !head.is_empty());
        let Some(head) = glued else { return Self::parse(source) };
        let mut pattern = Self::parse(head).map_err(|e| e.replace(&format!("`{head}`"), &format!("`{source}`")))?;
        if pattern.rest {
            return Err(format!("command pattern `{source}`: a `*` only ends it once"));
        }
        pattern.source = source.to_string();
        pattern.rest = true;
        pattern.prefix = true;
        Ok(pattern)
    }

    /// Whether the pattern names exactly one command line: no `*` of either kind.
    pub fn is_exact(&self) -> bool {
        !self.rest
    }

    /// Whether the pattern's `i`th word matches `text`: equal, or for a prefix's last word,
    /// starting with it.
    fn word_matches(&self, i: usize, text: &str) -> bool {
        let p = &self.words[i];
        if self.prefix && i + 1 == self.words.len() { text.starts_with(p.as_str()) } else { text == p }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Allow-list matching: the command's words are exactly the pattern's (plus any further
    /// words when it ends in `*`), and each word the pattern names is literal.
    pub fn allows(&self, words: &[Word]) -> bool {
        let len_ok = if self.rest { words.len() >= self.words.len() } else { words.len() == self.words.len() };
        len_ok
            && words.iter().take(self.words.len()).enumerate().all(|(i, w)| w.literal && self.word_matches(i, &w.text))
    }

    /// Deny-list matching, wider than [`allows`](Self::allows): every deny pattern is a prefix,
    /// leading assignments and wrappers (`sudo`, `env`, `timeout 5`, …) are skipped, and the
    /// command word is compared by its last path element (`/bin/rm` is `rm`).
    pub fn denies(&self, words: &[Word]) -> DenyMatch {
        let words = strip_wrappers(words);
        if words.len() < self.words.len() {
            // Too short to match, unless a non-literal word could expand to several.
            return if words.iter().any(|w| !w.literal) && self.prefix_could_match(words) {
                DenyMatch::Maybe
            } else {
                DenyMatch::No
            };
        }
        let mut maybe = false;
        for (i, w) in words.iter().take(self.words.len()).enumerate() {
            if !w.literal {
                maybe = true;
                continue;
            }
            let text = if i == 0 { basename(&w.text) } else { w.text.as_str() };
            if !self.word_matches(i, text) {
                return DenyMatch::No;
            }
        }
        if maybe { DenyMatch::Maybe } else { DenyMatch::Yes }
    }

    fn prefix_could_match(&self, words: &[Word]) -> bool {
        words
            .iter()
            .take(self.words.len())
            .enumerate()
            .all(|(i, w)| !w.literal || self.word_matches(i, if i == 0 { basename(&w.text) } else { w.text.as_str() }))
    }

    /// Last-resort check of a line that could not be read: does every word of the pattern
    /// appear among the line's rough fragments (command word by last path element)?
    pub fn appears_in(&self, fragments: &[String]) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, p)| fragments.iter().any(|f| if i == 0 { basename(f) == p } else { f == p }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        shell::commands(line).unwrap().remove(0).words
    }

    #[test]
    fn parse_patterns() {
        let p = CommandPattern::parse("cargo test *").unwrap();
        assert_eq!((p.words.clone(), p.rest), (vec!["cargo".to_string(), "test".to_string()], true));
        assert_eq!(p.as_str(), "cargo test *");
        assert!(!CommandPattern::parse("git status").unwrap().rest);
        assert!(CommandPattern::parse("'*'").unwrap().allows(&words("'*'")));
        for bad in ["", "*", "a; b", "a && b", "ls > x", "ls $HOME", "ls *.rs", "echo 'x"] {
            assert!(CommandPattern::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            CommandPattern::parse("a | b").unwrap_err(),
            "command pattern `a | b` must be one simple command (no `;`, `&&`, `|`, …)"
        );
    }

    #[test]
    fn allow_is_exact_unless_star() {
        let status = CommandPattern::parse("git status").unwrap();
        assert!(status.allows(&words("git status")));
        assert!(!status.allows(&words("git status --porcelain")));
        assert!(!status.allows(&words("git")));
        assert!(!status.allows(&words("/usr/bin/git status")));
        let test = CommandPattern::parse("cargo test *").unwrap();
        assert!(test.allows(&words("cargo test")));
        assert!(test.allows(&words("cargo test -p x $FILTER *.rs")));
        assert!(!test.allows(&words("cargo $T")));
        assert!(!test.allows(&words("sudo cargo test")));
        assert!(!test.allows(&words("X=1 cargo test")));
    }

    #[test]
    fn a_rule_pattern_may_end_in_a_glued_star() {
        let test = CommandPattern::parse_prefix("npm run test:*").unwrap();
        assert!(!test.is_exact());
        assert!(test.allows(&words("npm run test:unit")));
        assert!(test.allows(&words("npm run test:unit --watch")));
        assert!(test.allows(&words("npm run test:")));
        assert!(!test.allows(&words("npm run build")));
        assert!(!test.allows(&words("npm run")));
        assert!(!test.allows(&words("npm run $T")));
        let exact = CommandPattern::parse_prefix("npm run test:unit").unwrap();
        assert!(exact.is_exact() && exact.allows(&words("npm run test:unit")));
        assert!(!exact.allows(&words("npm run test:unit --watch")));
        assert!(CommandPattern::parse_prefix("cargo test *").unwrap().allows(&words("cargo test -p x")));
        assert!(!CommandPattern::parse_prefix("'*'").unwrap().allows(&words("ls")));
        for bad in ["*", "a *b*", "a; b*", "ls > x*", "a * *"] {
            assert!(CommandPattern::parse_prefix(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn deny_is_a_wide_prefix() {
        let rm = CommandPattern::parse("rm -rf *").unwrap();
        assert_eq!(rm.denies(&words("rm -rf /")), DenyMatch::Yes);
        assert_eq!(rm.denies(&words("/bin/rm -rf /")), DenyMatch::Yes);
        assert_eq!(rm.denies(&words("sudo -u root rm -rf x")), DenyMatch::Yes);
        assert_eq!(rm.denies(&words("rm -r x")), DenyMatch::No);
        assert_eq!(rm.denies(&words("rm")), DenyMatch::No);
        assert_eq!(rm.denies(&words("$RM -rf x")), DenyMatch::Maybe);
        assert_eq!(rm.denies(&words("rm $FLAGS")), DenyMatch::Maybe);
        assert_eq!(rm.denies(&words("ls $X")), DenyMatch::No);
        let test = CommandPattern::parse_prefix("npm run test:*").unwrap();
        assert_eq!(test.denies(&words("npm run test:e2e --ci")), DenyMatch::Yes);
        assert_eq!(test.denies(&words("npm run build")), DenyMatch::No);
        let push = CommandPattern::parse("git push").unwrap();
        assert_eq!(push.denies(&words("git push origin main")), DenyMatch::Yes);
        assert_eq!(push.denies(&words("git pull")), DenyMatch::No);
        assert!(push.appears_in(&shell::rough_fragments("x; /usr/bin/git <<E push")));
        assert!(!push.appears_in(&shell::rough_fragments("git pull")));
    }
}
