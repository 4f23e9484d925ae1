//! How busy the kernel is: connected clients, running turns, the last activity. An
//! autostarted kernel exits after it was idle long enough (`server.rs`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::sync::lock;

pub(crate) struct Activity {
    clients: AtomicU64,
    running_turns: AtomicU64,
    started: Instant,
    last: Mutex<Instant>,
}

impl Activity {
    pub fn new() -> Activity {
        Activity {
            clients: AtomicU64::new(0),
            running_turns: AtomicU64::new(0),
            started: Instant::now(),
            last: Mutex::new(Instant::now()),
        }
    }

    pub fn touch(&self) {
        *lock(&self.last) = Instant::now();
    }

    pub fn client_connected(&self) {
        self.clients.fetch_add(1, Ordering::Relaxed);
        self.touch();
    }

    pub fn client_disconnected(&self) {
        self.clients.fetch_sub(1, Ordering::Relaxed);
        self.touch();
    }

    pub fn turn_started(&self) {
        self.running_turns.fetch_add(1, Ordering::Relaxed);
    }

    pub fn turn_ended(&self) {
        self.running_turns.fetch_sub(1, Ordering::Relaxed);
        self.touch();
    }

    pub fn clients(&self) -> u64 {
        self.clients.load(Ordering::Relaxed)
    }

    pub fn running_turns(&self) -> u64 {
        self.running_turns.load(Ordering::Relaxed)
    }

    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// How long nothing happened, or `None` while a client is connected or a turn runs.
    pub fn idle_for(&self) -> Option<Duration> {
        if self.clients() > 0 || self.running_turns() > 0 {
            return None;
        }
        Some(lock(&self.last).elapsed())
    }
}
