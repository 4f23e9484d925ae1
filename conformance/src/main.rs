//! superpi-conformance: drives each protocol's official client (the Node scripts beside this
//! crate, one directory per protocol) against superpi's frontends started on the offline mock
//! model, or against another implementation named by a flag, and prints one table of checks.
//!
//! This crate owns the orchestration only: private directories per protocol, starting and
//! stopping what it launched (servers, the kernel they started, a fake model behind another
//! agent), collecting each script's results, the third-party record (THIRD_PARTY.md) and the
//! exit status. The checks themselves live in the scripts: it knows nothing of ACP, MCP,
//! OpenAI, AG-UI or JSON-RPC messages.

// The table on stdout is this program's output.
#![allow(clippy::print_stdout)]

mod args;
mod env;
mod fake_model;
/// The PostgreSQL server of superpi's tests, for `/mcp` answered by two kernels on one database.
/// Test tooling, held to the tests' lints: it runs PostgreSQL's programs and fails loudly.
#[path = "../../kernel/store/testing/postgres_server.rs"]
#[allow(dead_code, clippy::disallowed_methods, clippy::expect_used, clippy::unwrap_used, clippy::panic)]
mod postgres_server;
mod proc;
mod record;
mod report;
mod run;
mod third_party;

use std::process::ExitCode;

use clap::Parser;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = args::Args::parse();
    if args.third_party {
        return match third_party::run(&args).await {
            Ok((rows, failed)) => {
                report::print_table(&rows);
                let record = if args.write_record { "written" } else { "compared" };
                println!(
                    "third-party record {record}: {}",
                    if failed { "FAILED (see the rows above)" } else { "superpi passes, the others as recorded" }
                );
                if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
            }
            Err(e) => {
                eprintln!("superpi-conformance: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    match run::run_all(&args).await {
        Ok(rows) => {
            let (passed, failed) = report::print_table(&rows);
            let known = rows.iter().filter(|r| matches!(r.outcome, report::Outcome::Known(_))).count();
            let not_run = rows.iter().filter(|r| matches!(r.outcome, report::Outcome::NotRun(_))).count();
            if known > 0 {
                println!("({known} known failure(s) of superpi, see conformance/FINDINGS.md; not counted)");
            }
            if not_run > 0 {
                println!("({not_run} check(s) not run because an earlier one failed)");
            }
            println!("{passed} passed, {failed} failed, {known} known");
            if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            eprintln!("superpi-conformance: {e:#}");
            ExitCode::from(2)
        }
    }
}
