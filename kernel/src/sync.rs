//! Locking a std mutex the kernel's way. A leaf: every module may use it.

use std::sync::{Mutex, MutexGuard};

/// Locks a std mutex, recovering from poisoning (a panicked holder left plain data behind).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
