//! Spawning one confined process and seeing it through: output read to the end, deadline,
//! cancel, the group and the cgroup killed, everything reaped.

use std::ffi::{CString, OsString};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cgroup::CallCgroup;
use crate::confine::Prepared;
use crate::output::{Collected, Collector};
use crate::spawn::{Spawn, SpawnError};

/// Throttle of progress chunks.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
/// Largest progress chunk.
const PROGRESS_MAX: usize = 8 * 1024;
/// Kept of the stderr of the tool runner (its diagnostics).
const STDERR_MAX: usize = 64 * 1024;

pub(crate) struct Launch {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    pub cwd: PathBuf,
    /// Bytes fed on stdin; None means stdin is /dev/null.
    pub stdin: Option<Vec<u8>>,
    /// Whether stderr goes to the same stream as stdout (bash) or apart (the tool runner).
    pub merge_stderr: bool,
    pub prepared: Prepared,
    pub status_read: OwnedFd,
    pub network_watch: Option<OwnedFd>,
    pub cgroup: Option<CallCgroup>,
    /// The call's environment tag, swept for when there is no cgroup.
    pub tag: String,
    pub timeout: Duration,
    pub grace: Duration,
    pub drain: Duration,
    pub collector: Collector,
    pub progress: Option<mpsc::Sender<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Exited,
    TimedOut,
    Cancelled,
}

#[derive(Debug)]
pub(crate) struct Finished {
    pub status: Option<ExitStatus>,
    pub end: End,
    pub output: Collected,
    pub stderr: Vec<u8>,
    /// Nothing of the call outlived it (its cgroup was emptied): its temp dir may be reused.
    pub contained: bool,
    /// The internet sockets it was refused; None when its calls were not watched (it had
    /// network, or the machine gives no listener).
    pub network: Option<crate::netwatch::Refused>,
}

impl Finished {
    pub(crate) fn exit_code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    pub(crate) fn signal(&self) -> Option<i32> {
        self.status.and_then(|s| s.signal())
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum LaunchError {
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error("sandbox i/o: {0}")]
    Io(#[from] std::io::Error),
}

pub(crate) fn c_string(s: &std::ffi::OsStr) -> std::io::Result<CString> {
    CString::new(s.as_bytes())
        .map_err(|_| std::io::Error::other(format!("{} contains a NUL byte", s.to_string_lossy())))
}

/// An environment as the `NAME=value` strings execve takes.
pub(crate) fn env_block(env: &[(OsString, OsString)]) -> std::io::Result<Vec<CString>> {
    env.iter()
        .map(|(k, v)| {
            let mut kv = k.clone();
            kv.push("=");
            kv.push(v);
            c_string(&kv)
        })
        .collect()
}

pub(crate) fn pipe_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    let ret = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if ret < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Ends a call that is abandoned half-way (its future dropped instead of cancelled): kills the
/// group, the cgroup or the tagged processes, so nothing outlives it either way.
pub(crate) struct Guard {
    pgid: i32,
    cgroup: Option<CallCgroup>,
    tag: String,
    since: u64,
}

impl Guard {
    pub(crate) fn new(pgid: i32, cgroup: Option<CallCgroup>, tag: String, since: u64) -> Guard {
        Guard { pgid, cgroup, tag, since }
    }

    /// Kills what is left of the call; true when its cgroup showed nothing survived.
    async fn finish(mut self) -> bool {
        signal_group(self.pgid, libc::SIGKILL, None);
        self.pgid = 0;
        match self.cgroup.take() {
            Some(cg) => cg.destroy().await,
            None => {
                let (tag, since) = (std::mem::take(&mut self.tag), self.since);
                let _ = tokio::task::spawn_blocking(move || crate::reap::sweep(&tag, since)).await;
                false
            }
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.pgid == 0 {
            return;
        }
        signal_group(self.pgid, libc::SIGKILL, self.cgroup.as_ref());
        let cgroup = self.cgroup.take();
        let (tag, since) = (std::mem::take(&mut self.tag), self.since);
        let cleanup = async move {
            match cgroup {
                Some(cg) => drop(cg.destroy().await),
                None => {
                    let _ = tokio::task::spawn_blocking(move || crate::reap::sweep(&tag, since)).await;
                }
            }
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(cleanup);
        }
    }
}

fn signal_group(pgid: i32, signal: i32, cgroup: Option<&CallCgroup>) {
    if pgid > 0 {
        // SAFETY: kill(2) on the call's own process group.
        unsafe { libc::kill(-pgid, signal) };
    }
    if let Some(cg) = cgroup {
        cg.signal_all(signal);
    }
}

async fn read_some(reader: &mut Option<pipe::Receiver>, buf: &mut [u8]) -> std::io::Result<usize> {
    match reader {
        Some(r) => r.read(buf).await,
        None => std::future::pending().await,
    }
}

pub(crate) async fn run(launch: Launch, cancel: CancellationToken) -> Result<Finished, LaunchError> {
    let Launch {
        program,
        args,
        env,
        cwd,
        stdin,
        merge_stderr,
        prepared,
        status_read,
        network_watch,
        cgroup,
        tag,
        timeout,
        grace,
        drain,
        mut collector,
        progress,
    } = launch;

    let (out_read, out_write) = pipe_pair()?;
    let (err_read, err_write) = if merge_stderr {
        (None, out_write.try_clone()?)
    } else {
        let (r, w) = pipe_pair()?;
        (Some(r), w)
    };
    let (stdin_child, stdin_feed) = match &stdin {
        Some(_) => {
            let (r, w) = pipe_pair()?;
            (r, Some(w))
        }
        None => (std::fs::File::open("/dev/null")?.into(), None),
    };
    let spawn = Spawn {
        program: c_string(program.as_os_str())?,
        argv: std::iter::once(program.as_os_str())
            .chain(args.iter().map(|a| a.as_os_str()))
            .map(c_string)
            .collect::<std::io::Result<_>>()?,
        envp: env_block(&env)?,
        stdio: [stdin_child, out_write, err_write],
        prepared,
        status_read,
        network_watch,
    };
    let since = crate::reap::now_ticks();
    let started = Instant::now();
    let mut child = crate::spawn::spawn(spawn).await?;
    crate::profile::add(crate::profile::Phase::Spawn, started);
    let running = Instant::now();
    let _ = cwd; // the child enters it as a confinement step (after its mount namespace)
    let pgid = child.id();
    let namespace = child.take_namespace();
    let network = child.take_network_watch();
    let guard = Guard { pgid, cgroup, tag, since };

    if let (Some(bytes), Some(feed)) = (stdin, stdin_feed) {
        let mut input = pipe::Sender::from_owned_fd(feed)?;
        tokio::spawn(async move {
            let _ = input.write_all(&bytes).await;
            let _ = input.shutdown().await;
        });
    }

    let mut out = Some(pipe::Receiver::from_owned_fd(out_read)?);
    let mut err = match err_read {
        Some(fd) => Some(pipe::Receiver::from_owned_fd(fd)?),
        None => None,
    };
    let mut stderr = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut ebuf = vec![0u8; 8 * 1024];

    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    // Armed once SIGTERM is sent (SIGKILL after the grace) or once the leader exits while a
    // descendant still holds the pipe (bounded drain, then SIGKILL).
    let kill_at = tokio::time::sleep(Duration::from_secs(u32::MAX as u64));
    tokio::pin!(kill_at);
    let mut kill_armed = false;
    let mut killed = false;
    let mut abandoned = false;
    let mut status: Option<ExitStatus> = None;
    let mut end = End::Exited;
    let mut terminating = false;
    let mut last_progress: Option<Instant> = None;
    let flush = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(flush);
    let mut pending = String::new();

    while status.is_none() || out.is_some() || err.is_some() {
        tokio::select! {
            read = read_some(&mut out, &mut buf), if out.is_some() => {
                match read {
                    Ok(0) | Err(_) => out = None,
                    Ok(n) => {
                        collector.push(&buf[..n]);
                        if let Some(tx) = &progress {
                            pending.push_str(&String::from_utf8_lossy(&buf[..n]));
                            if pending.len() > PROGRESS_MAX {
                                let mut cut = pending.len() - PROGRESS_MAX;
                                while !pending.is_char_boundary(cut) { cut += 1; }
                                pending.drain(..cut);
                            }
                            if last_progress.is_none_or(|t: Instant| t.elapsed() >= PROGRESS_EVERY) {
                                let _ = tx.try_send(std::mem::take(&mut pending));
                                last_progress = Some(Instant::now());
                            }
                        }
                    }
                }
            }
            read = read_some(&mut err, &mut ebuf), if err.is_some() => {
                match read {
                    Ok(0) | Err(_) => err = None,
                    Ok(n) => {
                        let room = STDERR_MAX.saturating_sub(stderr.len());
                        stderr.extend_from_slice(&ebuf[..n.min(room)]);
                    }
                }
            }
            waited = child.wait(), if status.is_none() => {
                status = Some(waited?);
                if !kill_armed {
                    kill_at.as_mut().reset(tokio::time::Instant::now() + drain);
                    kill_armed = true;
                }
            }
            _ = &mut deadline, if !terminating => {
                end = End::TimedOut;
                terminating = true;
                signal_group(pgid, libc::SIGTERM, guard.cgroup.as_ref());
                kill_at.as_mut().reset(tokio::time::Instant::now() + grace);
                kill_armed = true;
            }
            _ = cancel.cancelled(), if !terminating => {
                end = End::Cancelled;
                terminating = true;
                signal_group(pgid, libc::SIGTERM, guard.cgroup.as_ref());
                kill_at.as_mut().reset(tokio::time::Instant::now() + grace);
                kill_armed = true;
            }
            _ = &mut flush, if !pending.is_empty() => {
                let due = last_progress.map(|t| t + PROGRESS_EVERY).unwrap_or_else(Instant::now);
                if Instant::now() >= due {
                    if let Some(tx) = &progress {
                        let _ = tx.try_send(std::mem::take(&mut pending));
                    }
                    last_progress = Some(Instant::now());
                } else {
                    flush.as_mut().reset(tokio::time::Instant::from_std(due));
                }
            }
            _ = &mut kill_at, if kill_armed && !abandoned => {
                if killed {
                    // Something outside the group and the cgroup still holds a pipe: stop
                    // reading, keep what was gathered.
                    abandoned = true;
                    out = None;
                    err = None;
                } else {
                    killed = true;
                    signal_group(pgid, libc::SIGKILL, guard.cgroup.as_ref());
                    if guard.cgroup.is_none() {
                        // Without a cgroup, a holder of the pipe that left the session is found
                        // by its tag.
                        let (tag, since) = (guard.tag.clone(), guard.since);
                        let _ = tokio::task::spawn_blocking(move || crate::reap::sweep(&tag, since)).await;
                    }
                    kill_at.as_mut().reset(tokio::time::Instant::now() + drain);
                }
            }
        }
    }
    crate::profile::add(crate::profile::Phase::Run, running);
    // The leader is reaped; now nothing of the call may survive it.
    let finishing = Instant::now();
    let contained = guard.finish().await;
    crate::profile::add(crate::profile::Phase::Finish, finishing);
    crate::spawn::release_in_background(namespace);
    let network = network.map(|watch| watch.seen());
    Ok(Finished { status, end, output: collector.finish(), stderr, contained, network })
}
