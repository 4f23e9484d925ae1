//! Starting the kernel when none answers, and waiting for it by following it rather than a
//! clock: a kernel that is still running is still starting (on a loaded machine that can take
//! long), a kernel that exited says why in its log, and a kernel that lost the race for the
//! data directory leaves the wait to the one holding its lock.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use superpi_proto::{KERNEL_EXIT_LOCK_HELD, Locations};
use tokio::net::UnixStream;

use crate::ClientError;
use crate::locations::is_locked;

/// How many kernels one connect may start: a kernel that lost the race to one that then went
/// away without answering (a kernel killed as we connected) is followed by another.
const MAX_STARTS: u32 = 3;

/// Starts `superpi kernel --autostarted` (`exe`, default this executable) and connects to its
/// socket once it answers. The wait follows the kernels: while ours runs, or while another
/// holds the data directory's lock after ours lost the race for it (its exit status says so),
/// it goes on, for at most `timeout` (only a kernel that hangs meets it); when ours exited for
/// any other reason it ends at once with the log's reason (a lock held by a kernel with another
/// runtime directory must not keep us waiting), and when ours lost the race to a kernel that
/// is gone since, it starts another.
pub(crate) async fn start_and_connect(
    exe: Option<&Path>,
    locations: &Locations,
    timeout: Duration,
) -> Result<UnixStream, ClientError> {
    let socket = locations.socket_path();
    let deadline = Instant::now() + timeout;
    let mut child = start_kernel(exe, locations)?;
    let mut starts = 1;
    let mut delay = Duration::from_millis(2);
    let outcome = loop {
        let err = match UnixStream::connect(&socket).await {
            Ok(stream) => break Ok(stream),
            Err(err) => err,
        };
        match child.try_wait() {
            // Ours still runs: it is still starting.
            Ok(None) => {}
            // Ours lost the race for the data directory: the holder is starting (wait for it),
            // or went away without answering (start another).
            Ok(Some(status)) if status.code() == Some(i32::from(KERNEL_EXIT_LOCK_HELD)) => {
                if !is_locked(&locations.lock_path())? {
                    if starts >= MAX_STARTS {
                        break Err(ClientError::NoKernel(format!(
                            "{starts} kernels lost the race for {} to kernels that never answered",
                            locations.data_dir.display()
                        )));
                    }
                    tracing::debug!("the kernel that won the race is gone; starting another");
                    child = start_kernel(exe, locations)?;
                    starts += 1;
                    continue;
                }
            }
            // Ours failed for its own reason (bad settings, a runtime directory it cannot
            // create): whoever else holds the lock will not open our socket, so say why now.
            Ok(Some(_)) | Err(_) => {
                break Err(ClientError::NoKernel(format!("the kernel exited at start: {}", log_tail(locations))));
            }
        }
        if Instant::now() >= deadline {
            break Err(ClientError::NoKernel(format!(
                "a kernel ran but did not open {} within {timeout:?}: {err}",
                socket.display()
            )));
        }
        // Polling a socket that is about to appear: back off up to 50 ms.
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(50));
    };
    // The kernel outlives us; reap it in the background so a short-lived frontend leaves no
    // zombie while it runs.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    outcome
}

/// Starts `superpi kernel --autostarted` detached, in its own process group, with its log in
/// the data dir. The kernel's lock file makes a lost race harmless: the loser exits.
#[allow(clippy::disallowed_methods)] // the one process a frontend may start is the kernel
fn start_kernel(exe: Option<&Path>, locations: &Locations) -> Result<Child, ClientError> {
    use std::os::unix::process::CommandExt;
    let exe = match exe {
        Some(exe) => exe.to_path_buf(),
        None => std::env::current_exe()?,
    };
    std::fs::create_dir_all(&locations.data_dir)?;
    let log = std::fs::OpenOptions::new().create(true).append(true).open(locations.kernel_log_path())?;
    let mut cmd = std::process::Command::new(&exe);
    cmd.arg("kernel")
        .arg("--autostarted")
        .env("SUPERPI_DATA_DIR", &locations.data_dir)
        .env("SUPERPI_CONFIG_DIR", &locations.config_dir)
        .env("SUPERPI_RUNTIME_DIR", &locations.runtime_dir)
        .env("SUPERPI_WORKSPACES_DIR", &locations.workspaces_dir)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .process_group(0);
    let child = cmd.spawn().map_err(|err| ClientError::NoKernel(format!("starting {}: {err}", exe.display())))?;
    tracing::debug!(pid = child.id(), "started a kernel");
    Ok(child)
}

fn log_tail(locations: &Locations) -> String {
    let log = std::fs::read_to_string(locations.kernel_log_path()).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().filter(|l| !l.trim().is_empty()).take(2).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
#[path = "autostart_tests.rs"]
mod tests;
