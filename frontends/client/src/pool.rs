//! One kernel connection per principal, for frontends that serve many (the HTTP frontends).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::sync::lock;
use crate::{ClientError, ConnectOptions, KernelClient, LazyKernel};

/// Kernel connections by principal: made on first use (once, however many callers wait for
/// it) and made again after the connection is lost. Each connects as `remote` with its
/// principal; everything else comes from the base options.
pub struct PrincipalClients {
    base: ConnectOptions,
    clients: Mutex<HashMap<String, Arc<LazyKernel>>>,
}

impl PrincipalClients {
    pub fn new(base: ConnectOptions) -> Self {
        PrincipalClients { base, clients: Mutex::new(HashMap::new()) }
    }

    /// The base options (locations, frontend name).
    pub fn options(&self) -> &ConnectOptions {
        &self.base
    }

    pub async fn get(&self, principal: &str) -> Result<KernelClient, ClientError> {
        let lazy = lock(&self.clients).entry(principal.to_string()).or_default().clone();
        lazy.get_or_connect(|| async {
            let mut opts = self.base.clone();
            opts.principal = principal.to_string();
            opts.remote = true;
            KernelClient::connect(&opts).await
        })
        .await
    }
}
