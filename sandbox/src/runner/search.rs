//! grep and find, on the crates behind ripgrep: gitignore-aware walking, binary detection.

use std::path::Path;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::Lossy};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use serde_json::json;

use super::{Args, Ctx};
use crate::ToolCallResult;

const GREP_DEFAULT: usize = 100;
const FIND_DEFAULT: usize = 1000;
const MATCH_LINE_MAX: usize = 500;

/// Gitignore-aware, hidden files included (.github, .env.example), protected paths not (the
/// .git directory, .env files, keys, superpi's own directories, and what a symlink leads to
/// among them), whatever the pattern or glob asks for. grep also skips a hard link to a
/// protected file (links.rs).
fn walker(ctx: &Ctx, root: &Path) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    let protected = ctx.protected.clone();
    let workspace = ctx.workspace.clone();
    b.require_git(false).hidden(false).follow_links(false).sort_by_file_name(|a, b| a.cmp(b)).filter_entry(move |e| {
        let symlink = e.file_type().is_some_and(|t| t.is_symlink());
        !Ctx::skips(&protected, &workspace, e.path(), symlink)
    });
    b
}

fn cut(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    match line.char_indices().nth(MATCH_LINE_MAX) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}

pub(crate) fn grep(ctx: &Ctx, args: &Args) -> Result<ToolCallResult, String> {
    args.allow_only(&["pattern", "path", "glob", "ignore_case", "literal", "limit"])?;
    let pattern = args.string("pattern")?;
    let root = ctx.resolve("grep", "path", args.opt_string("path")?.unwrap_or("."), false)?;
    let glob = args.opt_string("glob")?;
    let limit = args.opt_count("limit")?.unwrap_or(GREP_DEFAULT);
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.flag("ignore_case")?)
        .fixed_strings(args.flag("literal")?)
        .build(pattern)
        .map_err(|e| format!("grep: `pattern` is not a valid regular expression: {e}"))?;
    if !root.exists() {
        return Err(format!("grep: `path` {}: no such file or directory", ctx.display(&root)));
    }
    ctx.check_contents("grep", &root)?;
    let mut walk = walker(ctx, &root);
    if let Some(g) = glob {
        let mut ob = OverrideBuilder::new(&root);
        ob.add(g).map_err(|e| format!("grep: `glob` is not a valid glob: {e}"))?;
        walk.overrides(ob.build().map_err(|e| format!("grep: `glob`: {e}"))?);
    }
    let mut searcher = SearcherBuilder::new().binary_detection(BinaryDetection::quit(0)).line_number(true).build();
    let mut matches = Vec::new();
    let mut truncated = false;
    let mut unreadable = 0usize;
    'walk: for entry in walk.build() {
        let Ok(entry) = entry else {
            unreadable += 1;
            continue;
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path().to_path_buf();
        // A hard link to a protected file is skipped like the file itself.
        match ctx.hard_link_twin(&path) {
            Ok(None) => {}
            Ok(Some(_)) => continue,
            Err(_) => {
                unreadable += 1;
                continue;
            }
        }
        let shown = ctx.display(&path);
        let mut full = false;
        let res = searcher.search_path(
            &matcher,
            &path,
            Lossy(|line_no, line| {
                if matches.len() >= limit {
                    full = true;
                    return Ok(false);
                }
                matches.push(json!({"path": shown, "line": line_no, "text": cut(line)}));
                Ok(true)
            }),
        );
        if res.is_err() {
            unreadable += 1;
        }
        if full {
            truncated = true;
            break 'walk;
        }
    }
    let mut text: String = matches
        .iter()
        .map(|m| format!("{}:{}:{}\n", m["path"].as_str().unwrap_or(""), m["line"], m["text"].as_str().unwrap_or("")))
        .collect();
    if matches.is_empty() {
        text.push_str("No matches.\n");
    }
    if truncated {
        text.push_str(&format!("[stopped at {limit} matches; narrow the pattern or raise limit]\n"));
    }
    if unreadable > 0 {
        text.push_str(&format!("[{unreadable} files or directories could not be read]\n"));
    }
    Ok(ToolCallResult {
        output: text,
        is_error: false,
        structured: Some(json!({"matches": matches, "truncated": truncated})),
        details: None,
        images: Vec::new(),
    })
}

pub(crate) fn find(ctx: &Ctx, args: &Args) -> Result<ToolCallResult, String> {
    args.allow_only(&["pattern", "path", "limit"])?;
    let pattern = args.string("pattern")?;
    let root = ctx.resolve("find", "path", args.opt_string("path")?.unwrap_or("."), false)?;
    let limit = args.opt_count("limit")?.unwrap_or(FIND_DEFAULT);
    let glob = globset::GlobBuilder::new(pattern)
        .literal_separator(false)
        .build()
        .map_err(|e| format!("find: `pattern` is not a valid glob: {e}"))?
        .compile_matcher();
    if !root.is_dir() {
        return Err(format!("find: `path` {} is not a directory", ctx.display(&root)));
    }
    let mut paths = Vec::new();
    let mut truncated = false;
    for entry in walker(ctx, &root).build().filter_map(Result::ok) {
        let Ok(rel) = entry.path().strip_prefix(&root) else { continue };
        if rel.as_os_str().is_empty() || !glob.is_match(rel) {
            continue;
        }
        if paths.len() >= limit {
            truncated = true;
            break;
        }
        let dir = entry.file_type().is_some_and(|t| t.is_dir());
        paths.push(format!("{}{}", rel.display(), if dir { "/" } else { "" }));
    }
    let mut text = paths.join("\n");
    if paths.is_empty() {
        text = "No files found.".into();
    }
    if truncated {
        text.push_str(&format!("\n[stopped at {limit} results; narrow the pattern or raise limit]"));
    }
    Ok(ToolCallResult {
        output: text,
        is_error: false,
        structured: Some(json!({"paths": paths, "truncated": truncated})),
        details: None,
        images: Vec::new(),
    })
}
