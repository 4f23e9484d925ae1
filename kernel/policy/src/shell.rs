//! A conservative reader of shell command lines: which simple commands would a line run?
//!
//! # Why not a parser crate
//!
//! We looked at the Rust shell parsers. `brush-parser` (bash, maintained) is the best fit in
//! grammar, but it brings about sixty crates (two parser generators, two `syn` majors, a
//! caching crate, a builder macro crate) and needs a newer Rust than the workspace's floor;
//! `yash-syntax` is GPL; `conch-parser` has been unmaintained since 2017; `tree-sitter-bash`
//! needs a C toolchain and yields a concrete tree we would still have to walk with care; and
//! `shell-words` only splits words. A permission check needs much less than a parser: the
//! list of simple commands a line runs, with each word's literal value when it has one. It
//! also needs to refuse to guess, which a full parser does not help with. So this module
//! reads the subset of bash that people and models write on one line (quotes, escapes, `;`,
//! `&`, `&&`, `||`, `|`, `|&`, newlines, `( … )` subshells, `{ …; }` groups, `$( … )`,
//! backticks, `<( … )`/`>( … )`, redirections, comments) and returns [`Unsure`] for anything
//! else (here-documents, arithmetic, `case`/`if`/`for`/loops and other keywords, function
//! definitions, `${ … }` holding substitutions, unbalanced quotes or parentheses). The caller
//! treats `Unsure` as "ask a person", never as "allowed".
//!
//! Commands nested in substitutions, subshells and groups are listed too, as are the commands
//! that `bash -c STRING`, `sh -c STRING` and `eval WORDS` would run when the string is literal.

use std::fmt;

/// How deep substitutions may nest before we stop reading.
const MAX_DEPTH: usize = 16;

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

fn unsure<T>(why: &str) -> Result<T, Unsure> {
    Err(Unsure(why.to_string()))
}

/// Every simple command `line` would run, outermost first, including those inside
/// substitutions, subshells, groups, and literal `sh -c`/`bash -c`/`eval` strings.
pub fn commands(line: &str) -> Result<Vec<SimpleCommand>, Unsure> {
    commands_at(line, 0)
}

fn commands_at(line: &str, depth: usize) -> Result<Vec<SimpleCommand>, Unsure> {
    if depth > MAX_DEPTH {
        return unsure("commands nested too deeply");
    }
    let mut parser = Parser { chars: line.chars().collect(), pos: 0, depth, out: Vec::new() };
    parser.list(None)?;
    let mut all = Vec::new();
    for cmd in parser.out {
        let nested = nested_script(&cmd)?;
        all.push(cmd);
        if let Some(script) = nested {
            all.extend(commands_at(&script, depth + 1)?);
        }
    }
    Ok(all)
}

/// Shells whose `-c STRING` runs another command line.
const SHELLS: [&str; 6] = ["sh", "bash", "dash", "zsh", "ksh", "busybox"];

/// The command line a simple command hands to another shell, when it does.
fn nested_script(cmd: &SimpleCommand) -> Result<Option<String>, Unsure> {
    let words = strip_wrappers(&cmd.words);
    let Some(first) = words.first() else { return Ok(None) };
    let name = basename(&first.text);
    if name == "eval" {
        let rest = &words[1..];
        if rest.iter().any(|w| !w.literal) {
            return unsure("eval of a non-literal string");
        }
        return Ok(Some(rest.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ")));
    }
    if SHELLS.contains(&name) {
        let mut iter = words[1..].iter();
        while let Some(w) = iter.next() {
            if w.text.starts_with('-') && w.text.contains('c') && !w.text.starts_with("--") {
                return match iter.next() {
                    Some(script) if script.literal => Ok(Some(script.text.clone())),
                    Some(_) => unsure("a shell run on a non-literal string"),
                    None => unsure("a shell -c without a string"),
                };
            }
        }
    }
    Ok(None)
}

/// Commands that run the command in their arguments (`sudo rm` is `rm` for a deny list),
/// with those of their options that take a separate argument.
const WRAPPERS: [(&str, &[&str]); 14] = [
    ("sudo", &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group", "--chdir"]),
    ("doas", &["-u", "-C"]),
    ("env", &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"]),
    ("command", &[]),
    ("builtin", &[]),
    ("exec", &["-a"]),
    ("nohup", &[]),
    ("nice", &["-n", "--adjustment"]),
    ("time", &["-f", "-o", "--format", "--output"]),
    ("timeout", &["-s", "-k", "--signal", "--kill-after"]),
    ("xargs", &["-I", "-i", "-n", "-P", "-d", "-a", "-E", "-L", "-s", "--max-args", "--max-procs", "--delimiter"]),
    ("stdbuf", &["-i", "-o", "-e", "--input", "--output", "--error"]),
    ("setsid", &[]),
    ("chroot", &["--userspec", "--groups"]),
];

/// The words after any leading assignments and wrapper commands (with their options), for
/// matching a deny list. A heuristic that errs towards finding the inner command.
pub fn strip_wrappers(words: &[Word]) -> &[Word] {
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if is_assignment(&w.text) {
            i += 1;
            continue;
        }
        let name = basename(&w.text);
        let Some((_, takes_arg)) = WRAPPERS.iter().find(|(n, _)| *n == name) else { break };
        i += 1;
        // The wrapper's options (and their arguments) and, for timeout/chroot, the operand
        // before the command.
        while let Some(opt) = words.get(i) {
            if opt.text == "--" {
                i += 1;
                break;
            }
            if !(opt.text.starts_with('-') || (name == "env" && is_assignment(&opt.text))) {
                break;
            }
            i += if takes_arg.contains(&opt.text.as_str()) { 2 } else { 1 };
        }
        if matches!(name, "timeout" | "chroot") && i < words.len() {
            i += 1;
        }
    }
    &words[i.min(words.len())..]
}

/// `NAME=value`.
pub fn is_assignment(text: &str) -> bool {
    match text.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// The last path element of a command word: `/usr/bin/rm` is `rm`.
pub fn basename(text: &str) -> &str {
    text.rsplit('/').next().unwrap_or(text)
}

/// Words that start shell grammar this module does not read.
const KEYWORDS: [&str; 18] = [
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "function", "select",
    "coproc", "[[", "]]", "((",
];

#[derive(Default)]
struct WordBuf {
    text: String,
    literal: bool,
    /// Some character was read for this word (an empty quoted word counts).
    started: bool,
    /// Only unquoted ASCII digits so far (a descriptor before `<`/`>`).
    digits_only: bool,
    /// Exactly one unquoted `{`, `}` or `!` so far.
    bare: Option<char>,
}

impl WordBuf {
    fn begin(&mut self) {
        if !self.started {
            *self = WordBuf { literal: true, started: true, digits_only: true, ..WordBuf::default() };
        }
    }
    fn push_quoted(&mut self, c: char) {
        self.begin();
        self.text.push(c);
        self.digits_only = false;
        self.bare = None;
    }
    fn push_plain(&mut self, c: char) {
        let first = !self.started;
        self.begin();
        self.text.push(c);
        self.digits_only &= c.is_ascii_digit();
        self.bare = if first && matches!(c, '{' | '}' | '!') { Some(c) } else { None };
        if matches!(c, '*' | '?' | '[' | '{') || (first && c == '~') {
            self.literal = false;
        }
    }
    fn expansion(&mut self, written: &str) {
        self.begin();
        self.text.push_str(written);
        self.literal = false;
        self.digits_only = false;
        self.bare = None;
    }
    fn take(&mut self) -> Option<WordBuf> {
        if self.started { Some(std::mem::take(self)) } else { None }
    }
}

#[derive(Default)]
struct CommandBuf {
    cmd: SimpleCommand,
    word: WordBuf,
    /// A `( … )` subshell just closed: only redirections and separators may follow.
    after_group: bool,
}

impl CommandBuf {
    fn is_empty(&self) -> bool {
        self.cmd.words.is_empty() && self.cmd.redirects.is_empty() && !self.word.started && !self.after_group
    }

    fn end_word(&mut self) -> Result<(), Unsure> {
        let Some(w) = self.word.take() else { return Ok(()) };
        if self.after_group {
            return unsure("words after a subshell");
        }
        if self.cmd.words.is_empty() && self.cmd.redirects.is_empty() {
            // `{`, `}` and `!` in command position open or close a group or negate: no command.
            if w.bare.is_some() {
                return Ok(());
            }
            if KEYWORDS.contains(&w.text.as_str()) {
                return unsure(&format!("the shell keyword `{}`", w.text));
            }
        }
        self.cmd.words.push(Word { text: w.text, literal: w.literal });
        Ok(())
    }

    fn end_command(&mut self, out: &mut Vec<SimpleCommand>) -> Result<(), Unsure> {
        self.end_word()?;
        let cmd = std::mem::take(&mut self.cmd);
        self.after_group = false;
        if !cmd.words.is_empty() || !cmd.redirects.is_empty() {
            out.push(cmd);
        }
        Ok(())
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    out: Vec<SimpleCommand>,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    /// A list of commands up to the end of input, or up to `close` (consumed).
    fn list(&mut self, close: Option<char>) -> Result<(), Unsure> {
        if self.depth > MAX_DEPTH {
            return unsure("commands nested too deeply");
        }
        let mut buf = CommandBuf::default();
        loop {
            let Some(c) = self.peek() else {
                if close.is_some() {
                    return unsure("an unclosed parenthesis");
                }
                return buf.end_command(&mut self.out);
            };
            match c {
                ' ' | '\t' | '\r' => {
                    self.pos += 1;
                    buf.end_word()?;
                }
                '\n' => {
                    self.pos += 1;
                    buf.end_command(&mut self.out)?;
                }
                ';' => {
                    if matches!(self.peek_at(1), Some(';' | '&')) {
                        return unsure("a case clause terminator");
                    }
                    self.pos += 1;
                    buf.end_command(&mut self.out)?;
                }
                '&' if self.peek_at(1) == Some('>') => self.redirect(&mut buf)?,
                '&' => {
                    self.pos += if self.peek_at(1) == Some('&') { 2 } else { 1 };
                    buf.end_command(&mut self.out)?;
                }
                '|' => {
                    self.pos += if matches!(self.peek_at(1), Some('|' | '&')) { 2 } else { 1 };
                    buf.end_command(&mut self.out)?;
                }
                ')' if close == Some(')') => {
                    self.pos += 1;
                    return buf.end_command(&mut self.out);
                }
                ')' => return unsure("an unbalanced `)`"),
                '(' => {
                    if !buf.is_empty() || buf.word.started {
                        return unsure("`(` inside a command (a function definition or pattern)");
                    }
                    if self.peek_at(1) == Some('(') {
                        return unsure("an arithmetic command");
                    }
                    self.pos += 1;
                    self.nested_list()?;
                    buf.after_group = true;
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    self.pos += 2;
                    self.nested_list()?;
                    buf.word.expansion("<(…)");
                }
                '<' | '>' => self.redirect(&mut buf)?,
                '#' if !buf.word.started => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                _ => self.word_piece(&mut buf.word)?,
            }
        }
    }

    fn nested_list(&mut self) -> Result<(), Unsure> {
        self.depth += 1;
        let result = self.list(Some(')'));
        self.depth -= 1;
        result
    }

    /// Reads one piece of a word at `pos`: a character, a quoted string, an escape or an
    /// expansion.
    fn word_piece(&mut self, word: &mut WordBuf) -> Result<(), Unsure> {
        let Some(c) = self.peek() else { return Ok(()) };
        match c {
            '\'' => {
                self.pos += 1;
                word.begin();
                loop {
                    match self.peek() {
                        None => return unsure("an unclosed single quote"),
                        Some('\'') => break,
                        Some(c) => word.push_quoted(c),
                    }
                    self.pos += 1;
                }
                self.pos += 1;
                word.push_quoted_none();
            }
            '"' => {
                self.pos += 1;
                word.begin();
                word.push_quoted_none();
                self.double_quoted(word)?;
            }
            '\\' => match self.peek_at(1) {
                None => return unsure("a trailing backslash"),
                Some('\n') => self.pos += 2,
                Some(c) => {
                    self.pos += 2;
                    word.push_quoted(c);
                }
            },
            '$' => self.dollar(word, false)?,
            '`' => self.backticks(word)?,
            c => {
                self.pos += 1;
                word.push_plain(c);
            }
        }
        Ok(())
    }

    fn double_quoted(&mut self, word: &mut WordBuf) -> Result<(), Unsure> {
        loop {
            match self.peek() {
                None => return unsure("an unclosed double quote"),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => match self.peek_at(1) {
                    Some('\n') => self.pos += 2,
                    Some(c @ ('$' | '`' | '"' | '\\')) => {
                        self.pos += 2;
                        word.push_quoted(c);
                    }
                    _ => {
                        self.pos += 1;
                        word.push_quoted('\\');
                    }
                },
                Some('$') => self.dollar(word, true)?,
                Some('`') => self.backticks(word)?,
                Some(c) => {
                    self.pos += 1;
                    word.push_quoted(c);
                }
            }
        }
    }

    /// `$…` at `pos`.
    fn dollar(&mut self, word: &mut WordBuf, quoted: bool) -> Result<(), Unsure> {
        match self.peek_at(1) {
            Some('(') => {
                if self.peek_at(2) == Some('(') {
                    return unsure("an arithmetic expansion");
                }
                self.pos += 2;
                self.nested_list()?;
                word.expansion("$(…)");
            }
            Some('{') => {
                let start = self.pos;
                self.pos += 2;
                loop {
                    match self.peek() {
                        None => return unsure("an unclosed `${`"),
                        Some('}') => break,
                        Some('$' | '`' | '{' | '\'' | '"' | '\\') => {
                            return unsure("a parameter expansion holding quotes or substitutions");
                        }
                        Some(_) => self.pos += 1,
                    }
                }
                self.pos += 1;
                let written: String = self.chars[start..self.pos].iter().collect();
                word.expansion(&written);
            }
            Some('\'') if !quoted => {
                // ANSI-C quoting: we do not decode it, so the word is not literal.
                let start = self.pos;
                self.pos += 2;
                loop {
                    match self.peek() {
                        None => return unsure("an unclosed $'…' string"),
                        Some('\\') => self.pos += 2,
                        Some('\'') => break,
                        Some(_) => self.pos += 1,
                    }
                }
                self.pos += 1;
                let written: String = self.chars[start..self.pos.min(self.chars.len())].iter().collect();
                word.expansion(&written);
            }
            Some('"') if !quoted => {
                // $"…" is a translated string; read it as "…".
                self.pos += 1;
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let start = self.pos;
                self.pos += 1;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    self.pos += 1;
                }
                let written: String = self.chars[start..self.pos].iter().collect();
                word.expansion(&written);
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.pos += 2;
                word.expansion(&format!("${c}"));
            }
            _ => {
                self.pos += 1;
                if quoted { word.push_quoted('$') } else { word.push_plain('$') }
            }
        }
        Ok(())
    }

    /// `` `…` `` at `pos`: the old command substitution, read as its own command line.
    fn backticks(&mut self, word: &mut WordBuf) -> Result<(), Unsure> {
        self.pos += 1;
        let mut inner = String::new();
        loop {
            match self.peek() {
                None => return unsure("an unclosed backquote"),
                Some('`') => break,
                Some('\\') => match self.peek_at(1) {
                    Some(c @ ('`' | '\\' | '$')) => {
                        inner.push(c);
                        self.pos += 2;
                    }
                    _ => {
                        inner.push('\\');
                        self.pos += 1;
                    }
                },
                Some(c) => {
                    inner.push(c);
                    self.pos += 1;
                }
            }
        }
        self.pos += 1;
        let mut nested = Parser { chars: inner.chars().collect(), pos: 0, depth: self.depth + 1, out: Vec::new() };
        nested.list(None)?;
        self.out.append(&mut nested.out);
        word.expansion("`…`");
        Ok(())
    }

    /// A redirection at `pos` (`<`, `>` or `&>`), with its target word.
    fn redirect(&mut self, buf: &mut CommandBuf) -> Result<(), Unsure> {
        // A word of digits right before the operator is the descriptor, not an argument.
        if buf.word.started {
            if buf.word.digits_only {
                buf.word = WordBuf::default();
            } else {
                buf.end_word()?;
            }
        }
        let rest: String = self.chars[self.pos..].iter().take(3).collect();
        let (len, kind) = if rest.starts_with("<<<") {
            (3, RedirectKind::Input)
        } else if rest.starts_with("<<") {
            return unsure("a here-document");
        } else if rest.starts_with("&>>") {
            (3, RedirectKind::Output)
        } else if rest.starts_with("&>") || rest.starts_with(">>") || rest.starts_with(">|") || rest.starts_with("<>") {
            (2, RedirectKind::Output)
        } else if rest.starts_with(">&") || rest.starts_with("<&") {
            (2, RedirectKind::Duplicate)
        } else if rest.starts_with('<') {
            (1, RedirectKind::Input)
        } else {
            (1, RedirectKind::Output)
        };
        self.pos += len;
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        let mut target = WordBuf::default();
        while let Some(c) = self.peek() {
            if matches!(c, ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>') {
                break;
            }
            self.word_piece(&mut target)?;
        }
        let Some(target) = target.take() else { return unsure("a redirection without a target") };
        let target = Word { text: target.text, literal: target.literal };
        // `>&word` duplicates only onto a descriptor number or `-`; otherwise it is a file.
        let kind = if kind == RedirectKind::Duplicate
            && !(target.literal && (target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit())))
        {
            if rest.starts_with('<') { RedirectKind::Input } else { RedirectKind::Output }
        } else {
            kind
        };
        buf.cmd.redirects.push(Redirect { kind, target });
        Ok(())
    }
}

impl WordBuf {
    /// Quotes were read: the word exists even if empty, and is no descriptor or bare `{`.
    fn push_quoted_none(&mut self) {
        self.begin();
        self.digits_only = false;
        self.bare = None;
    }
}

/// Splits a line that [`commands`] would not read into rough fragments, for a last-resort
/// deny-list check: every run of characters between blanks and shell punctuation.
pub fn rough_fragments(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || ";&|()<>`$\"'\\{}".contains(c))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[doc(hidden)]
pub fn lit(text: &str) -> Word {
    Word::literal(text)
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
