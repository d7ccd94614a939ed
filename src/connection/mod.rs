//! One connection's life (§3.7, §15): the per-connection tower stack,
//! how a frame goes through it, and the accept and end-of-input steps every
//! transport shares. The loop itself is [`driver`], the one mechanism that
//! serves the Unix socket, the named pipe, in-memory streams in tests and,
//! with its own [`wire::Wire`], the WebSocket gateway.
//!
//! Each frame's future is polled once, in place: most methods answer then
//! and there (no task, no allocation); a future that must wait is moved into
//! a task of its own, so a long `session/prompt` or a request waiting for the
//! client never blocks the frames behind it. The stack's future is `Unpin` by
//! construction, which is what lets it be polled in place and then moved.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::{Service, ServiceBuilder};

use crate::conn_state::{BindingCopy, Conn, ConnCtx, PeerInfo, Transport};
use crate::jsonrpc::AnswerFrame;
use crate::layers::{
    authz::AuthzLayer, envelope::EnvelopeLayer, handshake::HandshakeLayer, limit::LimitLayer,
};
use crate::layers::{trace::TraceLayer, transport::LocalityLayer};
use crate::outbound::{write_queue, WriteQueue};
use crate::services::Router;
use crate::state::{ConnectionGuard, Daemon};

pub mod driver;
pub mod wire;

pub use wire::{ByteStream, ByteWire, Inbound, Wire};

/// The per-connection tower stack: frame in, frame (or nothing) out.
pub type Stack = crate::layers::envelope::Envelope<
    crate::layers::trace::Trace<
        crate::layers::transport::Locality<
            crate::layers::handshake::Handshake<
                crate::layers::limit::Limit<crate::layers::authz::Authz<Router>>,
            >,
        >,
    >,
>;

/// Builds the stack of one connection. The WebSocket gateway builds the same.
pub fn build_stack(daemon: &Arc<Daemon>, conn: &Conn) -> Stack {
    ServiceBuilder::new()
        .layer(EnvelopeLayer::new(
            conn.clone(),
            daemon.test_faults,
            daemon.authz.clone(),
        ))
        .layer(TraceLayer::new(conn.clone()))
        .layer(LocalityLayer::new(conn.transport))
        .layer(HandshakeLayer::new(conn.clone(), BindingCopy::default()))
        .layer(LimitLayer::new(conn.clone()))
        .layer(AuthzLayer::new(conn.clone(), daemon.authz.clone()))
        .service(Router::new(daemon, conn))
}

/// Feeds one frame through the stack and returns its answer if it is ready
/// now. An unfinished one continues in its own task (tracked by `tasks`),
/// which queues its answer on the connection's outbound queue.
pub fn dispatch_now(
    stack: &mut Stack,
    conn: &Conn,
    tasks: &TaskTracker,
    frame: String,
    cx: &mut Context<'_>,
) -> Option<AnswerFrame> {
    // Every layer is always ready (load is shed, not queued).
    let _ = stack.poll_ready(cx);
    let mut fut = stack.call(frame);
    match Pin::new(&mut fut).poll(cx) {
        Poll::Ready(Ok(answer)) => answer,
        Poll::Ready(Err(never)) => match never {},
        Poll::Pending => {
            let out = conn.outbound.clone();
            tasks.spawn(async move {
                if let Ok(Some(frame)) = fut.await {
                    let _ = out.send(frame.into_vec()).await;
                }
            });
            None
        }
    }
}

/// Serves one accepted byte-stream connection (Unix socket, named pipe,
/// in-memory duplex) until it ends.
pub async fn serve<T: ByteStream>(
    daemon: Arc<Daemon>,
    guard: ConnectionGuard,
    io: T,
    peer: PeerInfo,
) {
    let (conn, queue) = new_conn(guard.id, peer, Transport::Local);
    driver::drive(&daemon, &conn, queue, &mut ByteWire::new(io)).await;
    log_closed(&conn);
    drop(guard);
}

/// A new connection's context and write queue; logs the accept. Its
/// `closed` token is its own: the daemon's shutdown ends input and lets the
/// driver write everything owed before closing (§2.6), it does not abort.
pub fn new_conn(id: u64, peer: PeerInfo, transport: Transport) -> (Conn, WriteQueue) {
    let closed = CancellationToken::new();
    let (outbound, queue) = write_queue(closed.clone());
    let conn = Arc::new(ConnCtx::new(id, peer, transport, outbound, closed));
    tracing::info!(event = "connection_accepted", conn = conn.id, peer = %conn.peer.label);
    (conn, queue)
}

/// The client sent its last frame: it can no longer answer daemon requests,
/// its uploads are dropped (they belong to their connection, §8.18.1), and
/// what is in flight is finished.
pub(crate) fn end_of_input(daemon: &Daemon, conn: &Conn, tasks: &TaskTracker) {
    conn.input_closed.cancel();
    conn.peer_requests.close();
    daemon.staging.drop_connection(conn.id);
    tasks.close();
}

fn log_closed(conn: &Conn) {
    tracing::info!(event = "connection_closed", conn = conn.id, peer = %conn.peer.label, principal_id = %conn.principal_id());
}
