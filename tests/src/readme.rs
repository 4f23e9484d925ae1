//! The READMEs' fenced blocks, read the way the README test (tests/tests/readme.rs) runs them:
//! a shell block's logical lines (`\` continuations and quotes that span lines joined, trailing
//! `# ...` comments cut, a `# {...}` line after a command kept as the output it shows), and
//! the READMEs' notation for alternatives (`superpi kernel status | stop`,
//! `superpi completions bash|zsh|fish`). Pure text; nothing here runs anything.

/// A fenced block of a markdown file.
#[derive(Debug, Clone)]
pub struct Block {
    /// The fence's info string (`sh`, `bash`, `json`, `text`, or empty).
    pub lang: String,
    /// The line of the opening fence (1-based).
    pub line: usize,
    /// The nearest heading above it, without its `#`s.
    pub heading: String,
    pub body: String,
    /// Only blank lines separate it from the block before (so it can show that block's output).
    pub follows_directly: bool,
}

impl Block {
    pub fn is_shell(&self) -> bool {
        matches!(self.lang.as_str(), "sh" | "bash" | "shell" | "console")
    }
}

/// The fenced blocks of `markdown`, in order.
pub fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut heading = String::new();
    let mut open: Option<(String, usize, bool, Vec<&str>)> = None;
    let mut blank_since_block = false;
    for (index, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        match open.as_mut() {
            Some((_, _, _, body)) if !trimmed.starts_with("```") => body.push(line),
            Some(_) => {
                let (lang, start, follows_directly, body) = open.take().unwrap_or_default();
                out.push(Block {
                    lang,
                    line: start,
                    heading: heading.clone(),
                    body: body.join("\n"),
                    follows_directly,
                });
                blank_since_block = true;
            }
            None if trimmed.starts_with("```") => {
                let lang = trimmed.trim_start_matches('`').trim().to_string();
                open = Some((lang, index + 1, blank_since_block && !out.is_empty(), Vec::new()));
            }
            None => {
                let title = trimmed.trim_start_matches('#');
                if title.len() < trimmed.len() && title.starts_with(' ') {
                    heading = title.trim().to_string();
                }
                if !line.trim().is_empty() {
                    blank_since_block = false;
                }
            }
        }
    }
    out
}

/// One command of a shell block, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// The file line it starts on.
    pub line: usize,
    /// The command: continuations joined, a quote spanning lines kept with its newlines, the
    /// trailing comment cut.
    pub text: String,
    /// Its trailing comment, without `#`.
    pub comment: String,
    /// The `# ...` lines right after it that show its output (`# {...}`, `# 202 {...}`).
    pub shown: Vec<String>,
}

/// The commands of a shell block.
pub fn commands(block: &Block) -> Vec<Command> {
    let mut out: Vec<Command> = Vec::new();
    // A command read so far, and whether it ended in `\` (joined by a space; a quote left
    // open keeps its newline).
    let mut pending: Option<(usize, String, bool)> = None;
    for (offset, raw) in block.body.lines().enumerate() {
        let line = block.line + 1 + offset;
        let (start, mut text) = match pending.take() {
            Some((start, mut text, continued)) => {
                if continued {
                    text.push(' ');
                    text.push_str(raw.trim_start());
                } else {
                    text.push('\n');
                    text.push_str(raw);
                }
                (start, text)
            }
            None => {
                let trimmed = raw.trim();
                if trimmed.is_empty() {
                    continue;
                }
                if let Some(comment) = trimmed.strip_prefix('#') {
                    let comment = comment.trim();
                    if let Some(last) = out.last_mut().filter(|_| shows_output(comment)) {
                        last.shown.push(comment.to_string());
                    }
                    continue;
                }
                (line, raw.to_string())
            }
        };
        let scan = scan(&text);
        if scan.open_quote {
            pending = Some((start, text, false));
            continue;
        }
        let comment = match scan.comment_at {
            Some(at) => {
                let comment = text[at + 1..].trim().to_string();
                text.truncate(at);
                comment
            }
            None => String::new(),
        };
        let trimmed = text.trim_end();
        if let Some(joined) = trimmed.strip_suffix('\\') {
            pending = Some((start, joined.trim_end().to_string(), true));
            continue;
        }
        let text = trimmed.trim_start().to_string();
        out.push(Command { line: start, text, comment, shown: Vec::new() });
    }
    if let Some((start, text, _)) = pending {
        out.push(Command {
            line: start,
            text,
            comment: "(unterminated: a quote or `\\` is left open)".into(),
            shown: Vec::new(),
        });
    }
    out
}

/// A comment line that shows the output of the command before it: a JSON object, optionally
/// after an HTTP status (`# 202 {...}`).
fn shows_output(comment: &str) -> bool {
    let rest = comment.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start();
    rest.starts_with('{')
}

struct Scan {
    open_quote: bool,
    comment_at: Option<usize>,
}

/// Where quotes leave `text` open, and where its comment starts (a `#` beginning a word outside
/// quotes), as the shell reads them.
fn scan(text: &str) -> Scan {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut previous = ' ';
    for (at, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if single {
            single = c != '\'';
        } else if c == '\\' {
            escaped = true;
        } else if c == '"' {
            double = !double;
        } else if !double && c == '\'' {
            single = true;
        } else if !double && c == '#' && previous.is_whitespace() {
            return Scan { open_quote: false, comment_at: Some(at) };
        }
        previous = c;
    }
    Scan { open_quote: single || double, comment_at: None }
}

/// The commands a line of the READMEs' notation stands for. In a `superpi ...` line, `A | B`
/// is a pipe when B starts with one of `pipe_programs`, and otherwise the alternative of A
/// with its last word replaced by B (`superpi mcp list | remove fs`: `superpi mcp list`,
/// `superpi mcp remove fs`); a word `a|b|c` stands for each of a, b and c. Other lines stand for
/// themselves.
pub fn alternatives(text: &str, pipe_programs: &[&str]) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.first() != Some(&"superpi") || text.contains(['\'', '"', '\n']) {
        return vec![text.to_string()];
    }
    let mut parts = text.split(" | ");
    let first = parts.next().unwrap_or_default().trim().to_string();
    let rest: Vec<&str> = parts.map(str::trim).collect();
    if rest.iter().any(|part| pipe_programs.iter().any(|p| part.split_whitespace().next() == Some(p))) {
        return vec![text.to_string()];
    }
    let mut lines = vec![first.clone()];
    for alternative in rest {
        let stem = first.rsplit_once(' ').map_or("", |(stem, _)| stem);
        lines.push(format!("{stem} {alternative}"));
    }
    lines
        .into_iter()
        .flat_map(|line| {
            let words: Vec<&str> = line.split(' ').collect();
            match words.iter().position(|w| w.contains('|')) {
                Some(at) => words[at]
                    .split('|')
                    .map(|choice| {
                        let mut chosen = words.clone();
                        chosen[at] = choice;
                        chosen.join(" ")
                    })
                    .collect(),
                None => vec![line],
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "readme_tests.rs"]
mod tests;
