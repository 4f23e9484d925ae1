//! `superpi memory list|pin|unpin|remove`: the person's durable notes (the kernel's
//! `memory.*` methods), the ones the memory block's tools write and search.

use std::process::ExitCode;

use clap::Subcommand;
use superpi_client::Locations;
use superpi_proto::memory::NoteInfo;

use crate::connection::connect;
use crate::listing::{JsonFlag, out, print_json, table};

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Your notes in every workspace: pinned first, then newest.
    List {
        /// The most notes listed.
        #[arg(long, default_value_t = 100)]
        limit: u32,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Pin a note: first in searches, and in every index of notes, with its text.
    Pin {
        id: i64,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Unpin a note.
    Unpin {
        id: i64,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Remove a note and its links.
    Remove {
        id: i64,
        #[command(flatten)]
        json: JsonFlag,
    },
}

pub async fn run(locations: &Locations, command: MemoryCommand) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    let (answer, json, said) = match command {
        MemoryCommand::List { limit, json } => {
            let notes = client.memory_list(Some(limit)).await?;
            if json.json {
                print_json(&notes)?;
            } else if notes.is_empty() {
                out("No notes.\n");
            } else {
                out(&listed(&notes));
            }
            return Ok(ExitCode::SUCCESS);
        }
        MemoryCommand::Pin { id, json } => (client.memory_pin(id, true).await?, json, format!("Pinned note {id}.")),
        MemoryCommand::Unpin { id, json } => {
            (client.memory_pin(id, false).await?, json, format!("Unpinned note {id}."))
        }
        MemoryCommand::Remove { id, json } => (client.memory_remove(id).await?, json, format!("Removed note {id}.")),
    };
    match json.json {
        true => print_json(&answer)?,
        false => out(&format!("{said}\n")),
    }
    Ok(ExitCode::SUCCESS)
}

/// The notes as a table. Pure, for tests.
pub fn listed(notes: &[NoteInfo]) -> String {
    let rows: Vec<Vec<String>> = notes
        .iter()
        .map(|n| {
            let mut marks = Vec::new();
            if n.pinned {
                marks.push("pinned");
            }
            if n.superseded {
                marks.push("superseded");
            }
            vec![
                n.id.to_string(),
                n.workspace.clone().unwrap_or_else(|| "global".into()),
                marks.join(","),
                n.title.clone(),
            ]
        })
        .collect();
    table(&["ID", "SCOPE", "", "TITLE"], &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_names_each_notes_scope_and_marks() {
        let note = |id, workspace: Option<&str>, pinned| NoteInfo {
            id,
            title: format!("Note {id}"),
            body: "text".into(),
            tags: Vec::new(),
            scope: if workspace.is_some() { "workspace" } else { "global" }.into(),
            workspace: workspace.map(str::to_string),
            source: None,
            pinned,
            superseded: false,
            created_at_ms: 0,
        };
        let text = listed(&[note(2, None, true), note(1, Some("/w/a"), false)]);
        let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].contains("ID") && lines[0].contains("SCOPE") && lines[0].contains("TITLE"));
        assert!(lines[1].starts_with("2") && lines[1].contains("global") && lines[1].contains("pinned"));
        assert!(lines[1].ends_with("Note 2"));
        assert!(lines[2].starts_with("1") && lines[2].contains("/w/a") && !lines[2].contains("pinned"));
    }
}
