//! The PostgreSQL engine's connections: the thread whose runtime drives their sockets, TLS
//! through rustls, the statements prepared on a connection, and how a synchronous store call
//! waits for its answer.

use std::future::Future;
use std::sync::Arc;

use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, NoTls, Statement};

use super::StoreError;

/// The connection and the statements prepared on it: a statement prepared once is sent as one
/// message with its parameters, not parsed again at each call.
pub(crate) struct Connection {
    client: Client,
    prepared: std::collections::HashMap<&'static str, Statement>,
}

impl Connection {
    pub(super) fn new(client: Client) -> Connection {
        Connection { client, prepared: Default::default() }
    }

    /// `sql` prepared on this connection (once).
    pub(super) async fn prepared(&mut self, sql: &'static str) -> Result<Statement, StoreError> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.prepared.insert(sql, statement.clone());
        Ok(statement)
    }
}

impl std::ops::Deref for Connection {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl std::ops::DerefMut for Connection {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// Waits for a database call. On a multi-thread runtime's worker the runtime is told first,
/// so its other tasks move to another thread meanwhile.
pub(super) fn wait<F: Future>(future: F) -> F::Output {
    let on_worker = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if on_worker {
        tokio::task::block_in_place(|| futures::executor::block_on(future))
    } else {
        futures::executor::block_on(future)
    }
}

/// The thread whose runtime drives the connections' sockets (a query only hands its messages
/// to the connection task, so it can be awaited from any thread). It ends with the store.
pub(super) struct Driver {
    pub(super) handle: tokio::runtime::Handle,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Driver {
    pub(super) fn start() -> Result<Driver, StoreError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Config(format!("starting the database thread: {e}")))?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("superpi-postgres".into())
            .spawn(move || {
                let _ = runtime.block_on(stopped);
            })
            .map_err(|e| StoreError::Config(format!("starting the database thread: {e}")))?;
        Ok(Driver { handle, _stop: stop })
    }

    pub(super) fn connect(&self, config: &Config) -> Result<Client, StoreError> {
        let config = config.clone();
        let connecting = self.handle.spawn(async move {
            if config.get_ssl_mode() == SslMode::Require {
                let (client, connection) = config.connect(tls()?).await?;
                tokio::spawn(drive(connection));
                Ok(client)
            } else {
                let (client, connection) = config.connect(NoTls).await?;
                tokio::spawn(drive(connection));
                Ok(client)
            }
        });
        wait(connecting).map_err(|e| StoreError::Config(format!("the database thread: {e}")))?
    }
}

async fn drive<F: Future<Output = Result<(), tokio_postgres::Error>>>(connection: F) {
    if let Err(err) = connection.await {
        tracing::error!("the database connection ended: {}", StoreError::from(err));
    }
}

pub(super) fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let tls_error = |e: rustls::Error| StoreError::Config(format!("TLS: {e}"));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?
        .with_platform_verifier()
        .map_err(tls_error)?
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}
