//! Memory given back to the system after conversations leave it: glibc keeps what a process
//! frees for its next allocations, so without this a kernel whose conversations left memory
//! would sit near its peak. One trim per batch of departures, never per event or per
//! conversation (`malloc_trim` walks every arena).

use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How long departures gather before one trim: an idle sweep under pressure lets its
/// conversations go within about a second (`live.rs`'s pressed quiet period), so a sweep
/// costs one trim, and a steady flow of departures at most one a second.
const GATHER: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(crate) struct FreedMemory {
    departures: Notify,
}

impl FreedMemory {
    /// A conversation left memory: a trim follows once the departures around it have gathered.
    pub fn conversation_left(&self) {
        // Stores one permit when the trimmer is busy: departures during a trim make one more.
        self.departures.notify_one();
    }

    /// Trims after each batch of departures, until `stop`.
    pub async fn run(&self, stop: &CancellationToken) {
        loop {
            tokio::select! {
                _ = self.departures.notified() => {}
                _ = stop.cancelled() => return,
            }
            tokio::select! {
                _ = tokio::time::sleep(GATHER) => {}
                _ = stop.cancelled() => return,
            }
            // Off the runtime's threads: a trim of a large heap takes milliseconds.
            match tokio::task::spawn_blocking(superpi_sandbox::memory::return_free_memory).await {
                Ok(returned) => tracing::debug!(returned, "gave freed memory back after conversations left"),
                Err(err) => tracing::warn!("giving freed memory back: {err}"),
            }
        }
    }
}
