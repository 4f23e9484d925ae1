//! Markdown of the answer, styled for a terminal as it streams: headings, fenced code blocks,
//! list items, quotes, rules, `inline code` and **bold**. Pure: text in, styled text out, so it
//! is tested without a terminal; the caller uses it only where stdout is a terminal with
//! colours on (elsewhere the answer goes out as the model wrote it).
//!
//! Line by line, not a document parser: a streamed answer is shown a line at a time (a
//! document parser would wait for the end, or re-render what is on the screen already), and
//! what a line means depends only on the lines before it (inside a fence or not).

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
}

impl MarkdownRenderer {
    /// The styled text of the lines `delta` completes (nothing while a line is incomplete).
    pub fn push(&mut self, delta: &str) -> String {
        let mut out = String::new();
        let mut rest = delta;
        while let Some(at) = rest.find('\n') {
            self.line.push_str(&rest[..at]);
            let line = std::mem::take(&mut self.line);
            out.push_str(&self.render_line(&line));
            out.push('\n');
            rest = &rest[at + 1..];
        }
        self.line.push_str(rest);
        out
    }

    /// The rest of the answer (a last line without a newline); a fence left open closes.
    pub fn finish(&mut self) -> String {
        let line = std::mem::take(&mut self.line);
        let out = if line.is_empty() { String::new() } else { self.render_line(&line) };
        self.fence = None;
        out
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

/// `inline code` and **bold** within a line; an unclosed marker stays as written.
fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    loop {
        let code = rest.find('`');
        let bold = rest.find("**");
        let (at, marker, style) = match (code, bold) {
            (Some(c), Some(b)) if b < c => (b, "**", Style::new().bold()),
            (Some(c), _) => (c, "`", code_style()),
            (None, Some(b)) => (b, "**", Style::new().bold()),
            (None, None) => break,
        };
        let after = &rest[at + marker.len()..];
        match after.find(marker).filter(|end| *end > 0) {
            Some(end) => {
                out.push_str(&rest[..at]);
                out.push_str(&paint(style, &after[..end]));
                rest = &after[end + marker.len()..];
            }
            None => {
                out.push_str(&rest[..at + marker.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
