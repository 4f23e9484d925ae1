//! Watching conversations: a watcher's subscription (replay from the store, then live events
//! within a credit window), the connection's outbox it writes into, and the cluster's side of
//! watching: the heads of conversations another kernel runs (`cluster_heads`) and this kernel's
//! watchers of them as told to that kernel (`cluster_watchers`). Nothing here names the kernel.

pub(crate) mod cluster_heads;
pub(crate) mod cluster_watchers;
pub(crate) mod outbox;
pub(crate) mod subscription;
