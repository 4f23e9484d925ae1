//! `superpi artifacts [--conversation ID]`: the files turns' `artifact` tool wrote for you
//! (the kernel's `artifact.list`), with where each is on this machine.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use superpi_client::Locations;
use superpi_proto::artifact::ArtifactInfo;

use crate::connection::connect;
use crate::listing::{JsonFlag, out, print_json, table};

#[derive(Debug, Args)]
pub struct ArtifactsArgs {
    /// Only this conversation's artifacts.
    #[arg(long, value_name = "ID")]
    conversation: Option<i64>,
    #[command(flatten)]
    json: JsonFlag,
}

pub async fn run(locations: &Locations, args: ArtifactsArgs) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    let artifacts = client.artifact_list(args.conversation).await?;
    if args.json.json {
        print_json(&artifacts)?;
    } else if artifacts.is_empty() {
        out("No artifacts.\n");
    } else {
        out(&listed(&artifacts, &locations.data_dir));
    }
    Ok(ExitCode::SUCCESS)
}

/// The artifacts as a table, newest first, each with its file. Pure, for tests.
pub fn listed(artifacts: &[ArtifactInfo], data_dir: &Path) -> String {
    let rows: Vec<Vec<String>> = artifacts
        .iter()
        .map(|a| {
            let path = data_dir.join("artifacts").join(a.conversation_id.to_string()).join(&a.name);
            vec![a.conversation_id.to_string(), a.name.clone(), a.bytes.to_string(), path.display().to_string()]
        })
        .collect();
    table(&["CONVERSATION", "NAME", "BYTES", "FILE"], &rows)
}
