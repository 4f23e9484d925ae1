//! The character-level reader behind [`crate::shell`]: words, quotes, expansions,
//! separators, groups and redirections. Anything it does not read is [`Unsure`].

use crate::shell::{MAX_DEPTH, Redirect, RedirectKind, SimpleCommand, Unsure, Word, unsure};

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

pub(crate) struct Parser {
    pub(crate) out: Vec<SimpleCommand>,
    chars: Vec<char>,
    pos: usize,
    depth: usize,
}

impl Parser {
    pub(crate) fn new(line: &str, depth: usize) -> Self {
        Parser { chars: line.chars().collect(), pos: 0, depth, out: Vec::new() }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    /// A list of commands up to the end of input, or up to `close` (consumed).
    pub(crate) fn list(&mut self, close: Option<char>) -> Result<(), Unsure> {
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
                ' ' | '\t' => {
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
        let mut nested = Parser::new(&inner, self.depth + 1);
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
            if matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>') {
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
