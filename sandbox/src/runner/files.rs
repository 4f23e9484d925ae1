//! read, write, edit and ls.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use serde_json::json;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use superpi_proto::ToolImage;
use superpi_proto::content::{MAX_IMAGE_BYTES, image_media_type};

use super::{Args, Ctx};
use crate::ToolCallResult;

const READ_DEFAULT_LINES: usize = 2000;
const READ_MAX_BYTES: usize = 50 * 1024;
const READ_MAX_LINE: usize = 2000;
const LS_DEFAULT: usize = 500;
const DIFF_MAX: usize = 256 * 1024;

fn io_err(tool: &str, shown: &str, e: std::io::Error) -> String {
    let why = match e.kind() {
        std::io::ErrorKind::PermissionDenied => "permission denied (the sandbox refused it)".to_string(),
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        _ => e.to_string(),
    };
    format!("{tool}: {shown}: {why}")
}

pub(crate) fn read(ctx: &Ctx, args: &Args) -> Result<ToolCallResult, String> {
    args.allow_only(&["path", "offset", "limit"])?;
    let raw = args.string("path")?;
    let path = ctx.resolve("read", "path", raw, false)?;
    ctx.check_contents("read", &path)?;
    let offset = args.opt_count("offset")?.unwrap_or(1);
    let limit = args.opt_count("limit")?.unwrap_or(READ_DEFAULT_LINES);
    let shown = ctx.display(&path);
    let meta = fs::metadata(&path).map_err(|e| io_err("read", &shown, e))?;
    if meta.is_dir() {
        return Err(format!("read: {shown} is a directory; use ls to list it"));
    }
    let mut file = fs::File::open(&path).map_err(|e| io_err("read", &shown, e))?;
    let mut probe = vec![0u8; 8192];
    let n = file.read(&mut probe).map_err(|e| io_err("read", &shown, e))?;
    if let Some(media_type) = image_media_type(&probe[..n]) {
        return read_image(file, &shown, media_type, meta.len());
    }
    if probe[..n].contains(&0) {
        return Err(format!("read: {shown} is a binary file ({} bytes); the read tool shows text only", meta.len()));
    }
    drop(file);
    let file = fs::File::open(&path).map_err(|e| io_err("read", &shown, e))?;
    let mut reader = BufReader::new(file);
    let mut text = String::new();
    let mut line_no = 0usize;
    let mut last = 0usize;
    let mut cut_by_size = false;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(|e| io_err("read", &shown, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line_no >= offset.saturating_add(limit) || cut_by_size {
            // Past the window: only count the remaining lines, block by block.
            if !buf.ends_with(b"\n") {
                break;
            }
            line_no += count_lines(&mut reader).map_err(|e| io_err("read", &shown, e))?;
            break;
        }
        if line_no < offset {
            continue;
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end_matches(['\n', '\r']);
        let line = match line.char_indices().nth(READ_MAX_LINE) {
            Some((i, _)) => format!("{}… [line cut at {READ_MAX_LINE} characters]", &line[..i]),
            None => line.to_string(),
        };
        let numbered = format!("{line_no:>6}\t{line}\n");
        if text.len() + numbered.len() > READ_MAX_BYTES && last >= offset {
            cut_by_size = true;
            continue;
        }
        text.push_str(&numbered);
        last = line_no;
    }
    let total = line_no;
    if offset > total.max(1) {
        return Err(format!("read: `offset` {offset} is past the end of {shown} ({total} lines)"));
    }
    let truncated = last < total;
    if truncated {
        text.push_str(&format!("[showing lines {offset}-{last} of {total}; continue with offset={}]\n", last + 1));
    }
    if total == 0 {
        text.push_str("(empty file)\n");
    }
    Ok(ToolCallResult {
        output: text,
        is_error: false,
        structured: Some(json!({
            "path": shown, "start_line": offset, "end_line": last, "total_lines": total, "truncated": truncated
        })),
        details: Some(json!({"bytes": meta.len()})),
        images: Vec::new(),
    })
}

/// An image file (PNG, JPEG, GIF or WebP by its bytes): its bytes for a model that sees, at most
/// [`MAX_IMAGE_BYTES`]; the text says what it is for one that does not.
fn read_image(file: fs::File, shown: &str, media_type: &str, size: u64) -> Result<ToolCallResult, String> {
    if size > MAX_IMAGE_BYTES as u64 {
        return Err(format!(
            "read: {shown} is an image ({media_type}, {size} bytes); images over {MAX_IMAGE_BYTES} bytes (5 MiB) are \
             not shown: make a smaller copy (e.g. with bash) and read that"
        ));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    // From the start again: the probe was read from this descriptor.
    let mut file = file;
    std::io::Seek::rewind(&mut file).map_err(|e| io_err("read", shown, e))?;
    file.take(MAX_IMAGE_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(|e| io_err("read", shown, e))?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(format!("read: {shown} grew past {MAX_IMAGE_BYTES} bytes while it was read"));
    }
    Ok(ToolCallResult {
        output: format!("{shown}: an image ({media_type}, {} bytes), attached for the model to see", bytes.len()),
        is_error: false,
        structured: Some(json!({"path": shown, "media_type": media_type, "bytes": bytes.len()})),
        details: Some(json!({"bytes": bytes.len(), "media_type": media_type})),
        images: vec![ToolImage { media_type: media_type.to_string(), data: STANDARD.encode(&bytes), described: false }],
    })
}

/// Lines left in `reader` (a last line without a newline counts).
fn count_lines(reader: &mut impl BufRead) -> std::io::Result<usize> {
    let mut lines = 0;
    let mut last = b'\n';
    loop {
        let block = reader.fill_buf()?;
        if block.is_empty() {
            break;
        }
        lines += block.iter().filter(|b| **b == b'\n').count();
        last = block[block.len() - 1];
        let n = block.len();
        reader.consume(n);
    }
    Ok(lines + usize::from(last != b'\n'))
}

/// Writes `content` to `path` atomically: a temp file beside it, then a rename.
fn write_atomic(tool: &str, shown: &str, path: &Path, content: &[u8]) -> Result<(), String> {
    let parent = path.parent().ok_or_else(|| format!("{tool}: {shown} has no parent directory"))?;
    fs::create_dir_all(parent).map_err(|e| io_err(tool, shown, e))?;
    let mut tmp =
        tempfile::Builder::new().prefix(".superpi-write-").tempfile_in(parent).map_err(|e| io_err(tool, shown, e))?;
    tmp.write_all(content).map_err(|e| io_err(tool, shown, e))?;
    if let Ok(meta) = fs::metadata(path) {
        let _ = fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(path).map_err(|e| io_err(tool, shown, e.error))?;
    Ok(())
}

/// Refuses a regular file with more than one link: another name for it may be outside the
/// workspace (a hard link left there earlier), and what is written to one is the other's.
fn refuse_linked(tool: &str, shown: &str, path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt as _;
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() && meta.nlink() > 1 => Err(format!(
            "{tool}: {shown} has {} links (a hard link, perhaps to a file outside the workspace); it is not written",
            meta.nlink()
        )),
        _ => Ok(()),
    }
}

pub(crate) fn write(ctx: &Ctx, args: &Args) -> Result<ToolCallResult, String> {
    args.allow_only(&["path", "content"])?;
    let raw = args.string("path")?;
    let content = args.string("content")?;
    let path = ctx.resolve("write", "path", raw, true)?;
    ctx.check_contents("write", &path)?;
    let shown = ctx.display(&path);
    refuse_linked("write", &shown, &path)?;
    if path.is_dir() {
        return Err(format!("write: {shown} is a directory"));
    }
    let created = !path.exists();
    write_atomic("write", &shown, &path, content.as_bytes())?;
    Ok(ToolCallResult {
        output: format!("{} {shown} ({} bytes)", if created { "Created" } else { "Wrote" }, content.len()),
        is_error: false,
        structured: Some(json!({"path": shown, "bytes": content.len(), "created": created})),
        details: None,
        images: Vec::new(),
    })
}

pub(crate) fn edit(ctx: &Ctx, args: &Args) -> Result<ToolCallResult, String> {
    args.allow_only(&["path", "old_string", "new_string", "replace_all"])?;
    let raw = args.string("path")?;
    let old = args.string("old_string")?;
    let new = args.string("new_string")?;
    let all = args.flag("replace_all")?;
    if old.is_empty() {
        return Err("edit: `old_string` is empty; use write to create a file".into());
    }
    if old == new {
        return Err("edit: `old_string` and `new_string` are the same".into());
    }
    let path = ctx.resolve("edit", "path", raw, true)?;
    ctx.check_contents("edit", &path)?;
    let shown = ctx.display(&path);
    refuse_linked("edit", &shown, &path)?;
    let bytes = fs::read(&path).map_err(|e| io_err("edit", &shown, e))?;
    let before = String::from_utf8(bytes).map_err(|_| format!("edit: {shown} is not UTF-8 text"))?;
    let count = before.matches(old).count();
    if count == 0 {
        return Err(format!("edit: `old_string` was not found in {shown}; it must match exactly, whitespace included"));
    }
    if count > 1 && !all {
        return Err(format!(
            "edit: `old_string` matches {count} times in {shown}; add context to make it unique or set replace_all"
        ));
    }
    let after = if all { before.replace(old, new) } else { before.replacen(old, new, 1) };
    write_atomic("edit", &shown, &path, after.as_bytes())?;
    let mut diff = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string();
    if diff.len() > DIFF_MAX {
        let mut cut = DIFF_MAX;
        while !diff.is_char_boundary(cut) {
            cut -= 1;
        }
        diff.truncate(cut);
        diff.push_str("\n[diff truncated]\n");
    }
    Ok(ToolCallResult {
        output: format!("Edited {shown}: {count} replacement{}", if count == 1 { "" } else { "s" }),
        is_error: false,
        structured: Some(json!({"path": shown, "replacements": count})),
        details: Some(json!({"diff": diff})),
        images: Vec::new(),
    })
}

pub(crate) fn ls(ctx: &Ctx, args: &Args) -> Result<ToolCallResult, String> {
    args.allow_only(&["path", "limit"])?;
    let raw = args.opt_string("path")?.unwrap_or(".");
    let limit = args.opt_count("limit")?.unwrap_or(LS_DEFAULT);
    let path = ctx.resolve(args.tool(), "path", raw, false)?;
    let shown = ctx.display(&path);
    let read = fs::read_dir(&path).map_err(|e| io_err("ls", &shown, e))?;
    let mut entries: Vec<String> = read
        .filter_map(Result::ok)
        .filter(|e| {
            let symlink = e.file_type().is_ok_and(|t| t.is_symlink());
            !Ctx::skips(&ctx.protected, &ctx.workspace, &e.path(), symlink)
        })
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if dir { format!("{name}/") } else { name }
        })
        .collect();
    entries.sort();
    let total = entries.len();
    let truncated = total > limit;
    entries.truncate(limit);
    let mut text = entries.join("\n");
    if truncated {
        text.push_str(&format!("\n[{limit} of {total} entries shown]"));
    }
    if total == 0 {
        text = "(empty directory)".into();
    }
    Ok(ToolCallResult {
        output: text,
        is_error: false,
        structured: Some(json!({"entries": entries, "truncated": truncated})),
        details: None,
        images: Vec::new(),
    })
}

/// The read tool's answer for text that came from elsewhere (an editor's unsaved buffer):
/// the same window, numbering and caps as a read from disk. Pure: nothing is touched.
pub fn format_read(shown: &str, content: &str, offset: Option<usize>, limit: Option<usize>) -> ToolCallResult {
    let offset = offset.unwrap_or(1).max(1);
    let limit = limit.unwrap_or(READ_DEFAULT_LINES).max(1);
    let lines: Vec<&str> = content.lines().collect();
    let total = lines.len();
    if offset > total.max(1) {
        return ToolCallResult::error(format!("read: `offset` {offset} is past the end of {shown} ({total} lines)"));
    }
    let mut text = String::new();
    let mut last = offset.saturating_sub(1);
    for (i, line) in lines.iter().enumerate().skip(offset - 1).take(limit) {
        let line_no = i + 1;
        let line = match line.char_indices().nth(READ_MAX_LINE) {
            Some((cut, _)) => format!("{}… [line cut at {READ_MAX_LINE} characters]", &line[..cut]),
            None => line.to_string(),
        };
        let numbered = format!("{line_no:>6}\t{line}\n");
        if text.len() + numbered.len() > READ_MAX_BYTES && last >= offset {
            break;
        }
        text.push_str(&numbered);
        last = line_no;
    }
    let truncated = last < total;
    if truncated {
        text.push_str(&format!("[showing lines {offset}-{last} of {total}; continue with offset={}]\n", last + 1));
    }
    if total == 0 {
        text.push_str("(empty file)\n");
    }
    ToolCallResult {
        output: text,
        is_error: false,
        structured: Some(json!({
            "path": shown, "start_line": offset, "end_line": last, "total_lines": total, "truncated": truncated
        })),
        details: Some(json!({"bytes": content.len(), "source": "editor"})),
        images: Vec::new(),
    }
}
