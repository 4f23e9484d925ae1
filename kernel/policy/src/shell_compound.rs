//! The parts of the shell reader that are more than words and separators: `for`/`select`
//! headers, case clauses, `[[ … ]]`, function definitions, arithmetic, `${ … }`,
//! redirections and here-documents.
//!
//! The other compound commands (`if`, `while`, `until`, `{ …; }`) need nothing here: their
//! reserved words only separate the commands inside, which are read as any others.
//! Arithmetic is listed as a command of its own, `((` followed by the expression, whose word
//! is literal only when the expression names no variable: bash evaluates a variable's value
//! as arithmetic again, and `a[$(cmd)]` in that value runs `cmd`.

use crate::shell_parser::{CommandBuf, End, Ended, HereDoc, Parser, Special, WordBuf};
use crate::shell_words::{MAX_DEPTH, Redirect, RedirectKind, SimpleCommand, Unsure, Word, is_name, unsure};

fn literal(text: &str) -> Word {
    Word { text: text.to_string(), literal: true }
}

/// Whether the inside of `${ … }` evaluates something as arithmetic that may name a variable:
/// an indirection (`${!x}`), a subscript (`${a[i]}`) or a substring (`${x:i:n}`).
fn evaluates_arithmetic(inside: &str) -> bool {
    let names = |s: &str| s.contains(|c: char| c.is_alphabetic() || c == '_' || c == '$' || c == '`');
    let body = inside.trim_start_matches('#');
    if body.starts_with('!') {
        return true;
    }
    let rest = body.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
    let (subscript, after) = match rest.strip_prefix('[') {
        Some(r) => r.split_once(']').unwrap_or((r, "")),
        None => ("", rest),
    };
    let substring = after.strip_prefix(':').filter(|r| !r.starts_with(['-', '=', '+', '?']));
    names(subscript) || substring.is_some_and(names)
}

impl Parser {
    /// Reads what follows a reserved word of [`Special`] (already consumed).
    pub(crate) fn special(&mut self, special: Special, buf: &mut CommandBuf) -> Result<(), Unsure> {
        self.depth += 1;
        let result = match special {
            Special::For => self.for_header(),
            Special::Case => self.case_clause().map(|()| buf.after_group = true),
            Special::Conditional => self.conditional().map(|cmd| {
                self.out.push(cmd);
                buf.after_group = true;
            }),
            Special::Function => self.function_header(),
            Special::Esac => unsure("`esac` outside a case clause"),
        };
        self.depth -= 1;
        result
    }

    fn blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
    }

    /// Blanks, newlines and comments (here-document bodies after each newline).
    fn blank_lines(&mut self) -> Result<(), Unsure> {
        loop {
            match self.peek() {
                Some(' ' | '\t') => self.pos += 1,
                Some('\n') => self.newline()?,
                Some('#') => self.comment(),
                _ => return Ok(()),
            }
        }
    }

    /// Consumes the reserved word `word` when it is next (followed by a delimiter).
    fn reserved(&mut self, word: &str) -> bool {
        let len = word.chars().count();
        let matches = word.chars().enumerate().all(|(i, c)| self.peek_at(i) == Some(c))
            && self.peek_at(len).is_none_or(|c| " \t\n;&|()<>".contains(c));
        if matches {
            self.pos += len;
        }
        matches
    }

    /// `for NAME [in WORDS] ;` or `for (( … ))`; the `do … done` body is an ordinary list.
    fn for_header(&mut self) -> Result<(), Unsure> {
        self.blanks();
        if self.peek() == Some('(') && self.peek_at(1) == Some('(') {
            self.pos += 2;
            return self.arithmetic_command(true);
        }
        let mut name = WordBuf::default();
        self.read_word(&mut name)?;
        if name.quoted || !is_name(&name.text) {
            return unsure("`for` without a variable name");
        }
        self.blank_lines()?;
        if !self.reserved("in") {
            return Ok(());
        }
        loop {
            self.blanks();
            match self.peek() {
                Some(';') if self.peek_at(1) != Some(';') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\n') => return self.newline(),
                Some('#') => self.comment(),
                None => return unsure("a `for` word list without an end"),
                Some(c) if ";&|()<>".contains(c) => return unsure("an operator in a `for` word list"),
                Some(_) => self.read_word(&mut WordBuf::default())?,
            }
        }
    }

    /// `case WORD in [(]PATTERN[|PATTERN]…) LIST ;; … esac`, after `case`.
    fn case_clause(&mut self) -> Result<(), Unsure> {
        self.blanks();
        let mut subject = WordBuf::default();
        self.read_word(&mut subject)?;
        if !subject.started {
            return unsure("`case` without a word");
        }
        self.blank_lines()?;
        if !self.reserved("in") {
            return unsure("`case` without `in`");
        }
        loop {
            self.blank_lines()?;
            if self.reserved("esac") {
                return Ok(());
            }
            if self.peek() == Some('(') {
                self.pos += 1;
            }
            self.case_patterns()?;
            if self.list(End::CaseItem)? == Ended::Esac {
                return Ok(());
            }
        }
    }

    /// The patterns of a case item, through its `)`.
    fn case_patterns(&mut self) -> Result<(), Unsure> {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '|') => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    return Ok(());
                }
                None => return unsure("an unclosed case pattern"),
                Some(c) if "\n;&(<>".contains(c) => return unsure("a case pattern this reader does not read"),
                Some(_) => self.read_word(&mut WordBuf::default())?,
            }
        }
    }

    /// `[[ … ]]` after `[[`, as a command of its own whose words are the expression's.
    fn conditional(&mut self) -> Result<SimpleCommand, Unsure> {
        let mut cmd = SimpleCommand { words: vec![literal("[[")], redirects: Vec::new() };
        loop {
            self.blanks();
            let regex = cmd.words.last().is_some_and(|w| w.literal && w.text == "=~");
            match self.peek() {
                None | Some('\n' | ';') => return unsure("an unclosed `[[`"),
                Some(']')
                    if self.peek_at(1) == Some(']') && self.peek_at(2).is_none_or(|c| " \t\n;&|)<>".contains(c)) =>
                {
                    self.pos += 2;
                    cmd.words.push(literal("]]"));
                    return Ok(cmd);
                }
                Some(c @ ('&' | '|')) if self.peek_at(1) == Some(c) => {
                    self.pos += 2;
                    cmd.words.push(literal(if c == '&' { "&&" } else { "||" }));
                }
                Some('&' | '|') => return unsure("a lone `&` or `|` in `[[`"),
                Some(c @ ('(' | ')' | '<' | '>')) if !regex => {
                    self.pos += 1;
                    cmd.words.push(literal(&c.to_string()));
                }
                Some(_) if regex => cmd.words.push(self.regex_word()?),
                Some(_) => {
                    let mut word = WordBuf::default();
                    self.read_word(&mut word)?;
                    match word.take() {
                        Some(w) => cmd.words.push(Word { text: w.text, literal: w.literal }),
                        None => return unsure("an operator this reader does not read in `[[`"),
                    }
                }
            }
        }
    }

    /// The right side of `=~`: up to a blank outside parentheses, which may hold `(`, `)`, `|`.
    fn regex_word(&mut self) -> Result<Word, Unsure> {
        let mut word = WordBuf::default();
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' if depth == 0 => break,
                '\n' | ';' | '&' | '<' | '>' => break,
                '(' => depth += 1,
                ')' if depth == 0 => break,
                ')' => depth -= 1,
                '|' => {}
                _ => {
                    self.word_piece(&mut word)?;
                    continue;
                }
            }
            self.pos += 1;
            word.push_plain(c);
        }
        word.take()
            .map(|w| Word { text: w.text, literal: w.literal })
            .map_or_else(|| unsure("`=~` without a pattern"), Ok)
    }

    /// `function NAME [()]`: the body that follows is an ordinary compound command.
    fn function_header(&mut self) -> Result<(), Unsure> {
        self.blanks();
        let mut name = WordBuf::default();
        self.read_word(&mut name)?;
        if !name.started {
            return unsure("`function` without a name");
        }
        self.blanks();
        if self.peek() == Some('(') && !self.function_parens() {
            return unsure("`function NAME (` without `)`");
        }
        Ok(())
    }

    /// Consumes `( )` (the parentheses of `NAME ()`) when they are next.
    pub(crate) fn function_parens(&mut self) -> bool {
        let mut i = 1;
        while matches!(self.peek_at(i), Some(' ' | '\t')) {
            i += 1;
        }
        let matches = self.peek() == Some('(') && self.peek_at(i) == Some(')');
        if matches {
            self.pos += i + 1;
        }
        matches
    }

    /// An arithmetic expression after `((` or `$((`, through its `))`, listed as the command
    /// `((` EXPRESSION. `semicolons`: a `for (( ; ; ))` header.
    pub(crate) fn arithmetic_command(&mut self, semicolons: bool) -> Result<(), Unsure> {
        if self.depth > MAX_DEPTH {
            return unsure("commands nested too deeply");
        }
        self.depth += 1;
        let result = self.arithmetic(semicolons);
        self.depth -= 1;
        let expression = result?;
        self.out.push(SimpleCommand { words: vec![literal("(("), expression], redirects: Vec::new() });
        Ok(())
    }

    fn arithmetic(&mut self, semicolons: bool) -> Result<Word, Unsure> {
        let start = self.pos;
        let mut parens = 0usize;
        let mut names = false;
        let mut scratch = WordBuf::default();
        loop {
            match self.peek() {
                None => return unsure("an unclosed arithmetic expression"),
                Some(')') if parens == 0 => {
                    if self.peek_at(1) != Some(')') {
                        return unsure("an arithmetic expression closed by a single `)`");
                    }
                    let text: String = self.chars[start..self.pos].iter().collect();
                    self.pos += 2;
                    return Ok(Word { text: text.trim().to_string(), literal: !names });
                }
                Some(')') => {
                    parens -= 1;
                    self.pos += 1;
                }
                Some('(') => {
                    parens += 1;
                    self.pos += 1;
                }
                Some('$') => {
                    names = true;
                    self.dollar(&mut scratch, true)?;
                }
                Some('`') => {
                    names = true;
                    self.backticks(&mut scratch)?;
                }
                Some('"') => {
                    names = true;
                    self.pos += 1;
                    self.double_quoted(&mut scratch)?;
                }
                Some(';') if semicolons => self.pos += 1,
                Some('\'' | ';' | '\\' | '\n') => {
                    return unsure("a quote, `;`, escape or newline in an arithmetic expression");
                }
                Some(c) => {
                    names |= c.is_alphabetic() || c == '_';
                    self.pos += 1;
                }
            }
        }
    }

    /// The inside of `${ … }` through its `}`; substitutions in it are read and listed. A
    /// subscript that names a variable is listed as arithmetic.
    pub(crate) fn parameter(&mut self, quoted: bool) -> Result<(), Unsure> {
        if self.depth > MAX_DEPTH {
            return unsure("commands nested too deeply");
        }
        self.depth += 1;
        let start = self.pos;
        let mut scratch = WordBuf::default();
        let mut braces = 0usize;
        let result = loop {
            match self.peek() {
                None => break unsure("an unclosed `${`"),
                Some('}') if braces == 0 => break Ok(()),
                Some('}') => {
                    braces -= 1;
                    self.pos += 1;
                }
                Some('{') => {
                    braces += 1;
                    self.pos += 1;
                }
                Some('\'') if !quoted => {
                    if let Err(e) = self.word_piece(&mut scratch) {
                        break Err(e);
                    }
                }
                Some('"' | '$' | '`' | '\\') => {
                    if let Err(e) = self.word_piece(&mut scratch) {
                        break Err(e);
                    }
                }
                Some(_) => self.pos += 1,
            }
        };
        self.depth -= 1;
        result?;
        let inside: String = self.chars[start..self.pos].iter().collect();
        self.pos += 1;
        if evaluates_arithmetic(&inside) {
            self.out.push(SimpleCommand {
                words: vec![literal("(("), Word { text: inside, literal: false }],
                redirects: Vec::new(),
            });
        }
        Ok(())
    }

    /// A redirection at `pos` (`<`, `>` or `&>`), with its target word.
    pub(crate) fn redirect(&mut self, buf: &mut CommandBuf) -> Result<(), Unsure> {
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
            let strip_tabs = rest.starts_with("<<-");
            self.pos += if strip_tabs { 3 } else { 2 };
            let target = self.heredoc_operator(strip_tabs)?;
            buf.cmd.redirects.push(Redirect { kind: RedirectKind::Input, target });
            return Ok(());
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
        self.read_word(&mut target)?;
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

    /// The delimiter after `<<` or `<<-`; the body is read after the next newline.
    pub(crate) fn heredoc_operator(&mut self, strip_tabs: bool) -> Result<Word, Unsure> {
        self.blanks();
        let mut word = WordBuf::default();
        self.read_word(&mut word)?;
        let Some(word) = word.take() else { return unsure("a here-document without a delimiter") };
        if !word.literal && !word.quoted {
            return unsure("a here-document delimiter with an expansion");
        }
        self.heredocs.push(HereDoc { delimiter: word.text.clone(), strip_tabs, expands: !word.quoted });
        Ok(Word { text: word.text, literal: true })
    }

    /// Consumes a newline, then the bodies of the here-documents opened on its line.
    pub(crate) fn newline(&mut self) -> Result<(), Unsure> {
        self.pos += 1;
        for doc in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            loop {
                if self.peek().is_none() {
                    return unsure("a here-document without its closing delimiter");
                }
                let line = self.heredoc_line(&doc)?;
                let line = if doc.strip_tabs { line.trim_start_matches('\t') } else { line.as_str() };
                if line == doc.delimiter {
                    break;
                }
                body.push_str(line);
                body.push('\n');
            }
            if doc.expands {
                self.expand_body(&body)?;
            }
        }
        Ok(())
    }

    /// One line of a here-document's body, through its newline. In an unquoted one a
    /// backslash before the newline joins the next line, also for the delimiter: `EO\`, `F`
    /// closes `<<EOF`, and what follows is commands.
    fn heredoc_line(&mut self, doc: &HereDoc) -> Result<String, Unsure> {
        let mut line = String::new();
        loop {
            let start = self.pos;
            while self.peek().is_some_and(|c| c != '\n') {
                self.pos += 1;
            }
            line.extend(&self.chars[start..self.pos]);
            let newline = self.peek().is_some();
            if newline {
                self.pos += 1;
            }
            let backslashes = line.chars().rev().take_while(|c| *c == '\\').count();
            if !(doc.expands && newline && backslashes % 2 == 1) {
                return Ok(line);
            }
            if doc.strip_tabs {
                return unsure("a line continuation in a `<<-` here-document");
            }
            line.pop();
        }
    }

    /// Lists the commands substituted in an unquoted here-document's body.
    fn expand_body(&mut self, body: &str) -> Result<(), Unsure> {
        let mut nested = Parser::new(body, self.depth + 1);
        let mut scratch = WordBuf::default();
        while let Some(c) = nested.peek() {
            match c {
                '\\' => nested.pos += 2,
                '$' => nested.dollar(&mut scratch, true)?,
                '`' => nested.backticks(&mut scratch)?,
                _ => nested.pos += 1,
            }
        }
        self.out.append(&mut nested.out);
        Ok(())
    }
}
