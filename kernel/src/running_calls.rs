//! Running `tool.call`s that gave a call id, by (principal, call id), so `tool.cancel` can end
//! them.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

use crate::sync::lock;

type Key = (String, String);

#[derive(Default)]
pub(crate) struct RunningCalls {
    calls: Mutex<HashMap<Key, CancellationToken>>,
}

impl RunningCalls {
    /// Registers a call's cancel token until the returned guard drops.
    pub fn register(&self, principal: &str, call_id: String, cancel: CancellationToken) -> Registered<'_> {
        let key = (principal.to_string(), call_id);
        lock(&self.calls).insert(key.clone(), cancel);
        Registered { calls: self, key }
    }

    /// Cancels the principal's running call `call_id`; false when there is none.
    pub fn cancel(&self, principal: &str, call_id: &str) -> bool {
        match lock(&self.calls).get(&(principal.to_string(), call_id.to_string())) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}

/// Removes a registered call from the table when it ends.
pub(crate) struct Registered<'a> {
    calls: &'a RunningCalls,
    key: Key,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        lock(&self.calls.calls).remove(&self.key);
    }
}
