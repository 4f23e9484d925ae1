//! Programs the user configured to run on the host, unconfined: an auth command that prints
//! a token for a model gateway. They come from the user's own configuration, never from a
//! model, and need what a tool must not have (the network, the user's credentials).

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Runs `argv` with a deadline and returns its standard output. Stdin is /dev/null; stderr
/// and the exit status come back in the error. The process is killed at the deadline.
#[allow(clippy::disallowed_methods)] // the sandbox crate is where processes start
pub async fn run_host_command(argv: Vec<String>, timeout: Duration) -> Result<String, String> {
    let (program, args) = argv.split_first().ok_or_else(|| "the command is empty".to_string())?;
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    let out = run_to_end(program, command, None, timeout).await?;
    String::from_utf8(out).map_err(|_| format!("{program} printed something that is not UTF-8"))
}

/// Opens `url` with the person's browser as `$BROWSER` names it (`browser`: the first of its
/// `:`-separated entries, split on whitespace, `%s` replaced by the URL, else the URL added
/// last), started directly, never through a shell, unconfined like the person's own programs;
/// not waited for (a thread reaps it).
#[allow(clippy::disallowed_methods)] // the sandbox crate is where processes start
pub fn open_browser(browser: &str, url: &str) -> Result<(), String> {
    let entry = browser.split(':').map(str::trim).find(|e| !e.is_empty()).ok_or("$BROWSER is empty")?;
    let mut argv: Vec<String> = entry.split_whitespace().map(str::to_string).collect();
    match argv.iter().any(|a| a.contains("%s")) {
        true => argv.iter_mut().for_each(|a| *a = a.replace("%s", url)),
        false => argv.push(url.to_string()),
    }
    let (program, args) = argv.split_first().ok_or("$BROWSER is empty")?;
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// Runs a prepared command to its end within `timeout`, `stdin` written to it (else
/// /dev/null): its standard output, or an error naming `program` with its status and stderr.
/// The process is killed when the deadline passes (or the future is dropped).
pub(crate) async fn run_to_end(
    program: &str,
    mut command: tokio::process::Command,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let mut child = command
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let input = child.stdin.take();
    let run = async {
        let feed = async {
            if let (Some(mut pipe), Some(bytes)) = (input, stdin) {
                // A program that stops reading early closes the pipe: its status says why.
                let _ = pipe.write_all(&bytes).await;
            }
            Ok::<_, std::io::Error>(0)
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let (a, b, _) = tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err), feed);
        a.and(b).map_err(|e| e.to_string())?;
        let status = child.wait().await.map_err(|e| e.to_string())?;
        Ok::<_, String>((status, out, err))
    };
    match tokio::time::timeout(timeout, run).await {
        Err(_) => Err(format!("{program} did not finish within {timeout:?}")),
        Ok(Err(e)) => Err(format!("{program}: {e}")),
        Ok(Ok((status, out, _))) if status.success() => Ok(out),
        Ok(Ok((status, _, err))) => {
            Err(format!("{program} failed ({status}): {}", String::from_utf8_lossy(&err).trim()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn output_errors_and_deadline() {
        let ok = run_host_command(vec!["sh".into(), "-c".into(), "echo tok-123".into()], Duration::from_secs(5)).await;
        assert_eq!(ok.unwrap().trim(), "tok-123");
        let fail =
            run_host_command(vec!["sh".into(), "-c".into(), "echo nope >&2; exit 3".into()], Duration::from_secs(5))
                .await;
        let fail = fail.unwrap_err();
        assert!(fail.contains("nope") && fail.contains('3'), "{fail}");
        let slow = run_host_command(vec!["sleep".into(), "5".into()], Duration::from_millis(100)).await;
        assert!(slow.unwrap_err().contains("did not finish"));
        assert!(run_host_command(vec![], Duration::from_secs(1)).await.is_err());
    }
}
