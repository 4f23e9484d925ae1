//! Which SSE stream a server notification of `/mcp` goes out on.
//!
//! rmcp's `LocalSessionManager` sends progress and cancellation on the stream of the request
//! they belong to and every other notification on the session's standalone stream (the one a
//! client opens with `GET /mcp`). MCP asks that a message about a request go on that request's
//! stream, and a client that never opens the standalone stream would otherwise not see the log
//! lines of its own calls. [`RequestStreams`] wraps the local manager: a notification marked with
//! the request it is about (rmcp's `OriginatingRequestId` in its extensions, which superpi-mcp
//! sets on its log lines) goes on that request's response stream while the request is open;
//! anything else goes where rmcp sends it.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::Stream;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage, ServerNotification};
use rmcp::service::{OriginatingRequestId, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use superpi_client::sync::lock;
use tokio::sync::mpsc;

/// Messages buffered per open request beyond what its client has read.
const REQUEST_BUFFER: usize = 64;

type Routes = Mutex<HashMap<(SessionId, RequestId), mpsc::Sender<ServerSseMessage>>>;

/// rmcp's local session manager, with notifications about a request on that request's stream.
pub struct RequestStreams {
    local: Arc<LocalSessionManager>,
    routes: Arc<Routes>,
}

impl RequestStreams {
    pub fn new(local: Arc<LocalSessionManager>) -> Self {
        RequestStreams { local, routes: Arc::new(Mutex::new(HashMap::new())) }
    }
}

type LocalTransport = <LocalSessionManager as SessionManager>::Transport;
type LocalError = <LocalSessionManager as SessionManager>::Error;

impl SessionManager for RequestStreams {
    type Error = LocalError;
    type Transport = RoutedTransport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, inner) = self.local.create_session().await?;
        Ok((id.clone(), RoutedTransport { inner, session: id, routes: self.routes.clone() }))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.local.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.local.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        lock(&self.routes).retain(|(session, _), _| session != id);
        self.local.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // The route exists before the request reaches the handler, so nothing it logs is lost.
        let route = match &message {
            JsonRpcMessage::Request(request) => {
                let (tx, rx) = mpsc::channel(REQUEST_BUFFER);
                let key = (id.clone(), request.id.clone());
                lock(&self.routes).insert(key.clone(), tx);
                Some((rx, RouteGuard { routes: self.routes.clone(), key }))
            }
            _ => None,
        };
        let inner = self.local.create_stream(id, message).await?;
        let (own, guard) = route.unzip();
        Ok(RequestStream { own, inner: Box::pin(inner), inner_done: false, _guard: guard })
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.local.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.resume(id, last_event_id).await
    }
}

/// Removes a request's route when its stream ends or its client goes away.
struct RouteGuard {
    routes: Arc<Routes>,
    key: (SessionId, RequestId),
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        lock(&self.routes).remove(&self.key);
    }
}

/// A request's response stream: rmcp's, with the notifications routed to it merged in. Routed
/// ones are read first, so a line logged before the response was sent arrives before it.
struct RequestStream<S> {
    own: Option<mpsc::Receiver<ServerSseMessage>>,
    inner: Pin<Box<S>>,
    inner_done: bool,
    _guard: Option<RouteGuard>,
}

impl<S: Stream<Item = ServerSseMessage>> Stream for RequestStream<S> {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerSseMessage>> {
        if self.inner_done {
            // The response went out: what was routed before it is all that is left.
            return Poll::Ready(self.own.as_mut().and_then(|own| own.try_recv().ok()));
        }
        if let Some(own) = self.own.as_mut()
            && let Poll::Ready(Some(message)) = own.poll_recv(cx)
        {
            return Poll::Ready(Some(message));
        }
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(None) => {
                self.inner_done = true;
                Poll::Ready(self.own.as_mut().and_then(|own| own.try_recv().ok()))
            }
            other => other,
        }
    }
}

/// rmcp's session transport, sending a notification about an open request to its stream.
pub struct RoutedTransport {
    inner: LocalTransport,
    session: SessionId,
    routes: Arc<Routes>,
}

/// The request a server notification says it is about.
fn about_request(message: &TxJsonRpcMessage<RoleServer>) -> Option<&RequestId> {
    let JsonRpcMessage::Notification(note) = message else {
        return None;
    };
    let extensions = match &note.notification {
        #[allow(deprecated)] // MCP logging is deprecated only from protocol 2026-07-28 on
        ServerNotification::LoggingMessageNotification(n) => &n.extensions,
        _ => return None,
    };
    extensions.get::<OriginatingRequestId>().map(|origin| &origin.0)
}

impl Transport<RoleServer> for RoutedTransport {
    type Error = <LocalTransport as Transport<RoleServer>>::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let route = about_request(&item)
            .and_then(|request| lock(&self.routes).get(&(self.session.clone(), request.clone())).cloned());
        match route {
            Some(tx) => futures::future::Either::Left(async move {
                if tx.send(ServerSseMessage::from_message(item)).await.is_err() {
                    tracing::debug!("the request's stream closed before its notification was sent");
                }
                Ok(())
            }),
            None => futures::future::Either::Right(self.inner.send(item)),
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
