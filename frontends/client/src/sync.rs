//! The lock every frontend takes on its small shared state: a poisoned mutex (a thread
//! panicked holding it) is taken anyway, since the state it guards is still whole between
//! statements and a frontend that stopped serving for it would fail every later request.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, poisoned or not.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_mutex_is_still_taken() {
        let mutex = std::sync::Arc::new(Mutex::new(1));
        let held = mutex.clone();
        let panicked = std::thread::spawn(move || {
            let _guard = held.lock().unwrap();
            panic!("poisoning the mutex on purpose");
        })
        .join();
        assert!(panicked.is_err());
        assert!(mutex.is_poisoned());
        *lock(&mutex) += 1;
        assert_eq!(*lock(&mutex), 2);
    }
}
