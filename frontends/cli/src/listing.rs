//! The listing commands (`session list`, `session show`, `harnesses`, `models`, `kernel
//! status`): an aligned table (or a short report) by default, `--json` for programs (one JSON
//! document: an array for lists, an object otherwise, in the kernel protocol's field names).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;
use superpi_client::{HistoryPages, Locations};
use superpi_proto::method::{BackendStatus, ConversationInfo, HarnessInfo, KernelStatus, McpServerStatus};
use superpi_proto::{ContentBlock, Entry, Usage};

use crate::connection::connect;
use crate::style;

/// `--json` of a listing command.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct JsonFlag {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Writes to stdout through anstream (styles dropped where colours are off). A closed stdout
/// (`superpi session list | head`) ends the output quietly.
pub fn out(text: &str) {
    let mut stdout = anstream::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

pub(crate) fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    out(&format!("{}\n", serde_json::to_string_pretty(value)?));
    Ok(())
}

/// Rows in columns as wide as their widest cell, a bold header first; the last column is not
/// padded. Pure, for tests: the caller prints it.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..headers.len())
        .map(|i| {
            let cells = rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count());
            cells.chain([headers[i].len()]).max().unwrap_or(0)
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = (usize, String)>| {
        let mut out = String::new();
        for (i, cell) in cells {
            if i + 1 == headers.len() {
                out.push_str(&cell);
            } else {
                let pad = widths[i].saturating_sub(cell.chars().count());
                out.push_str(&cell);
                out.push_str(&" ".repeat(pad + 2));
            }
        }
        out.trim_end().to_string()
    };
    let head = line(&mut headers.iter().map(|h| h.to_string()).enumerate());
    let mut out = style::header(&head);
    out.push('\n');
    for row in rows {
        out.push_str(&line(&mut row.iter().cloned().enumerate()));
        out.push('\n');
    }
    out
}

pub(crate) fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    out(&table(headers, rows));
}

/// The conversations in the kernel's order (latest first), each followed by its children (the
/// subagents it started, its forks) at one more level, in the same order. A child whose parent
/// is not in the list is at the top level. Pure, for tests.
pub fn nested(list: Vec<ConversationInfo>) -> Vec<(usize, ConversationInfo)> {
    let listed: HashSet<i64> = list.iter().map(|c| c.conversation_id).collect();
    let mut children: HashMap<i64, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for (i, c) in list.iter().enumerate() {
        match c.parent_id.filter(|p| listed.contains(p) && *p != c.conversation_id) {
            Some(parent) => children.entry(parent).or_default().push(i),
            None => roots.push(i),
        }
    }
    let mut order = Vec::with_capacity(list.len());
    let mut seen = vec![false; list.len()];
    // Depth first, without recursion; a loop of parents (a corrupt store) ends at what was seen.
    let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|i| (0, i)).collect();
    while let Some((depth, i)) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        order.push((depth, i));
        if let Some(kids) = children.get(&list[i].conversation_id) {
            stack.extend(kids.iter().rev().map(|&k| (depth + 1, k)));
        }
    }
    // Whatever a loop kept unreachable still shows, at the top level.
    order.extend((0..list.len()).filter(|&i| !seen[i]).map(|i| (0, i)));
    let mut slots: Vec<Option<ConversationInfo>> = list.into_iter().map(Some).collect();
    order.into_iter().filter_map(|(depth, i)| Some((depth, slots[i].take()?))).collect()
}

/// A conversation's id as `session list` shows it: indented two spaces a level under its
/// parent, after a branch mark.
pub(crate) fn nested_id(depth: usize, id: i64) -> String {
    match depth {
        0 => id.to_string(),
        _ => format!("{}└ {id}", "  ".repeat(depth - 1)),
    }
}

pub async fn session_show(locations: &Locations, id: i64, flag: JsonFlag) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    // Page by page: the command holds one page of the history, whatever its size.
    let mut pages = client.history_pages(id).await?;
    if flag.json {
        return print_history_json(&mut pages).await;
    }
    let rules = &pages.conversation().rules_files;
    if rules.is_empty() {
        out(&format!(
            "{} none (no AGENTS.md in the workspace or up to its repository root)\n",
            style::header("rules:")
        ));
    } else {
        out(&format!("{} {}\n", style::header("rules:"), rules.join(", ")));
    }
    let cost = pages.conversation().cost_usd;
    let mut usage = Usage::default();
    while let Some(page) = pages.next_page().await? {
        for entry in page {
            print_entry(&entry);
            usage.add(entry.message.usage.unwrap_or_default());
        }
    }
    out(&format!("{} {}\n", style::header("usage:"), usage_text(usage)));
    let cost = cost.map_or_else(
        || "unknown (no model call was priced: see `price` in providers.toml)".into(),
        |usd| format!("${usd:.4}"),
    );
    out(&format!("{} {cost}\n", style::header("cost:")));
    Ok(ExitCode::SUCCESS)
}

/// A conversation's tokens, with the share of its input the vendor's prompt cache served.
fn usage_text(usage: Usage) -> String {
    let share = match usage.input_tokens {
        0 => 0.0,
        input => usage.cached_input_tokens as f64 * 100.0 / input as f64,
    };
    format!(
        "{} input tokens ({} read from the prompt cache, {share:.0}%), {} output tokens",
        usage.input_tokens, usage.cached_input_tokens, usage.output_tokens
    )
}

/// `superpi session undo ID [--turn N]`: the kernel's refusal (nothing to undo, a running turn,
/// a file changed since) goes to stderr with exit status 1.
pub async fn session_undo(
    locations: &Locations,
    id: i64,
    turn: Option<i64>,
    flag: JsonFlag,
) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    match client.undo(id, turn).await {
        Ok(done) if flag.json => print_json(&done).map(|_| ExitCode::SUCCESS),
        Ok(done) => {
            out(&format!("{done}\n"));
            Ok(ExitCode::SUCCESS)
        }
        Err(superpi_client::ClientError::Kernel(e)) => {
            eprintln!("superpi: nothing undone: {}", e.message);
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(e.into()),
    }
}

fn print_entry(entry: &Entry) {
    let text = match entry.message.content.first() {
        Some(ContentBlock::ToolResult { name, output, .. }) => format!("[{name}] {output}"),
        _ => entry.message.text(),
    };
    let calls: Vec<String> = entry
        .message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall { name, arguments, .. } => Some(format!("{name} {arguments}")),
            _ => None,
        })
        .collect();
    out(&format!("{} {text}\n", style::header(&format!("#{} {}:", entry.seq, entry.kind.as_str()))));
    for call in calls {
        out(&format!("    {}\n", style::paint(style::style(style::Tone::Tool), &format!("→ {call}"))));
    }
}

/// `session show --json`: the document `session.history` would give whole (`conversation`,
/// `entries`, `more`), pretty-printed, written an entry at a time straight to stdout.
async fn print_history_json(pages: &mut HistoryPages) -> anyhow::Result<ExitCode> {
    out("{\n  \"conversation\": ");
    print_nested(pages.conversation(), b"  ")?;
    out(",\n  \"entries\": [");
    let mut first = true;
    while let Some(page) = pages.next_page().await? {
        for entry in &page {
            out(if first { "\n    " } else { ",\n    " });
            print_nested(entry, b"    ")?;
            first = false;
        }
    }
    out(if first { "],\n  \"more\": false\n}\n" } else { "\n  ],\n  \"more\": false\n}\n" });
    Ok(ExitCode::SUCCESS)
}

/// Prints a value pretty at the depth it sits at: each of its line breaks followed by `indent`.
fn print_nested(value: &impl Serialize, indent: &'static [u8]) -> anyhow::Result<()> {
    let mut writer = Indented { inner: std::io::BufWriter::new(std::io::stdout().lock()), indent };
    serde_json::to_writer_pretty(&mut writer, value)?;
    writer.flush()?;
    Ok(())
}

/// Writes through, with `indent` after each line break (JSON strings hold none of their own).
struct Indented<W> {
    inner: W,
    indent: &'static [u8],
}

impl<W: Write> Write for Indented<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        for (i, piece) in buf.split(|b| *b == b'\n').enumerate() {
            if i > 0 {
                self.inner.write_all(b"\n")?;
                self.inner.write_all(self.indent)?;
            }
            self.inner.write_all(piece)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The harnesses, then each agent backend's program and version or why it is unavailable
/// (`--json`: `{"harnesses": [...], "backends": [...]}` as `harness.list` says them, each
/// backend with `installed`, `version` and `usable`).
pub async fn harnesses(locations: &Locations, flag: JsonFlag) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    let (list, backends) = client.harness_list().await?;
    if flag.json {
        print_json(&harnesses_json(&list, &backends)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = list
        .into_iter()
        .map(|h| {
            let tools = match h.backend {
                Some(backend) => format!("(backend {backend})"),
                None => h.tools.join(","),
            };
            vec![h.id, h.default_mode, h.max_mode, tools, h.description]
        })
        .collect();
    print_table(&["ID", "MODE", "CEILING", "TOOLS", "DESCRIPTION"], &rows);
    if !backends.is_empty() {
        let rows: Vec<Vec<String>> = backends
            .into_iter()
            .map(|b| {
                let status = match (b.version, b.unavailable) {
                    (Some(version), None) => format!("{version} ({})", b.program.unwrap_or_default()),
                    (Some(version), Some(why)) => {
                        format!("{version} ({}); unavailable: {why}", b.program.unwrap_or_default())
                    }
                    (None, Some(why)) => format!("unavailable: {why}"),
                    (None, None) => "unavailable".to_string(),
                };
                vec![b.id, status]
            })
            .collect();
        out("\n");
        print_table(&["BACKEND", "PROGRAM"], &rows);
    }
    Ok(ExitCode::SUCCESS)
}

/// `harnesses --json`: an array, one object per harness (the README: an array for lists),
/// `offered` true; a harness run by an agent backend carries that backend's status as
/// `backend_status`, and a backend whose harness is not offered (its program is missing or
/// does not answer) is listed too, `offered` false, so the JSON says what the text does. Pure.
pub(crate) fn harnesses_json(list: &[HarnessInfo], backends: &[BackendStatus]) -> anyhow::Result<serde_json::Value> {
    let mut items = list
        .iter()
        .map(|h| {
            let mut item = serde_json::to_value(h)?;
            item["offered"] = true.into();
            if let Some(status) = h.backend.as_ref().and_then(|b| backends.iter().find(|s| &s.id == b)) {
                item["backend_status"] = serde_json::to_value(status)?;
            }
            Ok(item)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    for status in backends.iter().filter(|s| !list.iter().any(|h| h.backend.as_ref() == Some(&s.id))) {
        items.push(serde_json::json!({
            "id": status.id, "backend": status.id, "offered": false, "backend_status": status,
        }));
    }
    Ok(serde_json::Value::Array(items))
}

/// The kernel's models (`model.list`): the kernel's providers decide, not this process's
/// environment.
pub async fn models(locations: &Locations, flag: JsonFlag) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    let list = client.models().await?;
    if flag.json {
        print_json(&list)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = list
        .into_iter()
        .map(|m| {
            let efforts: Vec<&str> = m.efforts.iter().map(|e| e.as_str()).collect();
            vec![m.id, m.provider, if m.default { "yes".into() } else { String::new() }, efforts.join(",")]
        })
        .collect();
    print_table(&["ID", "PROVIDER", "DEFAULT", "EFFORTS"], &rows);
    Ok(ExitCode::SUCCESS)
}

/// `superpi rules`: the rules files a conversation in this directory reads, without a kernel
/// (the kernel's own reader).
pub fn rules(flag: JsonFlag) -> anyhow::Result<ExitCode> {
    let workspace = superpi_client::workspace::resolve_workspace(None)?;
    let listed = superpi_kernel::rules_listing(&workspace);
    if flag.json {
        print_json(&listed)?;
        return Ok(ExitCode::SUCCESS);
    }
    if listed.is_empty() {
        out(&format!(
            "no rules files for {} (AGENTS.md, CLAUDE.md, GEMINI.md, .agents/rules/*.md)\n",
            workspace.display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = listed
        .iter()
        .map(|r| {
            let when = if r.kind == "prompt" { "every turn" } else { "when a tool first names a path under it" };
            vec![r.path.display().to_string(), r.bytes.to_string(), when.to_string()]
        })
        .collect();
    print_table(&["FILE", "BYTES", "READ"], &rows);
    Ok(ExitCode::SUCCESS)
}

pub fn kernel_status(status: &KernelStatus, flag: JsonFlag) -> anyhow::Result<()> {
    if flag.json {
        return print_json(status);
    }
    let uptime = status.uptime_ms / 1000;
    let rows = [
        ("pid", status.pid.to_string()),
        ("version", status.version.clone()),
        ("uptime", format!("{}h {}m {}s", uptime / 3600, uptime / 60 % 60, uptime % 60)),
        ("clients", status.clients.to_string()),
        ("live conversations", status.live_conversations.to_string()),
        ("kernel id", status.kernel_id.clone()),
        (
            "runs conversations",
            status.owned_conversations.iter().map(|id| id.to_string()).collect::<Vec<_>>().join(" "),
        ),
        ("data dir", status.data_dir.clone()),
        ("socket", status.socket.clone()),
    ];
    for (name, value) in rows {
        out(&format!("{} {value}\n", style::header(&format!("{name:<19}"))));
    }
    if !status.mcp_servers.is_empty() {
        out(&format!("\n{}", mcp_table(&status.mcp_servers)));
    }
    Ok(())
}

/// The MCP servers a kernel holds, in aligned columns (never raw JSON); a server's error or
/// tools on the lines below its row. Pure, for tests.
pub(crate) fn mcp_table(servers: &[McpServerStatus]) -> String {
    let rows: Vec<Vec<String>> = servers
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.state.clone(),
                s.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
                s.conversations.iter().map(i64::to_string).collect::<Vec<_>>().join(" "),
                s.workspace.clone(),
            ]
        })
        .collect();
    let mut text = table(&["MCP SERVER", "STATE", "PID", "CONVERSATIONS", "WORKSPACE"], &rows);
    for s in servers.iter().filter(|s| s.error.is_some()) {
        text.push_str(&format!("{}: {}\n", s.name, s.error.as_deref().unwrap_or_default()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_says_the_share_the_cache_served() {
        let usage =
            Usage { input_tokens: 40_000, output_tokens: 120, cached_input_tokens: 35_000, cache_write_tokens: 0 };
        assert_eq!(usage_text(usage), "40000 input tokens (35000 read from the prompt cache, 88%), 120 output tokens");
        assert_eq!(usage_text(Usage::default()), "0 input tokens (0 read from the prompt cache, 0%), 0 output tokens");
    }

    #[test]
    fn a_table_aligns_its_columns_and_leaves_the_last_unpadded() {
        let rows =
            vec![vec!["1".into(), "superpi-code".into(), "a title".into()], vec!["12".into(), "x".into(), "".into()]];
        let text = table(&["ID", "HARNESS", "TITLE"], &rows);
        let plain: Vec<String> = text.lines().map(|l| l.replace("\u{1b}[1m", "").replace("\u{1b}[0m", "")).collect();
        assert_eq!(plain, ["ID  HARNESS       TITLE", "1   superpi-code  a title", "12  x"]);
    }

    fn conversation(id: i64, parent_id: Option<i64>) -> ConversationInfo {
        ConversationInfo {
            conversation_id: id,
            harness: "superpi-code".into(),
            model: "mock".into(),
            mode: "auto".into(),
            max_mode: "auto".into(),
            effort: None,
            workspace: None,
            title: None,
            parent_id,
            created_at_ms: 0,
            status: "idle".into(),
            head_seq: 0,
            created: false,
            rules_files: Vec::new(),
            cost_usd: None,
        }
    }

    #[test]
    fn children_follow_their_parent_one_level_deeper_in_the_lists_order() {
        // Latest first: the grandchild 5 was updated last, the root 1 first; 9's parent is not
        // listed (an older page), 7 and 8 name each other (a corrupt store).
        let list = vec![
            conversation(5, Some(3)),
            conversation(4, None),
            conversation(9, Some(100)),
            conversation(3, Some(1)),
            conversation(2, Some(1)),
            conversation(7, Some(8)),
            conversation(8, Some(7)),
            conversation(1, None),
        ];
        let shown: Vec<(usize, i64)> = nested(list).into_iter().map(|(d, c)| (d, c.conversation_id)).collect();
        assert_eq!(shown, [(0, 4), (0, 9), (0, 1), (1, 3), (2, 5), (1, 2), (0, 7), (0, 8)]);
        assert_eq!(nested_id(0, 1), "1");
        assert_eq!(nested_id(1, 3), "└ 3");
        assert_eq!(nested_id(2, 5), "  └ 5");
    }
}
