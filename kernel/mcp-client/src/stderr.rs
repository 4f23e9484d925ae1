//! Why a server that failed to start failed, in one line, from its last stderr lines: the path
//! or call that was refused (`EACCES: permission denied, open '/x'`, Python's
//! `PermissionError: [Errno 13] Permission denied: '/x'`, a shell's `/x: Permission denied`),
//! else its last line that is not a stack frame. Pure: tested without a process.

/// Words of a refused or missing path or call, as Node, Python, shells and libc print them.
const REFUSALS: &[&str] = &[
    "EACCES",
    "EPERM",
    "ENOENT",
    "EROFS",
    "Permission denied",
    "permission denied",
    "Operation not permitted",
    "No such file or directory",
    "Read-only file system",
    "ModuleNotFoundError",
    "Cannot find module",
    "not found",
];

/// The one line that says why, or `None` when stderr said nothing useful.
pub(crate) fn failure_cause<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let lines: Vec<&str> = lines.into_iter().map(str::trim).filter(|l| !l.is_empty()).collect();
    // Node prints the error's fields on lines of their own: `syscall: 'open'`, `path: '/x'`.
    let field = |name: &str| {
        lines.iter().rev().find_map(|l| {
            let value = l.strip_prefix(name)?.strip_prefix(": ")?;
            Some(value.trim_end_matches(',').trim_matches('\'').to_string())
        })
    };
    if let (Some(syscall), Some(path)) = (field("syscall"), field("path")) {
        let code = field("code").map(|c| format!(" ({c})")).unwrap_or_default();
        return Some(format!("`{syscall}` of {path} was refused{code}"));
    }
    let refused = lines.iter().find(|l| !is_frame(l) && REFUSALS.iter().any(|w| l.contains(w)));
    refused.or_else(|| lines.iter().rev().find(|l| !is_frame(l))).map(|l| shortened(l))
}

/// A stack frame, a source excerpt or a banner: no reason in it.
fn is_frame(line: &str) -> bool {
    let frame_starts = ["at ", "File \"", "Traceback", "^", "~", "node:internal", "Node.js v", "{", "}", "throw ", "|"];
    frame_starts.iter().any(|s| line.starts_with(s)) || line.chars().all(|c| "^~-=_ ".contains(c))
}

/// At most 300 characters: one line of a notice.
fn shortened(line: &str) -> String {
    match line.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

#[cfg(test)]
#[path = "stderr_tests.rs"]
mod tests;
