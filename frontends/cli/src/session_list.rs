//! `superpi session list [--limit N | --all] [--json]`: the caller's conversations, latest
//! first, each followed by its children, walked page by page by cursor.

use std::process::ExitCode;

use superpi_client::Locations;

use crate::connection::connect;
use crate::listing::{JsonFlag, nested, nested_id, print_json, print_table};

/// `superpi session list`'s options.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct SessionListArgs {
    /// Every conversation, page after page.
    #[arg(long, conflicts_with = "limit")]
    pub all: bool,
    /// The latest N (default 100).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
    #[command(flatten)]
    pub json: JsonFlag,
}

pub async fn session_list(locations: &Locations, args: SessionListArgs) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    let most = if args.all { usize::MAX } else { args.limit.unwrap_or(100) as usize };
    let (list, more) = client.list_up_to(most).await?;
    if args.json.json {
        print_json(&list)?;
        return Ok(ExitCode::SUCCESS);
    }
    if more {
        eprintln!("The latest {}; more with --limit N or --all.", list.len());
    }
    let rows: Vec<Vec<String>> = nested(list)
        .into_iter()
        .map(|(depth, c)| {
            vec![
                nested_id(depth, c.conversation_id),
                c.harness,
                c.model,
                c.mode,
                c.status,
                c.title.unwrap_or_default().replace('\n', " "),
            ]
        })
        .collect();
    print_table(&["ID", "HARNESS", "MODEL", "MODE", "STATUS", "TITLE"], &rows);
    Ok(ExitCode::SUCCESS)
}
