//! Who is on the other end of a kernel connection: its frontend, principal, outbox and
//! subscriptions. Connections make peers; request handlers and `tool.call` read them.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use superpi_proto::{KernelMessage, frame};
use tokio::sync::mpsc;

use crate::subscription::SubscriptionHandle;

/// Who is on the other end of a connection.
pub(crate) struct Peer {
    pub frontend: String,
    pub principal: String,
    pub remote: bool,
    pub out: mpsc::UnboundedSender<Bytes>,
    pub subscriptions: Mutex<HashMap<u64, SubscriptionHandle>>,
}

impl Peer {
    pub fn send(&self, message: &KernelMessage) {
        let _ = self.out.send(Bytes::from(frame::encode(message)));
    }
}
