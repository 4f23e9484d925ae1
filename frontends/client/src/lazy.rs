//! The kernel connection a frontend makes at the first request that needs it (so a host's
//! `initialize` is answered before any kernel starts) and makes again after the kernel went
//! away: one slot, however many requests race for it.

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::sync::lock;
use crate::{ClientError, ConnectOptions, KernelClient};

/// A connection that can tell it was lost.
pub trait Connection: Clone {
    fn is_closed(&self) -> bool;
}

impl Connection for KernelClient {
    fn is_closed(&self) -> bool {
        KernelClient::is_closed(self)
    }
}

/// Whether a lost connection is made again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Again {
    /// At the next request after the loss (ACP, MCP, the HTTP frontends' principals).
    Reconnect,
    /// Never: the caller ends with its connection (an RPC client's connection).
    Never,
}

/// A kernel connection made on first use. Callers that race share one attempt; a failed
/// attempt leaves the slot empty for the next caller.
pub struct LazyKernel<C = KernelClient> {
    slot: Mutex<Arc<OnceCell<C>>>,
    again: Again,
}

impl<C: Connection> Default for LazyKernel<C> {
    fn default() -> Self {
        Self::reconnecting()
    }
}

impl<C: Connection> LazyKernel<C> {
    /// Made again at the first request after the connection was lost.
    pub fn reconnecting() -> Self {
        LazyKernel { slot: Mutex::new(Arc::new(OnceCell::new())), again: Again::Reconnect }
    }

    /// Made once: after a loss, callers get the closed connection (and its `Closed` errors).
    pub fn once() -> Self {
        LazyKernel { slot: Mutex::new(Arc::new(OnceCell::new())), again: Again::Never }
    }

    /// The connection made so far, if any (closed or not); never connects.
    pub fn current(&self) -> Option<C> {
        lock(&self.slot).get().cloned()
    }

    /// The connection, made by `connect` when there is none (or, reconnecting, when the last
    /// one was lost). `connect` runs at most once for all the callers waiting on one attempt.
    pub async fn get_or_connect<F, Fut, E>(&self, connect: F) -> Result<C, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<C, E>>,
    {
        let cell = {
            let mut slot = lock(&self.slot);
            if self.again == Again::Reconnect && slot.get().is_some_and(C::is_closed) {
                *slot = Arc::new(OnceCell::new());
            }
            slot.clone()
        };
        cell.get_or_try_init(connect).await.cloned()
    }
}

impl LazyKernel<KernelClient> {
    /// The connection, made with `options` when needed.
    pub async fn get(&self, options: &ConnectOptions) -> Result<KernelClient, ClientError> {
        self.get_or_connect(|| KernelClient::connect(options)).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::*;

    #[derive(Clone)]
    struct Fake {
        number: usize,
        closed: Arc<AtomicBool>,
    }

    impl Connection for Fake {
        fn is_closed(&self) -> bool {
            self.closed.load(Ordering::Relaxed)
        }
    }

    async fn connector(made: &AtomicUsize) -> Result<Fake, String> {
        tokio::task::yield_now().await;
        let number = made.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(Fake { number, closed: Arc::new(AtomicBool::new(false)) })
    }

    #[tokio::test]
    async fn racing_callers_share_one_connection() {
        let lazy = LazyKernel::<Fake>::reconnecting();
        assert!(lazy.current().is_none(), "nothing is made before it is asked for");
        let made = AtomicUsize::new(0);
        let (a, b) = tokio::join!(lazy.get_or_connect(|| connector(&made)), lazy.get_or_connect(|| connector(&made)));
        assert_eq!((a.unwrap().number, b.unwrap().number), (1, 1));
        assert_eq!(made.load(Ordering::Relaxed), 1);
        assert_eq!(lazy.get_or_connect(|| connector(&made)).await.unwrap().number, 1);
    }

    #[tokio::test]
    async fn a_lost_connection_is_made_again_or_kept_as_it_is() {
        let made = AtomicUsize::new(0);
        let reconnecting = LazyKernel::<Fake>::reconnecting();
        let first = reconnecting.get_or_connect(|| connector(&made)).await.unwrap();
        first.closed.store(true, Ordering::Relaxed);
        assert_eq!(reconnecting.get_or_connect(|| connector(&made)).await.unwrap().number, 2);

        let once = LazyKernel::<Fake>::once();
        let first = once.get_or_connect(|| connector(&made)).await.unwrap();
        first.closed.store(true, Ordering::Relaxed);
        let again = once.get_or_connect(|| connector(&made)).await.unwrap();
        assert_eq!(again.number, first.number);
        assert!(again.is_closed());
    }

    #[tokio::test]
    async fn a_failed_attempt_leaves_the_slot_empty() {
        let lazy = LazyKernel::<Fake>::reconnecting();
        let failed = lazy.get_or_connect(|| async { Err::<Fake, _>("no kernel") }).await;
        assert_eq!(failed.err(), Some("no kernel"));
        assert!(lazy.current().is_none());
        let made = AtomicUsize::new(0);
        assert_eq!(lazy.get_or_connect(|| connector(&made)).await.unwrap().number, 1);
    }
}
