//! The PostgreSQL engine's connections: the thread whose runtime drives their sockets, TLS
//! through rustls, the statements prepared on a connection, and how a synchronous store call
//! waits for its answer.

use std::future::Future;
use std::sync::Arc;

use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::StoreError;

/// The connection and the statements prepared on it: a statement prepared once is sent as one
/// message with its parameters, not parsed again at each call.
pub(crate) struct Connection {
    client: Client,
    prepared: std::collections::HashMap<&'static str, Statement>,
}

impl Connection {
    pub(crate) fn new(client: Client) -> Connection {
        Connection { client, prepared: Default::default() }
    }

    /// `sql` prepared on this connection (once).
    pub(crate) async fn prepared(&mut self, sql: &'static str) -> Result<Statement, StoreError> {
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
pub(crate) fn wait<F: Future>(future: F) -> F::Output {
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
pub(crate) struct Driver {
    pub(crate) handle: tokio::runtime::Handle,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Driver {
    pub(crate) fn start() -> Result<Driver, StoreError> {
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

    pub(crate) fn connect(&self, target: &Target) -> Result<Client, StoreError> {
        let target = target.clone();
        let connecting = self.handle.spawn(async move {
            let (client, connection) = target.config.connect(target.tls).await?;
            tokio::spawn(drive(connection));
            Ok(client)
        });
        wait(connecting).map_err(|e| StoreError::Config(format!("the database thread: {e}")))?
    }
}

async fn drive<F: Future<Output = Result<(), tokio_postgres::Error>>>(connection: F) {
    if let Err(err) = connection.await {
        tracing::error!("the database connection ended: {}", StoreError::from(err));
    }
}

/// Where the store connects: the connection string's settings, and the TLS its `sslmode` and
/// `sslrootcert` ask for (read here: tokio-postgres knows neither `verify-ca`, `verify-full` nor
/// `sslrootcert`).
#[derive(Clone)]
pub(crate) struct Target {
    pub config: Config,
    /// Negotiated only when `config` says TLS (`SslMode::Require`).
    pub tls: MakeRustlsConnect,
}

impl Target {
    pub(crate) fn parse(url: &str) -> Result<Target, StoreError> {
        let (rest, tls) = tls_settings(url)?;
        let mut config: Config = rest.parse().map_err(|e: tokio_postgres::Error| StoreError::Config(e.to_string()))?;
        config.ssl_mode(if tls.check.is_some() { SslMode::Require } else { SslMode::Disable });
        Ok(Target { config, tls: connector(&tls)? })
    }
}

/// The TLS a connection string asks for.
#[derive(Debug, PartialEq)]
pub(crate) struct TlsSettings {
    /// What is checked of the server's certificate; `None`: a plain connection.
    pub check: Option<Check>,
    pub roots: Roots,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Check {
    /// Its chain and the host name it is for (`require`, `verify-full`).
    Full,
    /// Its chain only (`verify-ca`), for a server reached by an address its certificate does
    /// not name.
    Chain,
}

#[derive(Debug, PartialEq)]
pub(crate) enum Roots {
    /// The system's (`sslrootcert` absent or `system`).
    System,
    /// Only the certificates of this PEM file (a managed service's CA bundle).
    File(std::path::PathBuf),
}

/// The connection string without `sslmode` and `sslrootcert`, and the TLS they ask for.
pub(crate) fn tls_settings(url: &str) -> Result<(String, TlsSettings), StoreError> {
    let (rest, mode, root) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        split_url(url)?
    } else {
        split_pairs(url)
    };
    let check = match mode.as_deref() {
        None | Some("disable" | "allow" | "prefer") => None,
        Some("require" | "verify-full") => Some(Check::Full),
        Some("verify-ca") => Some(Check::Chain),
        Some(other) => {
            return Err(StoreError::Config(format!(
                "sslmode `{other}`: use disable, prefer, require, verify-ca or verify-full"
            )));
        }
    };
    let roots = match root.as_deref() {
        None | Some("system") => Roots::System,
        Some(path) => Roots::File(path.into()),
    };
    Ok((rest, TlsSettings { check, roots }))
}

type Split = (String, Option<String>, Option<String>);

/// A URL's query without `sslmode` and `sslrootcert`, and their values (percent-decoded).
fn split_url(url: &str) -> Result<Split, StoreError> {
    let Some((base, query)) = url.split_once('?') else { return Ok((url.to_string(), None, None)) };
    let (mut mode, mut root, mut kept) = (None, None, Vec::new());
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => mode = Some(percent_decoded(value)?),
            "sslrootcert" => root = Some(percent_decoded(value)?),
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    Ok((rest, mode, root))
}

fn percent_decoded(value: &str) -> Result<String, StoreError> {
    let bad = || StoreError::Config(format!("a connection URL's value `{value}` is not percent-encoded UTF-8"));
    let mut bytes = Vec::with_capacity(value.len());
    let mut rest = value.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = tail.get(..2).and_then(|h| std::str::from_utf8(h).ok()).ok_or_else(bad)?;
            bytes.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).map_err(|_| bad())
}

/// `key=value` pairs without `sslmode` and `sslrootcert`, and their values (unquoted). Pairs
/// as libpq reads them: spaces around `=` allowed, a value quoted in `'...'` or ending at a
/// space, `\` escaping the next character. What does not read so is passed on as it is, for
/// tokio-postgres to refuse.
fn split_pairs(url: &str) -> Split {
    let (mut mode, mut root, mut kept) = (None, None, Vec::new());
    let mut chars = url.char_indices().peekable();
    let skip_spaces = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
    };
    loop {
        skip_spaces(&mut chars);
        let Some(&(start, _)) = chars.peek() else { break };
        let mut key = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        skip_spaces(&mut chars);
        if chars.next_if(|(_, c)| *c == '=').is_none() {
            return (url.to_string(), None, None);
        }
        skip_spaces(&mut chars);
        let quoted = chars.next_if(|(_, c)| *c == '\'').is_some();
        let mut value = String::new();
        let mut closed = !quoted;
        while let Some((_, c)) = chars.next() {
            match c {
                '\\' => value.extend(chars.next().map(|(_, c)| c)),
                '\'' if quoted => {
                    closed = true;
                    break;
                }
                c if c.is_whitespace() && !quoted => break,
                c => value.push(c),
            }
        }
        if !closed {
            return (url.to_string(), None, None);
        }
        let end = chars.peek().map_or(url.len(), |(i, _)| *i);
        match key.as_str() {
            "sslmode" => mode = Some(value),
            "sslrootcert" => root = Some(value),
            _ => kept.push(url[start..end].trim_end()),
        }
    }
    (kept.join(" "), mode, root)
}

/// The TLS connector for these settings (an unused one for a plain connection: tokio-postgres
/// negotiates nothing when the configuration says `disable`).
fn connector(tls: &TlsSettings) -> Result<MakeRustlsConnect, StoreError> {
    use rustls::client::WebPkiServerVerifier;
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    let tls_error = |e: rustls::Error| StoreError::Config(format!("TLS: {e}"));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?;
    let Some(check) = tls.check else {
        let unused = builder.with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth();
        return Ok(MakeRustlsConnect::new(unused));
    };
    let verifier: Arc<dyn ServerCertVerifier> = match &tls.roots {
        Roots::System => Arc::new(rustls_platform_verifier::Verifier::new(provider.clone()).map_err(tls_error)?),
        Roots::File(path) => {
            let unreadable =
                |e: &dyn std::fmt::Display| StoreError::Config(format!("sslrootcert {}: {e}", path.display()));
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(path).map_err(|e| unreadable(&e))? {
                roots.add(cert.map_err(|e| unreadable(&e))?).map_err(|e| unreadable(&e))?;
            }
            if roots.is_empty() {
                return Err(unreadable(&"no certificate in it"));
            }
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| StoreError::Config(format!("TLS: {e}")))?
        }
    };
    let verifier = match check {
        Check::Full => verifier,
        Check::Chain => Arc::new(AnyName(verifier)),
    };
    Ok(MakeRustlsConnect::new(builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth()))
}

/// `verify-ca`: the server's certificate must chain to a root, whatever name it is for (as
/// libpq checks it).
#[derive(Debug)]
struct AnyName(Arc<dyn rustls::client::danger::ServerCertVerifier>);

impl rustls::client::danger::ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        use rustls::CertificateError::{NotValidForName, NotValidForNameContext};
        // The name is checked after the chain: a name error means the chain held.
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(NotValidForName | NotValidForNameContext { .. })) => {
                Ok(rustls::client::danger::ServerCertVerified::assertion())
            }
            verified => verified,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
