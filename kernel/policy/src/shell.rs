//! A conservative reader of shell command lines: which simple commands would a line run?
//!
//! # Why not a parser crate
//!
//! We measured the maintained bash parsers (see the crate's README.md): `brush-parser` panics
//! on some inputs and is exponential on unbalanced parentheses, `tree-sitter-bash` is C with
//! error recovery, `yash-syntax` is GPL, `conch-parser` is unmaintained. A permission check
//! needs much less than a parser: the list of simple commands a line runs, with each word's
//! literal value when it has one, and a refusal to guess. So this module (with
//! `shell_parser` and `shell_compound`) reads the bash that people and models write: quotes,
//! escapes, `;`, `&`, `&&`, `||`, `|`, `|&`, newlines, `( … )`, `{ …; }`, `$( … )`,
//! backticks, `<( … )`/`>( … )`, `${ … }`, arithmetic, redirections, here-documents,
//! comments, `if`/`while`/`until`/`for`/`select`/`case`, `[[ … ]]` and function definitions;
//! it returns [`Unsure`] for anything else (arrays, `$[ … ]`, `coproc`, extended globs,
//! unbalanced quotes or parentheses). The caller treats `Unsure` as "ask a person", never as
//! "allowed".
//!
//! Commands nested in substitutions, subshells and groups are listed too, as are the commands
//! that `bash -c STRING`, `sh -c STRING` and `eval WORDS` would run when the string is literal,
//! and those that `find -exec … ;` runs.

use crate::shell_parser::{End, Parser};
#[cfg(test)]
pub(crate) use crate::shell_words::lit;
pub(crate) use crate::shell_words::{MAX_DEPTH, unsure};
pub use crate::shell_words::{Redirect, RedirectKind, SimpleCommand, Unsure, Word, basename, is_assignment, is_name};

/// Every simple command `line` would run, outermost first, including those inside
/// substitutions, subshells, groups, and literal `sh -c`/`bash -c`/`eval` strings.
pub fn commands(line: &str) -> Result<Vec<SimpleCommand>, Unsure> {
    commands_at(line, 0)
}

/// The simple commands of `line` as written, without reading the strings handed to
/// `sh -c`/`eval` (for patterns, which are never run).
pub fn simple_commands(line: &str) -> Result<Vec<SimpleCommand>, Unsure> {
    let mut parser = Parser::new(line, 0);
    parser.list(End::Input)?;
    Ok(parser.out)
}

fn commands_at(line: &str, depth: usize) -> Result<Vec<SimpleCommand>, Unsure> {
    if depth > MAX_DEPTH {
        return unsure("commands nested too deeply");
    }
    let mut parser = Parser::new(line, depth);
    parser.list(End::Input)?;
    let mut all = Vec::new();
    for cmd in parser.out {
        expand(cmd, depth, &mut all)?;
    }
    Ok(all)
}

/// Adds `cmd` and every command it hands on: a shell string, an `env -S` string, the
/// commands of `find -exec`.
fn expand(cmd: SimpleCommand, depth: usize, all: &mut Vec<SimpleCommand>) -> Result<(), Unsure> {
    if depth > MAX_DEPTH {
        return unsure("commands nested too deeply");
    }
    let nested = nested_script(&cmd)?;
    let executed = find_exec(&cmd);
    all.push(cmd);
    if let Some(script) = nested {
        all.extend(commands_at(&script, depth + 1)?);
    }
    for inner in executed {
        expand(inner, depth + 1, all)?;
    }
    Ok(())
}

/// Shells whose `-c STRING` runs another command line.
const SHELLS: [&str; 6] = ["sh", "bash", "dash", "zsh", "ksh", "busybox"];

/// The command line a simple command hands to another shell, when it does.
fn nested_script(cmd: &SimpleCommand) -> Result<Option<String>, Unsure> {
    // `env -S STRING` splits STRING into a command (the wrapper strip below would skip it).
    if let Some(i) = cmd.words.iter().position(|w| basename(&w.text) == "env") {
        for (j, w) in cmd.words.iter().enumerate().skip(i + 1) {
            let attached = w.text.strip_prefix("--split-string=").or_else(|| w.text.strip_prefix("-S"));
            let string = match attached {
                Some("") => cmd.words.get(j + 1),
                Some(_) => Some(w),
                None => continue,
            };
            return match string {
                Some(s) if s.literal => {
                    let text = attached.filter(|a| !a.is_empty()).unwrap_or(&s.text);
                    Ok(Some(text.to_string()))
                }
                Some(_) => unsure("env -S with a non-literal string"),
                None => unsure("env -S without a string"),
            };
        }
    }
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

/// The commands `find … -exec CMD … ;` (and `-execdir`, `-ok`, `-okdir`) runs per file.
fn find_exec(cmd: &SimpleCommand) -> Vec<SimpleCommand> {
    let words = strip_wrappers(&cmd.words);
    if words.first().is_none_or(|w| basename(&w.text) != "find") {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut iter = words.iter();
    while let Some(w) = iter.next() {
        if matches!(w.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let inner: Vec<Word> = iter.by_ref().take_while(|w| !(w.text == ";" || w.text == "+")).cloned().collect();
            out.push(SimpleCommand { words: inner, redirects: Vec::new() });
        }
    }
    out
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

/// Splits a line that [`commands`] would not read into rough fragments, for a last-resort
/// deny-list check: every run of characters between blanks and shell punctuation.
pub fn rough_fragments(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || ";&|()<>`$\"'\\{}".contains(c))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
