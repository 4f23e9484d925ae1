//! The character-level reader behind `shell.rs`: words, quotes, expansions, separators,
//! groups and redirections. Compound commands, here-documents and arithmetic are read by the
//! methods `shell_compound.rs` adds to [`Parser`]. Anything it does not read is [`Unsure`].

use crate::shell_words::{MAX_DEPTH, SimpleCommand, Unsure, Word, unsure};

/// Reserved words that only open, separate or close the parts of a compound command: the
/// commands between them are read as any others.
const SEPARATING_KEYWORDS: [&str; 10] = ["if", "then", "else", "elif", "fi", "while", "until", "do", "done", "!"];

/// Reserved words whose following words are not commands, read by `shell_compound.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    /// `for` and `select`: a variable name and a word list (or an arithmetic header).
    For,
    Case,
    /// `esac`: ends the case clause whose item is being read.
    Esac,
    /// `[[ … ]]`
    Conditional,
    /// `function NAME`
    Function,
}

impl Special {
    fn of(word: &str) -> Option<Special> {
        Some(match word {
            "for" | "select" => Special::For,
            "case" => Special::Case,
            "esac" => Special::Esac,
            "[[" => Special::Conditional,
            "function" => Special::Function,
            _ => return None,
        })
    }
}

/// Reserved words this module does not read.
const UNREAD_KEYWORDS: [&str; 3] = ["coproc", "]]", "in"];

/// Where a list of commands ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The end of the input.
    Input,
    /// A `)` (consumed): a subshell or a substitution.
    Paren,
    /// `;;`, `;&`, `;;&` (consumed) or `esac`: an item of a case clause.
    CaseItem,
}

/// How a case item's list ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// At the end that was asked for, or at a case item terminator.
    Closed,
    /// At `esac` (consumed).
    Esac,
}

#[derive(Default)]
pub(crate) struct WordBuf {
    pub(crate) text: String,
    pub(crate) literal: bool,
    /// Some quote or escape was read: the word is no reserved word.
    pub(crate) quoted: bool,
    /// Some character was read for this word (an empty quoted word counts).
    pub(crate) started: bool,
    /// Only unquoted ASCII digits so far (a descriptor before `<`/`>`).
    pub(crate) digits_only: bool,
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
        self.quoted = true;
        self.text.push(c);
        self.digits_only = false;
        self.bare = None;
    }
    pub(crate) fn push_plain(&mut self, c: char) {
        let first = !self.started;
        self.begin();
        self.text.push(c);
        self.digits_only &= c.is_ascii_digit();
        self.bare = if first && matches!(c, '{' | '}' | '!') { Some(c) } else { None };
        if matches!(c, '*' | '?' | '[' | '{') || (first && c == '~') {
            self.literal = false;
        }
    }
    pub(crate) fn expansion(&mut self, written: &str) {
        self.begin();
        self.text.push_str(written);
        self.literal = false;
        self.digits_only = false;
        self.bare = None;
    }
    pub(crate) fn take(&mut self) -> Option<WordBuf> {
        if self.started { Some(std::mem::take(self)) } else { None }
    }
}

#[derive(Default)]
pub(crate) struct CommandBuf {
    pub(crate) cmd: SimpleCommand,
    pub(crate) word: WordBuf,
    /// A `( … )` subshell (or `[[ … ]]`, `(( … ))`, a case clause) just closed: only
    /// redirections and separators may follow.
    pub(crate) after_group: bool,
    /// A reserved word whose following words `shell_compound.rs` reads.
    special: Option<Special>,
}

impl CommandBuf {
    pub(crate) fn end_word(&mut self) -> Result<(), Unsure> {
        let Some(w) = self.word.take() else { return Ok(()) };
        if self.after_group {
            return unsure("words after a subshell");
        }
        if self.cmd.words.is_empty() && self.cmd.redirects.is_empty() && !w.quoted {
            // `{`, `}` and `!` in command position open or close a group or negate: no command.
            if w.bare.is_some() || SEPARATING_KEYWORDS.contains(&w.text.as_str()) {
                return Ok(());
            }
            if let Some(special) = Special::of(&w.text) {
                self.special = Some(special);
                return Ok(());
            }
            if UNREAD_KEYWORDS.contains(&w.text.as_str()) {
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

/// A here-document whose body is still to be read (`shell_compound` reads it).
#[derive(Debug)]
pub(crate) struct HereDoc {
    pub(crate) delimiter: String,
    /// `<<-`: leading tabs are stripped from the body and the delimiter line.
    pub(crate) strip_tabs: bool,
    /// The delimiter was unquoted: the body is expanded like a double-quoted string.
    pub(crate) expands: bool,
}

pub(crate) struct Parser {
    pub(crate) out: Vec<SimpleCommand>,
    pub(crate) chars: Vec<char>,
    pub(crate) pos: usize,
    pub(crate) depth: usize,
    /// Here-documents whose bodies start after the next newline.
    pub(crate) heredocs: Vec<HereDoc>,
}

impl Parser {
    pub(crate) fn new(line: &str, depth: usize) -> Self {
        Parser { chars: line.chars().collect(), pos: 0, depth, out: Vec::new(), heredocs: Vec::new() }
    }

    pub(crate) fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
    pub(crate) fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    /// A list of commands up to `end`.
    pub(crate) fn list(&mut self, end: End) -> Result<Ended, Unsure> {
        if self.depth > MAX_DEPTH {
            return unsure("commands nested too deeply");
        }
        let mut buf = CommandBuf::default();
        loop {
            if let Some(special) = buf.special.take() {
                if special == Special::Esac {
                    if end != End::CaseItem {
                        return unsure("`esac` outside a case clause");
                    }
                    buf.end_command(&mut self.out)?;
                    return Ok(Ended::Esac);
                }
                self.special(special, &mut buf)?;
                continue;
            }
            let Some(c) = self.peek() else {
                buf.end_word()?;
                if buf.special.is_some() {
                    continue;
                }
                if end != End::Input {
                    return unsure("an unclosed parenthesis or case clause");
                }
                if !self.heredocs.is_empty() {
                    return unsure("a here-document without its body");
                }
                buf.end_command(&mut self.out)?;
                return Ok(Ended::Closed);
            };
            match c {
                ' ' | '\t' => {
                    self.pos += 1;
                    buf.end_word()?;
                }
                '\n' => {
                    buf.end_command(&mut self.out)?;
                    self.newline()?;
                }
                ';' => {
                    buf.end_command(&mut self.out)?;
                    if matches!(self.peek_at(1), Some(';' | '&')) {
                        if end != End::CaseItem {
                            return unsure("a case clause terminator outside a case clause");
                        }
                        self.pos += if self.peek_at(1) == Some(';') && self.peek_at(2) == Some('&') { 3 } else { 2 };
                        return Ok(Ended::Closed);
                    }
                    self.pos += 1;
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
                ')' if end == End::Paren => {
                    self.pos += 1;
                    buf.end_command(&mut self.out)?;
                    return Ok(Ended::Closed);
                }
                ')' => return unsure("an unbalanced `)`"),
                '(' => self.open_paren(&mut buf)?,
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    self.pos += 2;
                    self.nested_list()?;
                    buf.word.expansion("<(…)");
                }
                '<' | '>' => self.redirect(&mut buf)?,
                '#' if !buf.word.started => self.comment(),
                _ => self.word_piece(&mut buf.word)?,
            }
        }
    }

    /// `(` in a list: a subshell, an arithmetic command or the `()` of a function definition.
    fn open_paren(&mut self, buf: &mut CommandBuf) -> Result<(), Unsure> {
        // A reserved word right before `(` is one; a single plain word may name a function.
        buf.end_word()?;
        if buf.special.is_some() {
            return unsure("`(` right after a reserved word");
        }
        let at_command = buf.cmd.words.is_empty() && buf.cmd.redirects.is_empty() && !buf.after_group;
        if at_command && self.peek_at(1) == Some('(') {
            self.pos += 2;
            self.arithmetic_command(false)?;
            buf.after_group = true;
            return Ok(());
        }
        if let [name] = buf.cmd.words.as_slice()
            && buf.cmd.redirects.is_empty()
            && name.literal
            && self.function_parens()
        {
            buf.cmd.words.clear();
            return Ok(());
        }
        if !at_command {
            return unsure("`(` inside a command (a pattern or an array)");
        }
        self.pos += 1;
        self.nested_list()?;
        buf.after_group = true;
        Ok(())
    }

    /// Skips a comment up to (not including) the end of its line.
    pub(crate) fn comment(&mut self) {
        while self.peek().is_some_and(|c| c != '\n') {
            self.pos += 1;
        }
    }

    /// Reads one word (up to a blank or an operator) into `word`.
    pub(crate) fn read_word(&mut self, word: &mut WordBuf) -> Result<(), Unsure> {
        while let Some(c) = self.peek() {
            if matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>') {
                break;
            }
            self.word_piece(word)?;
        }
        Ok(())
    }

    fn nested_list(&mut self) -> Result<(), Unsure> {
        self.depth += 1;
        let result = self.list(End::Paren);
        self.depth -= 1;
        result.map(|_| ())
    }

    /// Reads one piece of a word at `pos`: a character, a quoted string, an escape or an
    /// expansion.
    pub(crate) fn word_piece(&mut self, word: &mut WordBuf) -> Result<(), Unsure> {
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

    pub(crate) fn double_quoted(&mut self, word: &mut WordBuf) -> Result<(), Unsure> {
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
    pub(crate) fn dollar(&mut self, word: &mut WordBuf, quoted: bool) -> Result<(), Unsure> {
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                self.pos += 3;
                self.arithmetic_command(false)?;
                word.expansion("$((…))");
            }
            Some('(') => {
                self.pos += 2;
                self.nested_list()?;
                word.expansion("$(…)");
            }
            Some('{') => {
                let start = self.pos;
                self.pos += 2;
                self.parameter(quoted)?;
                let written: String = self.chars[start..self.pos].iter().collect();
                word.expansion(&written);
            }
            Some('[') => return unsure("a `$[…]` arithmetic expansion"),
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
    pub(crate) fn backticks(&mut self, word: &mut WordBuf) -> Result<(), Unsure> {
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
        nested.list(End::Input)?;
        self.out.append(&mut nested.out);
        word.expansion("`…`");
        Ok(())
    }
}

impl WordBuf {
    /// Quotes were read: the word exists even if empty, and is no descriptor or bare `{`.
    fn push_quoted_none(&mut self) {
        self.begin();
        self.quoted = true;
        self.digits_only = false;
        self.bare = None;
    }
}
