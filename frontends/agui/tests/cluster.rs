//! `superpi agui` on two machines (two data directories) whose kernels share one PostgreSQL
//! database: a thread started through one machine's server continues through the other's (its
//! runs answered in AG-UI's order rules), while both live and after the first is killed.
//! Skipped, saying so, without PostgreSQL binaries unless CI is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Server, http, run_input, text, verify};
use superpi_tests::{TestEnv, postgres_server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_started_through_one_machines_server_continues_through_anothers() {
    let Some(server) = postgres_server::shared() else { return };
    let url = server.new_database();
    let vars = [("SUPERPI_DATABASE_URL", url.as_str()), ("SUPERPI_LEASE_MS", "1500")];
    let [(machine_a, _kernel_a, _), (machine_b, _kernel_b, _)] = TestEnv::two_on_one_database(&url).await;
    let server_a = Server::start_in(machine_a, &[], &vars);
    let server_b = Server::start_in(machine_b, &[], &vars);
    let http = http();

    let first = server_a.run(&http, &run_input("team", "r1", "one")).await.all().await;
    verify(&first);
    assert_eq!(text(&first), "one");
    // Through B while A runs the thread.
    let second = server_b.run(&http, &run_input("team", "r2", "two")).await.all().await;
    verify(&second);
    assert_eq!(text(&second), "two");

    // A's machine dies: B takes the thread over once A's lease runs out.
    server_a.env.kill_kernel();
    drop(server_a);
    let third = server_b.run(&http, &run_input("team", "r3", "three")).await.all().await;
    verify(&third);
    assert_eq!(text(&third), "three");
    // Attached through B, the thread's snapshot holds every run's messages.
    let mut attached = server_b.attach(&http, "team").await;
    let opening = attached.until("RUN_FINISHED").await;
    let messages = opening.iter().find(|e| e["type"] == "MESSAGES_SNAPSHOT").unwrap()["messages"].clone();
    let contents: Vec<&str> = messages.as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(contents, ["one", "one", "two", "two", "three", "three"]);
}
