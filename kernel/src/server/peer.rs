//! Who is on the other end of a kernel connection: its frontend, principal, outbox and
//! subscriptions. Connections make peers; request handlers and `tool.call` read them.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use superpi_proto::message::{Response, codes};
use superpi_proto::{ErrorObject, KernelMessage, frame};

use crate::watch::outbox::Outbox;
use crate::watch::subscription::SubscriptionHandle;

/// Who is on the other end of a connection.
pub(crate) struct Peer {
    pub frontend: String,
    pub principal: String,
    pub remote: bool,
    pub out: Outbox,
    pub subscriptions: Mutex<HashMap<u64, SubscriptionHandle>>,
}

impl Peer {
    /// Sends a message once the outbox has room. An answer over the frame limit is replaced by
    /// an error saying so: the frontend would refuse the frame and lose the connection.
    pub async fn send(&self, message: &KernelMessage) {
        let mut encoded = frame::encode(message);
        if encoded.len() > self.out.frame_limit()
            && let KernelMessage::Response(response) = message
        {
            let why = format!(
                "the answer is {} bytes, over the frame limit of {} bytes; ask for less (session.history and \
                 session.list answer in pages)",
                encoded.len(),
                self.out.frame_limit()
            );
            tracing::warn!(frontend = %self.frontend, "{why}");
            let refusal = Response::err(response.id, ErrorObject::new(codes::FRAME_TOO_LARGE, why));
            encoded = frame::encode(&KernelMessage::Response(refusal));
        }
        self.out.send(Bytes::from(encoded)).await;
    }
}
