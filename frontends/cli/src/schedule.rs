//! `superpi schedule list|add|remove`: cron schedules and webhook triggers, whose runs are
//! turns of a conversation with nobody present (the kernel's `schedule.*` methods).

use std::process::ExitCode;

use clap::{Args, Subcommand};
use superpi_client::Locations;
use superpi_proto::schedule::{ScheduleAddParams, ScheduleInfo};

use crate::connection::connect;
use crate::listing::{JsonFlag, out, print_json, table};
use crate::start::Usage;

#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// The schedules and triggers: next run, latest runs, failures.
    List {
        /// Runs shown per schedule.
        #[arg(long, default_value_t = 3)]
        runs: u32,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Add a cron schedule (`--cron`) or a webhook trigger (`--webhook`).
    Add(AddArgs),
    /// Remove a schedule or trigger by id.
    Remove { id: i64 },
    /// Run a schedule or trigger paused after failed runs again.
    Resume { id: i64 },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// What each run asks (a trigger's runs add the request body, fenced as data).
    pub prompt: String,
    /// When: five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, ...
    #[arg(long, conflicts_with = "webhook", required_unless_present = "webhook")]
    pub cron: Option<String>,
    /// The IANA time zone of --cron (default UTC).
    #[arg(long = "tz", requires = "cron")]
    pub timezone: Option<String>,
    /// A webhook trigger: `POST /v1/triggers/TOKEN` on the gateway starts a run.
    #[arg(long)]
    pub webhook: bool,
    #[arg(long)]
    pub name: Option<String>,
    /// The conversation whose turns the runs are (default: a new one).
    #[arg(long)]
    pub conversation: Option<i64>,
    /// The harness of the new conversation (default superpi-librarian).
    #[arg(long, conflicts_with = "conversation")]
    pub harness: Option<String>,
    /// The workspace of the new conversation, for a harness that has one.
    #[arg(long, conflicts_with = "conversation")]
    pub workspace: Option<std::path::PathBuf>,
    /// Where each run happens: append (turns of the conversation), fork (a fork of it at its
    /// latest entry) or fresh (a new conversation of its settings, without its history).
    #[arg(long, value_parser = ["append", "fork", "fresh"])]
    pub mode: Option<String>,
    /// Skip ticks missed while no kernel ran (default: run a missed tick once, late).
    #[arg(long, requires = "cron")]
    pub no_catch_up: bool,
    /// Failed runs in a row that pause it (default 3; 0: never).
    #[arg(long)]
    pub max_failures: Option<u32>,
    #[command(flatten)]
    pub json: JsonFlag,
}

pub async fn run(locations: &Locations, command: ScheduleCommand) -> anyhow::Result<ExitCode> {
    if let ScheduleCommand::Add(AddArgs { cron: Some(cron), timezone, .. }) = &command {
        // A bad expression or zone is a usage error (exit 2), said before the kernel is asked.
        superpi_kernel::check_cron(cron, timezone.as_deref().unwrap_or("UTC")).map_err(Usage)?;
    }
    let client = connect(locations, "cli").await?;
    match command {
        ScheduleCommand::List { runs, json } => {
            let schedules = client.schedule_list(Some(runs)).await?;
            if json.json {
                print_json(&schedules)?;
            } else if schedules.is_empty() {
                out("No schedules.\n");
            } else {
                out(&listed(&schedules));
            }
        }
        ScheduleCommand::Add(args) => {
            let workspace = match args.workspace {
                Some(dir) => Some(std::fs::canonicalize(&dir)?.to_string_lossy().into_owned()),
                None => None,
            };
            let params = ScheduleAddParams {
                prompt: args.prompt,
                name: args.name,
                cron: args.cron,
                timezone: args.timezone,
                webhook: args.webhook,
                conversation_id: args.conversation,
                harness: args.harness,
                workspace,
                mode: args.mode,
                catch_up: args.no_catch_up.then_some(false),
                max_failures: args.max_failures,
            };
            let added = client.schedule_add(params).await?;
            if args.json.json {
                print_json(&added)?;
                return Ok(ExitCode::SUCCESS);
            }
            let s = &added.schedule;
            let mut text = format!("Added schedule {} (conversation {}).\n", s.id, s.conversation_id);
            if let Some(next) = s.next_at_ms {
                text.push_str(&format!("Next run: {}.\n", utc(next)));
            }
            if let (Some(token), Some(secret)) = (&added.token, &added.secret) {
                text.push_str(&format!(
                    "Trigger: POST /v1/triggers/{token} on the gateway\nSecret:  {secret}\n\
                     Send it as `Authorization: Bearer SECRET`, or sign each delivery: `X-Superpi-Timestamp: \
                     UNIX_SECONDS` and `X-Superpi-Signature-256: sha256=HEX`, the HMAC-SHA256 of \
                     `TIMESTAMP.BODY` under the secret. Neither is shown again.\n"
                ));
            }
            out(&text);
        }
        ScheduleCommand::Remove { id } => {
            client.schedule_remove(id).await?;
            out(&format!("Removed schedule {id}.\n"));
        }
        ScheduleCommand::Resume { id } => {
            client.schedule_resume(id).await?;
            out(&format!("Resumed schedule {id}.\n"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The schedules as a table, then each one's latest runs. Pure, for tests.
pub fn listed(schedules: &[ScheduleInfo]) -> String {
    let rows: Vec<Vec<String>> = schedules
        .iter()
        .map(|s| {
            let when = match (&s.cron, s.kind.as_str()) {
                (Some(cron), _) => format!("{cron} {}", s.timezone),
                (None, kind) => kind.to_string(),
            };
            vec![
                s.id.to_string(),
                s.name.clone(),
                when,
                s.next_at_ms.map(utc).unwrap_or_else(|| "-".into()),
                s.conversation_id.to_string(),
                format!("{}/{}", s.failures, s.run_count),
            ]
        })
        .collect();
    let mut text = table(&["ID", "NAME", "WHEN", "NEXT (UTC)", "CONVERSATION", "FAILED/RUNS"], &rows);
    for s in schedules.iter().filter(|s| s.paused_at_ms.is_some()) {
        text.push_str(&format!(
            "Schedule {} is paused after {} failed runs in a row: `superpi schedule resume {}`.\n",
            s.id, s.max_failures, s.id
        ));
    }
    for s in schedules.iter().filter(|s| !s.runs.is_empty()) {
        text.push_str(&format!("\nSchedule {} runs:\n", s.id));
        for r in &s.runs {
            let turn = r.turn_id.map(|t| format!(" turn {t}")).unwrap_or_default();
            let error = r.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
            text.push_str(&format!("  {} {}{turn}{error}\n", utc(r.started_at_ms), r.status));
        }
    }
    text
}

/// A time in UTC, to the minute.
fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map(|t| t.format("%Y-%m-%d %H:%M").to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use superpi_proto::schedule::RunInfo;

    use super::*;

    #[test]
    fn a_listing_shows_when_each_runs_and_its_latest_runs() {
        let cron = ScheduleInfo {
            id: 1,
            name: "digest".into(),
            kind: "cron".into(),
            conversation_id: 4,
            prompt: "Write the digest.".into(),
            cron: Some("0 7 * * *".into()),
            timezone: "Europe/London".into(),
            next_at_ms: Some(1_767_250_800_000),
            ceiling: "accept-edits".into(),
            created_at_ms: 0,
            run_count: 2,
            failures: 1,
            mode: "append".into(),
            catch_up: true,
            max_failures: 3,
            paused_at_ms: None,
            runs: vec![RunInfo {
                id: 9,
                due_at_ms: Some(1_767_164_400_000),
                started_at_ms: 1_767_164_401_000,
                turn_id: None,
                status: "failed".into(),
                error: Some("its conversation 4 is gone".into()),
            }],
        };
        let hook =
            ScheduleInfo { id: 2, kind: "webhook".into(), cron: None, next_at_ms: None, runs: vec![], ..cron.clone() };
        let text = listed(&[cron, hook]);
        let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
        assert!(lines[1].starts_with("1   digest  0 7 * * * Europe/London  2026-01-01 07:00  4"), "{text}");
        assert!(lines[1].ends_with("1/2"), "{text}");
        assert!(lines[2].starts_with("2   digest  webhook") && lines[2].contains(" -  "), "{text}");
        assert_eq!(lines[4..], ["Schedule 1 runs:", "  2025-12-31 07:00 failed: its conversation 4 is gone"]);
    }
}
