//! The words of the shell reader: what a simple command is made of, and the refusal to
//! guess. A leaf shared by `shell` (the entry points, re-exporting these), `shell_parser` and
//! `shell_compound`.

use std::fmt;

/// How deep substitutions may nest before we stop reading.
pub(crate) const MAX_DEPTH: usize = 16;

/// One word of a command, after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word's value with quotes removed; expansions are kept as written.
    pub text: String,
    /// True when `text` is exactly what the shell would pass: no parameter expansion, no
    /// substitution, no glob, brace or tilde expansion.
    pub literal: bool,
}

impl Word {
    #[cfg(test)]
    fn literal(text: &str) -> Self {
        Word { text: text.to_string(), literal: true }
    }
}

/// What a redirection does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    /// Reads a file (`<`, `<<<`).
    Input,
    /// Writes or opens for writing (`>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&FILE`).
    Output,
    /// Duplicates or closes a descriptor (`2>&1`, `<&3`, `>&-`).
    Duplicate,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub kind: RedirectKind,
    pub target: Word,
}

/// One simple command: its words (assignments included, as written) and redirections.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
}

impl SimpleCommand {
    /// The command's words joined by single spaces: the key of session overrides.
    pub fn text(&self) -> String {
        self.words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ")
    }

    /// Whether every output redirection goes to `/dev/null` (descriptor duplications and
    /// inputs are fine).
    pub fn writes_no_file(&self) -> bool {
        self.redirects
            .iter()
            .all(|r| r.kind != RedirectKind::Output || (r.target.literal && r.target.text == "/dev/null"))
    }
}

/// A line this module will not vouch for, with the construct that stopped it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsure(pub String);

impl fmt::Display for Unsure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub(crate) fn unsure<T>(why: &str) -> Result<T, Unsure> {
    Err(Unsure(why.to_string()))
}

/// `NAME=value`.
pub fn is_assignment(text: &str) -> bool {
    text.split_once('=').is_some_and(|(name, _)| is_name(name))
}

/// A shell variable name: a letter or `_`, then letters, digits and `_`.
pub fn is_name(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The last path element of a command word: `/usr/bin/rm` is `rm`.
pub fn basename(text: &str) -> &str {
    text.rsplit('/').next().unwrap_or(text)
}

#[cfg(test)]
pub(crate) fn lit(text: &str) -> Word {
    Word::literal(text)
}
