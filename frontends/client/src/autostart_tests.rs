//! The autostart wait against fake kernels: small Python programs that keep the real kernel's
//! contract (take the data directory's lock or say "already runs" and exit with status 3, then open the
//! socket), so each case is a process the wait has to follow.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::*;

fn locations(dir: &Path) -> Locations {
    Locations::under(dir)
}

/// A fake `superpi` whose `kernel` takes the lock like the real one and then runs `body`.
fn fake_kernel(dir: &Path, locations: &Locations, body: &str) -> PathBuf {
    std::fs::create_dir_all(&locations.runtime_dir).unwrap();
    let exe = dir.join("fake-superpi");
    let script = format!(
        "#!/usr/bin/env python3\n\
         import fcntl, socket, sys\n\
         lock = open({lock:?}, 'a')\n\
         try:\n    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)\n\
         except OSError:\n    print('another kernel already runs for the data dir', file=sys.stderr); sys.exit(3)\n\
         SOCKET = {socket:?}\n\
         {body}\n",
        lock = locations.lock_path().display().to_string(),
        socket = locations.socket_path().display().to_string(),
    );
    let mut file = std::fs::File::create(&exe).unwrap();
    file.write_all(script.as_bytes()).unwrap();
    file.set_permissions(std::fs::Permissions::from_mode(0o755)).unwrap();
    exe
}

/// Opens the socket and answers one connection.
const SERVE_ONCE: &str = "s = socket.socket(socket.AF_UNIX)\ns.bind(SOCKET)\ns.listen()\ns.accept()";

#[tokio::test]
async fn a_kernel_that_exits_at_start_ends_the_wait_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let locations = locations(dir.path());
    let exe = fake_kernel(
        dir.path(),
        &locations,
        "print('error: settings.json: unknown key `x`', file=sys.stderr)\nsys.exit(1)",
    );
    // A wait that ran to its bound would say so; this one ends when the kernel does.
    let err = start_and_connect(Some(&exe), &locations, Duration::from_secs(600)).await.unwrap_err();
    let message = err.to_string();
    assert!(message.contains("exited at start") && message.contains("unknown key `x`"), "{message}");
}

/// The conformance run's case: a kernel for the same data directory but another runtime
/// directory holds the lock, and ours cannot create its runtime directory. Ours says why and
/// exits before the lock; the holder will never open our socket, so the wait must not follow it.
#[tokio::test]
async fn a_kernel_that_fails_for_its_own_reason_is_not_waited_past_while_another_holds_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let locations = locations(dir.path());
    std::fs::create_dir_all(&locations.data_dir).unwrap();
    let holder = std::fs::File::create(locations.lock_path()).unwrap();
    holder.lock().unwrap();
    let exe = dir.path().join("fake-superpi");
    std::fs::write(&exe, "#!/bin/sh\necho 'error: creating the runtime dir: Not a directory' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = start_and_connect(Some(&exe), &locations, Duration::from_secs(600)).await.unwrap_err();
    let message = err.to_string();
    assert!(message.contains("exited at start") && message.contains("Not a directory"), "{message}");
    drop(holder);
}

#[tokio::test]
async fn a_kernel_that_is_slow_to_open_its_socket_is_waited_for_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let locations = locations(dir.path());
    let exe = fake_kernel(dir.path(), &locations, &format!("import time\ntime.sleep(1)\n{SERVE_ONCE}"));
    start_and_connect(Some(&exe), &locations, Duration::from_secs(600)).await.unwrap();
}

/// The case of a kernel killed as a frontend connects: the new kernel finds the lock held (the
/// dying one still has it) and exits; the wait follows the holder, and once it is gone
/// without ever answering, starts another kernel, which answers.
#[tokio::test]
async fn a_lost_race_to_a_kernel_that_goes_away_starts_another() {
    let dir = tempfile::tempdir().unwrap();
    let locations = locations(dir.path());
    let exe = fake_kernel(dir.path(), &locations, SERVE_ONCE);
    std::fs::create_dir_all(&locations.data_dir).unwrap();
    let holder = std::fs::File::create(locations.lock_path()).unwrap();
    holder.lock().unwrap();

    let wait = tokio::spawn({
        let locations = locations.clone();
        async move { start_and_connect(Some(&exe), &locations, Duration::from_secs(600)).await }
    });
    // The first kernel lost the race: its log says so.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(locations.kernel_log_path()).unwrap_or_default().contains("already runs") {
        assert!(Instant::now() < deadline, "the first kernel never reported the race");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!wait.is_finished(), "the wait gave up while another kernel held the data directory");
    // The holder goes away without ever answering.
    drop(holder);
    let stream = tokio::time::timeout(Duration::from_secs(60), wait).await.expect("an answer in time").unwrap();
    stream.expect("the second kernel answered");
}
