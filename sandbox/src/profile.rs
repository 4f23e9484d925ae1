//! Where a call's time goes, summed over calls: read (and reset) by the sandbox benchmark.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The phases of one call, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// In the parent: temp dir, landlock ruleset, cgroup, environment, pipes.
    Prepare = 0,
    /// The hop to the spawner thread, the clone, and the child's confinement up to its exec.
    Spawn,
    /// From exec until the command has exited and its output is read to the end.
    Run,
    /// The end of the call: everything of it killed, the cgroup removed.
    Finish,
}

const PHASES: usize = 4;
static TOTALS: [AtomicU64; PHASES] = [const { AtomicU64::new(0) }; PHASES];
static CALLS: AtomicU64 = AtomicU64::new(0);

pub(crate) fn add(phase: Phase, since: Instant) {
    let nanos = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
    TOTALS[phase as usize].fetch_add(nanos, Ordering::Relaxed);
    if phase == Phase::Finish {
        CALLS.fetch_add(1, Ordering::Relaxed);
    }
}

/// The mean time per call of each phase since the last take, and the number of calls.
pub fn take() -> ([(Phase, Duration); PHASES], u64) {
    let calls = CALLS.swap(0, Ordering::Relaxed);
    let phases = [Phase::Prepare, Phase::Spawn, Phase::Run, Phase::Finish];
    let mean = |p: Phase| Duration::from_nanos(TOTALS[p as usize].swap(0, Ordering::Relaxed) / calls.max(1));
    (phases.map(|p| (p, mean(p))), calls)
}
