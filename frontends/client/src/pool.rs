//! One kernel connection per principal, for frontends that serve many (the HTTP frontends).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::{ClientError, ConnectOptions, KernelClient};

/// Kernel connections by principal: made on first use (once, however many callers wait for
/// it) and made again after the connection is lost. Each connects as `remote` with its
/// principal; everything else comes from the base options.
pub struct PrincipalClients {
    base: ConnectOptions,
    clients: Mutex<HashMap<String, Arc<OnceCell<KernelClient>>>>,
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
        let cell = {
            let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
            let slot = clients.entry(principal.to_string()).or_default();
            if slot.get().is_some_and(KernelClient::is_closed) {
                *slot = Arc::new(OnceCell::new());
            }
            slot.clone()
        };
        let client = cell
            .get_or_try_init(|| async {
                let mut opts = self.base.clone();
                opts.principal = principal.to_string();
                opts.remote = true;
                KernelClient::connect(&opts).await
            })
            .await?;
        Ok(client.clone())
    }
}
