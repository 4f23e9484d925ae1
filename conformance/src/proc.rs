//! The processes a run starts: servers that print their address on the first stdout line
//! (`superpi gateway`, `superpi agui`), and the client scripts. Each runs in its own process
//! group, and the whole group is killed when its handle drops, so nothing it started outlives
//! the run (the kernel is stopped by [`crate::env::RunEnv`]).
//!
//! This crate is test tooling, like the workspace's tests: it spawns the programs under test.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};

/// A child process and its process group, killed on drop.
pub struct Group {
    child: Child,
}

impl Group {
    fn kill(&mut self) {
        if let Some(id) = self.child.id().and_then(|id| i32::try_from(id).ok()) {
            let _ = killpg(Pid::from_raw(id), Signal::SIGKILL);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

fn command(program: &Path, args: &[&str], cwd: &Path, vars: &[(String, String)], unset: &[String]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        // Tokens of the caller's own environment would change what the frontends require.
        .env_remove("SUPERPI_GATEWAY_TOKEN")
        .env_remove("SUPERPI_TOKENS");
    for name in unset {
        cmd.env_remove(name);
    }
    cmd.envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))).process_group(0).kill_on_drop(true);
    cmd
}

/// A server started by the run, with the URL it printed.
pub struct Server {
    pub url: String,
    _group: Group,
}

/// Starts `superpi ARGS` and waits (30 s at most) for the first stdout line holding an
/// `http://` address. Its stderr goes to `log`.
pub async fn start_server(
    bin: &Path,
    args: &[&str],
    cwd: &Path,
    vars: &[(String, String)],
    log: &Path,
) -> Result<Server> {
    let log_file = std::fs::File::create(log).context("creating the server log")?;
    let mut cmd = command(bin, args, cwd, vars, &[]);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(log_file);
    let mut child = cmd.spawn().with_context(|| format!("starting {} {}", bin.display(), args.join(" ")))?;
    let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout pipe"))?;
    let group = Group { child };
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .map_err(|_| anyhow!("`superpi {}` printed no address within 30 s", args.join(" ")))?
        .context("reading the server's stdout")?;
    let Some(line) = first else {
        bail!("`superpi {}` exited before listening; see {}", args.join(" "), log.display());
    };
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .ok_or_else(|| anyhow!("no http:// address in the server's first line {line:?}"))?
        .trim_end_matches('/')
        .to_owned();
    // Keep draining stdout so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(Server { url, _group: group })
}

/// Starts the shell command line `line` with `PORT` set to a free port of 127.0.0.1 and waits
/// (30 s at most) until that port accepts connections: an HTTP server of another
/// implementation. Its output goes to `log`. Returns the group and the port.
pub async fn start_port_server(line: &str, cwd: &Path, vars: &[(String, String)], log: &Path) -> Result<(Group, u16)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let log_file = std::fs::File::create(log).context("creating the server log")?;
    let mut cmd = command(Path::new("sh"), &["-c", &format!("exec {line}")], cwd, vars, &[]);
    cmd.env("PORT", port.to_string()).stdin(Stdio::null()).stdout(log_file.try_clone()?).stderr(log_file);
    let mut group = Group { child: cmd.spawn().with_context(|| format!("starting {line}"))? };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Ok((group, port));
        }
        if let Ok(Some(status)) = group.child.try_wait() {
            bail!("`{line}` exited with {status} before listening; see {}", log.display());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("`{line}` did not listen on port {port} within 30 s; see {}", log.display());
        }
        // Polling a port: nothing to wait on but the connection attempt itself.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `npm ci` in `dir` (15 minutes at most).
pub async fn npm_ci(dir: &Path) -> Result<()> {
    let mut cmd = command(Path::new("npm"), &["ci", "--no-audit", "--no-fund", "--loglevel=error"], dir, &[], &[]);
    cmd.stdin(Stdio::null());
    let status = tokio::time::timeout(Duration::from_secs(900), cmd.status())
        .await
        .map_err(|_| anyhow!("npm ci in {} took over 15 minutes", dir.display()))?
        .context("running npm ci")?;
    if !status.success() {
        bail!("npm ci in {} failed with {status}", dir.display());
    }
    Ok(())
}

/// What a script run produced: its stdout lines, the tail of its stderr, how it ended.
pub struct ScriptOutput {
    pub stdout: Vec<String>,
    pub stderr_tail: Vec<String>,
    /// `None` when it was killed at the deadline.
    pub status: Option<std::process::ExitStatus>,
}

/// Runs `node SCRIPT` with the run's variables, killing its process group at the deadline.
pub async fn run_script(
    node: &str,
    script: &Path,
    cwd: &Path,
    vars: &[(String, String)],
    unset: &[String],
    timeout: Duration,
    verbose: bool,
) -> Result<ScriptOutput> {
    let script_arg = script.to_string_lossy();
    let mut cmd = command(Path::new(node), &[&script_arg], cwd, vars, unset);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().with_context(|| format!("starting {node} {script_arg}"))?;
    let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout pipe"))?;
    let stderr = child.stderr.take().ok_or_else(|| anyhow!("no stderr pipe"))?;
    let out_task = tokio::spawn(collect(stdout, None));
    let err_task = tokio::spawn(collect(stderr, if verbose { Some("  | ") } else { None }));
    let mut group = Group { child };
    let status = match tokio::time::timeout(timeout, group.child.wait()).await {
        Ok(status) => Some(status.context("waiting for the script")?),
        Err(_) => None,
    };
    // The script is done (or overdue): whatever it left behind in its group goes too.
    group.kill();
    // A detached grandchild (a kernel) could hold a pipe open: do not wait on it for long.
    let grace = Duration::from_secs(5);
    let stdout = tokio::time::timeout(grace, out_task).await.ok().and_then(|r| r.ok()).unwrap_or_default();
    let mut stderr = tokio::time::timeout(grace, err_task).await.ok().and_then(|r| r.ok()).unwrap_or_default();
    let keep = stderr.len().saturating_sub(40);
    let stderr_tail = stderr.split_off(keep);
    Ok(ScriptOutput { stdout, stderr_tail, status })
}

async fn collect(stream: impl AsyncRead + Unpin, echo: Option<&'static str>) -> Vec<String> {
    let mut lines = BufReader::new(stream).lines();
    let mut all = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(prefix) = echo {
            eprintln!("{prefix}{line}");
        }
        all.push(line);
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, body: &str) -> std::path::PathBuf {
        let path = dir.join("script.sh");
        std::fs::write(&path, body).unwrap();
        path
    }

    #[tokio::test]
    async fn a_script_past_its_deadline_is_killed_with_its_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        let body = format!(
            "echo '{{\"check\":\"first\",\"ok\":true}}'\nsleep 300 &\necho $! > {}\nwait\n",
            pid_file.display()
        );
        let path = script(dir.path(), &body);
        let out = run_script("sh", &path, dir.path(), &[], &[], Duration::from_millis(1500), false).await.unwrap();
        assert!(out.status.is_none(), "not reported as killed at the deadline");
        assert_eq!(out.stdout, vec![r#"{"check":"first","ok":true}"#.to_owned()]);
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        // The background sleep was in the script's process group: it is gone (or a zombie of init).
        let gone = || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.is_empty() || stat.rsplit(')').next().unwrap().trim_start().starts_with('Z')
        };
        // SIGKILL is delivered asynchronously: allow it a bounded moment to land.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !gone() && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(gone(), "the script's background process survived");
    }

    #[tokio::test]
    async fn the_run_variables_reach_the_script_and_caller_tokens_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = script(dir.path(), "echo \"$CONF_X|${SUPERPI_TOKENS:-none}|${CONF_GONE:-unset}\"\nexit 3\n");
        let vars = vec![("CONF_X".to_owned(), "seen".to_owned())];
        // SAFETY: set before any thread of this test reads the environment.
        unsafe { std::env::set_var("SUPERPI_TOKENS", "from-the-caller") };
        unsafe { std::env::set_var("CONF_GONE", "from-the-caller") };
        let out = run_script("sh", &path, dir.path(), &vars, &["CONF_GONE".to_owned()], Duration::from_secs(20), false)
            .await
            .unwrap();
        assert_eq!(out.stdout, vec!["seen|none|unset".to_owned()]);
        assert_eq!(out.status.and_then(|s| s.code()), Some(3));
    }
}
