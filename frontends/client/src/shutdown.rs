//! When a frontend that serves a listener stops: at SIGINT or SIGTERM (a person's Ctrl-C, a
//! service manager's stop). Stdio frontends stop at the end of their input instead.

use std::future::Future;

use tokio::signal::unix::{SignalKind, signal};

/// Installs the handlers now (so a signal that comes before the future is polled still counts)
/// and answers a future that resolves at the first SIGINT or SIGTERM.
pub fn shutdown_signal() -> std::io::Result<impl Future<Output = ()> + Send + 'static> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sigterm_resolves_it() {
        let stop = shutdown_signal().unwrap();
        // SAFETY: raise sends a signal to this process, whose handler is installed above.
        unsafe { libc::raise(libc::SIGTERM) };
        tokio::time::timeout(std::time::Duration::from_secs(10), stop).await.unwrap();
    }
}
