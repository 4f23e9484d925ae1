//! Markdown of the answer, styled for a terminal as it streams: headings, fenced code blocks,
//! list items, quotes, rules, tables, `inline code`, **bold**, *italics* and [links](url).
//! Pure: text in, styled text out, so it is tested without a terminal; the caller uses it only
//! where stdout is a terminal with colours on (elsewhere the answer goes out as the model wrote
//! it).
//!
//! Line by line, not a document parser: a streamed answer is shown a line at a time (a
//! document parser would wait for the end, or re-render what is on the screen already), and
//! what a line means depends only on the lines before it (inside a fence or not). A table is
//! the exception: its rows are held until it ends, since its columns' widths need them all.

use anstyle::{AnsiColor, Style};

fn heading_style(level: usize) -> Style {
    match level {
        1 => AnsiColor::Magenta.on_default().bold().underline(),
        2 => AnsiColor::Magenta.on_default().bold(),
        _ => Style::new().bold(),
    }
}

fn code_style() -> Style {
    AnsiColor::Cyan.on_default()
}

fn quiet() -> Style {
    Style::new().dimmed()
}

fn link_style() -> Style {
    AnsiColor::Blue.on_default().underline()
}

fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

/// Streams markdown into styled terminal text, a complete line at a time.
#[derive(Debug, Default)]
pub struct MarkdownRenderer {
    /// The part of the current line not yet shown.
    line: String,
    /// Inside a fenced code block: its fence (``` or ~~~, and how many).
    fence: Option<String>,
    /// The rows of a table being read (`| a | b |` lines), shown when it ends.
    table: Vec<String>,
}

impl MarkdownRenderer {
    /// The styled text of the lines `delta` completes (nothing while a line is incomplete).
    pub fn push(&mut self, delta: &str) -> String {
        let mut out = String::new();
        let mut rest = delta;
        while let Some(at) = rest.find('\n') {
            self.line.push_str(&rest[..at]);
            let line = std::mem::take(&mut self.line);
            if self.fence.is_none() && line.trim_start().starts_with('|') {
                self.table.push(line);
            } else {
                out.push_str(&self.end_table());
                out.push_str(&self.render_line(&line));
                out.push('\n');
            }
            rest = &rest[at + 1..];
        }
        self.line.push_str(rest);
        out
    }

    /// The rest of the answer (a last line without a newline); a fence left open closes.
    pub fn finish(&mut self) -> String {
        let line = std::mem::take(&mut self.line);
        if self.fence.is_none() && line.trim_start().starts_with('|') {
            self.table.push(line);
            let table = self.end_table();
            return table.strip_suffix('\n').unwrap_or(&table).to_owned();
        }
        let mut out = self.end_table();
        if !line.is_empty() {
            out.push_str(&self.render_line(&line));
        }
        self.fence = None;
        out
    }

    /// The held table's lines (each ending in a newline), if one is held.
    fn end_table(&mut self) -> String {
        let rows = std::mem::take(&mut self.table);
        table::render(&rows).into_iter().map(|line| line + "\n").collect()
    }

    fn render_line(&mut self, line: &str) -> String {
        let trimmed = line.trim_start();
        if let Some(fence) = &self.fence {
            if trimmed.starts_with(fence.as_str()) && trimmed.trim_end().chars().all(|c| fence.starts_with(c)) {
                self.fence = None;
                return paint(quiet(), line);
            }
            return paint(code_style(), line);
        }
        if let Some(fence) = opening_fence(trimmed) {
            self.fence = Some(fence);
            return paint(quiet(), line);
        }
        let indent = &line[..line.len() - trimmed.len()];
        if let Some((level, text)) = heading(trimmed) {
            return format!("{indent}{}", paint(heading_style(level), text));
        }
        if is_rule(trimmed) {
            return paint(quiet(), &"─".repeat(40));
        }
        if let Some(text) = trimmed.strip_prefix("> ").or_else(|| (trimmed == ">").then_some("")) {
            return format!("{indent}{}{}", paint(quiet(), "│ "), inline(text));
        }
        if let Some(text) = ["- ", "* ", "+ "].iter().find_map(|m| trimmed.strip_prefix(m)) {
            return format!("{indent}• {}", inline(text));
        }
        format!("{indent}{}", inline(trimmed))
    }
}

/// The fence a line opens (three or more backticks or tildes, then an info string), if any.
fn opening_fence(line: &str) -> Option<String> {
    let mark = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let count = line.chars().take_while(|c| *c == mark).count();
    let info = &line[count..];
    // A backtick fence's info string has no backtick (CommonMark).
    (count >= 3 && !(mark == '`' && info.contains('`'))).then(|| mark.to_string().repeat(count))
}

/// `# Title` to (1, "Title"): one to six `#` and a space.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    let text = line[level..].strip_prefix(' ')?;
    (1..=6).contains(&level).then(|| (level, text.trim_end_matches([' ', '#'])))
}

/// `---`, `***` or `___` (three or more, spaces between allowed).
fn is_rule(line: &str) -> bool {
    let marks: Vec<char> = line.chars().filter(|c| !c.is_whitespace()).collect();
    marks.len() >= 3 && ['-', '*', '_'].iter().any(|m| marks.iter().all(|c| c == m))
}

/// `inline code`, **bold**, *italics* (or _italics_) and [links](url) within a line; an
/// unclosed marker stays as written. Code is taken first: nothing inside it is markdown.
pub(crate) fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    // The source character before the next one read (styles are no characters of the text).
    let mut prev: Option<char> = None;
    while let Some(at) = rest.find(['`', '*', '_', '[']) {
        let (before, from) = rest.split_at(at);
        prev = before.chars().last().or(prev);
        out.push_str(before);
        let used = match span(from, prev) {
            Some((shown, used)) => {
                out.push_str(&shown);
                used
            }
            None => {
                // Not a span: the marker character is text.
                let c = from.chars().next().map_or(1, char::len_utf8);
                out.push_str(&from[..c]);
                c
            }
        };
        prev = from[..used].chars().last();
        rest = &from[used..];
    }
    out.push_str(rest);
    out
}

/// The styled span `text` opens, with the bytes it used; `prev` is the character before it.
fn span(text: &str, prev: Option<char>) -> Option<(String, usize)> {
    if let Some(after) = text.strip_prefix('`') {
        let end = after.find('`').filter(|end| *end > 0)?;
        return Some((paint(code_style(), &after[..end]), end + 2));
    }
    if let Some(after) = text.strip_prefix("**") {
        let end = after.find("**").filter(|end| *end > 0)?;
        return Some((paint(Style::new().bold(), &after[..end]), end + 4));
    }
    if let Some(label_from) = text.strip_prefix('[') {
        let close = label_from.find("](")?;
        let (label, url_from) = (&label_from[..close], &label_from[close + 2..]);
        let url = &url_from[..url_from.find(')')?];
        if label.is_empty() || url.is_empty() || url.contains(char::is_whitespace) {
            return None;
        }
        let used = 1 + close + 2 + url.len() + 1;
        let shown = if label == url {
            paint(link_style(), url)
        } else {
            format!("{} {}", paint(link_style(), label), paint(quiet(), &format!("({url})")))
        };
        return Some((shown, used));
    }
    // *italics* or _italics_: the opening marker is followed by a non-space, the closing one
    // follows a non-space; `_` does not work inside a word (snake_case stays as written).
    let mark = text.chars().next().filter(|c| *c == '*' || *c == '_')?;
    let after = &text[1..];
    if after.starts_with(char::is_whitespace) || after.starts_with(mark) {
        return None;
    }
    if mark == '_' && prev.is_some_and(char::is_alphanumeric) {
        return None;
    }
    let end = after.char_indices().skip(1).find_map(|(i, c)| {
        let closes = c == mark
            && !after[..i].ends_with(char::is_whitespace)
            && (mark == '*' || !after[i + 1..].starts_with(char::is_alphanumeric));
        closes.then_some(i)
    })?;
    // Not nested: a style's end resets them all, so an inner span would end the outer one.
    Some((paint(Style::new().italic(), &after[..end]), end + 2))
}

mod table;

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
