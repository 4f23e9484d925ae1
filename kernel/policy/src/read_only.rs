//! Known read-only commands: simple commands that only read files and print, which run
//! without a question in every mode (see SETTINGS.md, "Read-only commands").
//!
//! A command is on the list by its bare name (no path, no leading `VAR=value`), with no
//! output redirection into a file. Commands that take no option that writes, runs a program
//! or reaches the network accept any arguments, expansions included. The others accept only
//! literal words (a `$x` or a glob could expand to `-o file` or `--pre=cmd`) and are checked
//! option by option.

use serde_json::Value;
use superpi_proto::tool::ToolDef;

use crate::shell::{SimpleCommand, Word, is_assignment, is_name};

/// Commands with no option that writes a file, runs a program or sets the system's state.
const ANY_ARGUMENTS: [&str; 45] = [
    "cat",
    "ls",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "pwd",
    "echo",
    "which",
    "stat",
    "cut",
    "tr",
    "du",
    "df",
    "true",
    "false",
    ":",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "diff",
    "cmp",
    "comm",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "nl",
    "seq",
    "column",
    "rev",
    "fold",
    "od",
    "hexdump",
    "cd",
    "id",
    "whoami",
    "uname",
    "nproc",
    "type",
    "jq",
    "printenv",
];

/// Git subcommands that only read the repository, with the options that would make them
/// write or run something refused below.
const GIT_READING: [&str; 16] = [
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "ls-tree",
    "blame",
    "describe",
    "shortlog",
    "rev-list",
    "merge-base",
    "grep",
    "branch",
    "tag",
    "remote",
];

/// Options that write a file or run a program, refused for every git subcommand.
const GIT_REFUSED: [&str; 4] = ["--output", "--ext-diff", "--open-files-in-pager", "-O"];

/// `find` actions that run, delete or write.
const FIND_REFUSED: [&str; 9] =
    ["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"];

/// Whether a call of `tool` is a shell line whose every command is a known read-only one: the
/// sandbox then runs it with a read-only workspace (`ToolCall::read_only`), so that whatever
/// it starts (a program a planted `.git/config` names) cannot write either.
pub fn call_is_read_only(tool: &ToolDef, arguments: &Value) -> bool {
    let Some(arg) = tool.shell.as_deref() else {
        return false;
    };
    let line = arguments.get(arg).and_then(Value::as_str).unwrap_or("");
    crate::shell::commands(line).is_ok_and(|cmds| !cmds.is_empty() && line_is_read_only(&cmds))
}

/// Whether every command of a line is a known read-only one.
pub fn line_is_read_only(commands: &[SimpleCommand]) -> bool {
    commands.iter().all(is_read_only)
}

/// Whether `cmd` is a known read-only command (see the module documentation).
pub fn is_read_only(cmd: &SimpleCommand) -> bool {
    if !cmd.writes_no_file() {
        return false;
    }
    let Some((first, args)) = cmd.words.split_first() else {
        // Only redirections (`done < file`): nothing runs.
        return true;
    };
    // A lone `[` is no glob: bash passes it as it is.
    if !(first.literal || first.text == "[") || first.text.contains('/') || is_assignment(&first.text) {
        return false;
    }
    let name = first.text.as_str();
    if ANY_ARGUMENTS.contains(&name) {
        return true;
    }
    // Bash evaluates a variable's value as arithmetic in `((`, in `[[`'s numeric tests, in
    // `-v NAME[…]` and `printf -v NAME[…]`, and `a[$(cmd)]` in that value runs `cmd`: those
    // read-only only when no variable can reach them.
    match name {
        "((" => args.iter().all(|w| w.literal),
        "[[" => {
            let arithmetic = ["-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v"];
            !args.iter().any(|w| arithmetic.contains(&w.text.as_str()))
        }
        "printf" => args.first().is_none_or(|w| w.literal && !w.text.starts_with("-v")),
        "xargs" => xargs(args),
        _ => args.iter().all(|w| w.literal) && checked(name, &texts(args)),
    }
}

fn texts(words: &[Word]) -> Vec<&str> {
    words.iter().map(|w| w.text.as_str()).collect()
}

/// Commands read-only only without certain options; `args` are literal.
fn checked(name: &str, args: &[&str]) -> bool {
    let short_has = |letters: &str| {
        args.iter().any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains(|c| letters.contains(c)))
    };
    let long_has = |prefixes: &[&str]| args.iter().any(|a| prefixes.iter().any(|p| a.starts_with(p)));
    match name {
        "git" => git(args),
        "test" | "[" => !args.contains(&"-v"),
        "find" => !args.iter().any(|a| FIND_REFUSED.contains(a)),
        "sort" => !short_has("o") && !long_has(&["--output", "--compress-program"]),
        "rg" => !short_has("z") && !long_has(&["--pre", "--search-zip", "--hostname-bin"]),
        "tree" => !short_has("oR") && !long_has(&["--output"]),
        "file" => !short_has("C") && !long_has(&["--compile"]),
        "date" => !short_has("s") && !long_has(&["--set"]),
        "uniq" => operands(args, &["-f", "-s", "-w"]) <= 1,
        "env" => args.iter().all(|a| matches!(*a, "-0" | "--null")),
        "sed" => sed_print(args),
        "read" => read_names(args),
        _ => false,
    }
}

/// How many operands (words that are no option nor an option's argument) `args` holds.
fn operands(args: &[&str], takes_argument: &[&str]) -> usize {
    let mut count = 0;
    let mut iter = args.iter();
    while let Some(a) = iter.next() {
        if takes_argument.contains(a) {
            iter.next();
        } else if !a.starts_with('-') || *a == "-" {
            count += 1;
        }
    }
    count
}

/// `git [--no-pager] SUBCOMMAND …` with a reading subcommand and no other global option
/// (`-c`, `-C`, `--git-dir`…).
fn git(args: &[&str]) -> bool {
    let args = match args.first() {
        Some(&("--no-pager" | "-P")) => &args[1..],
        _ => args,
    };
    let Some((sub, rest)) = args.split_first() else { return false };
    if !GIT_READING.contains(sub) || rest.iter().any(|a| GIT_REFUSED.iter().any(|r| a.starts_with(r))) {
        return false;
    }
    match *sub {
        // Listing only: a name creates, `-d`/`-m`/`-c`… delete, move or copy.
        "branch" => {
            let listing = [
                "-a",
                "-r",
                "-v",
                "-vv",
                "-l",
                "--list",
                "--all",
                "--remotes",
                "--verbose",
                "--show-current",
                "--no-color",
                "--merged",
                "--no-merged",
                "--contains",
                "--no-contains",
            ];
            let patterns = rest.iter().any(|a| matches!(*a, "-l" | "--list" | "--merged" | "--contains"));
            rest.iter().all(|a| listing.contains(a) || (patterns && !a.starts_with('-')))
        }
        "tag" => {
            let listing = ["-l", "--list", "-n", "--contains", "--merged", "--no-contains", "--no-merged"];
            rest.is_empty()
                || (rest.iter().any(|a| matches!(*a, "-l" | "--list"))
                    && rest.iter().all(|a| !a.starts_with('-') || listing.contains(a)))
        }
        // Listing only: `remote show` asks the remote, the rest changes the configuration.
        "remote" => rest.iter().all(|a| matches!(*a, "-v" | "--verbose")),
        _ => true,
    }
}

/// `sed -n 'Np'` or `sed -n 'N,Mp'` over files: prints lines, nothing else.
fn sed_print(args: &[&str]) -> bool {
    let [flag, script, files @ ..] = args else { return false };
    let lines = script.strip_suffix('p').unwrap_or("x");
    let numbers = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '$');
    *flag == "-n"
        && lines.split(',').count() <= 2
        && lines.split(',').all(numbers)
        && files.iter().all(|f| !f.starts_with('-'))
}

/// `read` into plain variable names (a subscript, `a[…]`, is arithmetic).
fn read_names(args: &[&str]) -> bool {
    let mut iter = args.iter();
    while let Some(a) = iter.next() {
        let ok = match *a {
            "-d" | "-n" | "-N" | "-p" | "-t" | "-u" => iter.next().is_some(),
            "-a" => iter.next().is_some_and(|n| is_name(n)),
            _ => a.starts_with('-') && !a.contains('a') || is_name(a),
        };
        if !ok {
            return false;
        }
    }
    true
}

/// `xargs [options] CMD ARGS…`: the command it runs gets more arguments from its input, so
/// only a command that accepts any arguments will do.
fn xargs(args: &[Word]) -> bool {
    let takes_argument =
        ["-I", "-i", "-n", "-P", "-d", "-a", "-E", "-L", "-s", "--max-args", "--max-procs", "--delimiter"];
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if !w.literal {
            return false;
        }
        if !w.text.starts_with('-') {
            break;
        }
        i += if takes_argument.contains(&w.text.as_str()) { 2 } else { 1 };
    }
    match args.get(i) {
        None => true,
        Some(cmd) => cmd.literal && ANY_ARGUMENTS.contains(&cmd.text.as_str()),
    }
}

#[cfg(test)]
#[path = "read_only_tests.rs"]
mod tests;
