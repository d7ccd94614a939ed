//! One connection's life (SPEC §3.7, §15): a reader that feeds frames to
//! the tower stack in arrival order, and a writer task that drains the
//! connection's bounded queue.
//!
//! Reading never waits for a handler. Each frame's future is polled once,
//! in place: most methods answer then and there (no task, no allocation);
//! a future that must wait is moved into a task of its own, so a long
//! `session/prompt` or a request waiting for the client never blocks the
//! frames behind it. The stack's future is `Unpin` by construction, which is
//! what lets it be polled in place and then moved.
//!
//! Any transport that yields bytes can be served here (Unix socket, named
//! pipe, an in-memory duplex in tests); the WebSocket gateway drives the same
//! stack from its own message loop.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::{Service, ServiceBuilder};

use crate::codec::{Frame, FrameCodec};
use crate::context::{Conn, ConnCtx, PeerInfo, Transport};
use crate::jsonrpc::error_frame;
use crate::layers::{
    authz::AuthzLayer, envelope::EnvelopeLayer, handshake::HandshakeLayer, limit::LimitLayer,
};
use crate::layers::{trace::TraceLayer, transport::TransportLayer};
use crate::limits::WRITE_STALL;
use crate::outbound::{write_queue, WriteQueue};
use crate::services::Router;
use crate::state::{ConnectionGuard, Daemon};

#[cfg(unix)]
pub mod unix;

/// Initial capacity of a connection's read buffer. Small, because idle
/// connections keep it; it grows while a larger frame is in flight and is
/// given back once the connection is idle again.
const READ_BUFFER: usize = 1024;
/// A read buffer grown past this is released when it empties.
const READ_BUFFER_KEEP: usize = 64 * 1024;

/// The per-connection tower stack: frame in, frame (or nothing) out.
pub type Stack = crate::layers::envelope::Envelope<
    crate::layers::trace::Trace<
        crate::layers::transport::TransportGate<
            crate::layers::handshake::Handshake<
                crate::layers::limit::Limit<crate::layers::authz::Authz<Router>>,
            >,
        >,
    >,
>;

/// Builds the stack of one connection. The WebSocket gateway builds the same.
pub fn build_stack(daemon: &Arc<Daemon>, conn: &Conn) -> Stack {
    ServiceBuilder::new()
        .layer(EnvelopeLayer::new(conn.clone(), daemon.test_faults))
        .layer(TraceLayer::new(conn.clone()))
        .layer(TransportLayer::new(conn.transport))
        .layer(HandshakeLayer::new(conn.clone()))
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
) -> Option<Vec<u8>> {
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
                    let _ = out.send(frame).await;
                }
            });
            None
        }
    }
}

/// [`dispatch_now`], with a ready answer queued on the outbound queue.
/// Returns `false` when the connection can take no more output.
pub async fn dispatch(stack: &mut Stack, conn: &Conn, tasks: &TaskTracker, frame: String) -> bool {
    let mut frame = Some(frame);
    let answer = std::future::poll_fn(|cx| {
        Poll::Ready(
            frame
                .take()
                .and_then(|f| dispatch_now(stack, conn, tasks, f, cx)),
        )
    })
    .await;
    match answer {
        Some(frame) => conn.outbound.send(frame).await.is_ok(),
        None => true,
    }
}

/// Serves one accepted byte-stream connection until it ends.
pub async fn serve<R, W>(
    daemon: Arc<Daemon>,
    guard: ConnectionGuard,
    reader: R,
    writer: W,
    peer: PeerInfo,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (conn, closed, queue) = accept_local(&daemon, &guard, peer);
    let finish = CancellationToken::new();
    let writer = tokio::spawn(queue.run(writer, closed.clone(), finish.clone()));
    let tasks = TaskTracker::new();
    read_frames(&daemon, &conn, &tasks, reader, &closed).await;

    // The peer may still be reading: finish what is in flight, write what
    // is queued, then close.
    end_of_input(&daemon, &conn, &tasks);
    tokio::select! {
        _ = tasks.wait() => {}
        _ = closed.cancelled() => {}
    }
    finish.cancel();
    tokio::select! {
        _ = writer => {}
        _ = closed.cancelled() => {}
        _ = tokio::time::sleep(WRITE_STALL) => {}
    }
    closed.cancel();
    log_closed(&conn);
    drop(guard);
}

/// A local connection's context, its `closed` token (a child of the
/// daemon's shutdown) and its write queue; logs the accept.
fn accept_local(
    daemon: &Daemon,
    guard: &ConnectionGuard,
    peer: PeerInfo,
) -> (Conn, CancellationToken, WriteQueue) {
    let closed = daemon.shutdown.child_token();
    let (outbound, queue) = write_queue(closed.clone());
    let conn = Arc::new(ConnCtx::new(
        guard.id,
        peer,
        Transport::Local,
        outbound,
        closed.clone(),
    ));
    tracing::info!(event = "connection_accepted", conn = conn.id, peer = %conn.peer.label);
    (conn, closed, queue)
}

/// The client sent its last frame: it can no longer answer daemon requests,
/// its uploads are dropped (they belong to their connection, §8.18.1), and
/// what is in flight is finished.
fn end_of_input(daemon: &Daemon, conn: &Conn, tasks: &TaskTracker) {
    conn.input_closed.cancel();
    conn.peer_requests.close();
    daemon.staging.drop_connection(conn.id);
    tasks.close();
}

fn log_closed(conn: &Conn) {
    tracing::info!(event = "connection_closed", conn = conn.id, peer = %conn.peer.label, principal_id = %conn.principal_id());
}

async fn read_frames<R: AsyncRead + Unpin>(
    daemon: &Arc<Daemon>,
    conn: &Conn,
    tasks: &TaskTracker,
    reader: R,
    closed: &CancellationToken,
) {
    let mut stack = build_stack(daemon, conn);
    let mut frames = FramedRead::with_capacity(reader, FrameCodec::default(), READ_BUFFER);
    let cancelled = closed.cancelled();
    tokio::pin!(cancelled);
    loop {
        let item = tokio::select! {
            biased;
            item = frames.next() => item,
            _ = &mut cancelled => return,
        };
        let frame = match item {
            Some(Ok(Frame::Line(frame))) => frame,
            Some(Ok(Frame::Rejected(r))) => {
                tracing::info!(event = "frame_rejected", peer = %conn.peer.label, principal_id = %conn.principal_id(), line_len = r.line_len(), reason = r.reason());
                if conn
                    .outbound
                    .send(error_frame(&r.reply(), None))
                    .await
                    .is_err()
                {
                    return;
                }
                continue;
            }
            Some(Err(e)) => {
                tracing::debug!(conn = conn.id, error = %e, "read failed");
                return;
            }
            None => return,
        };
        if !dispatch(&mut stack, conn, tasks, frame).await {
            return;
        }
        let buf = frames.read_buffer_mut();
        if buf.is_empty() && buf.capacity() > READ_BUFFER_KEEP {
            *buf = bytes::BytesMut::with_capacity(READ_BUFFER);
        }
    }
}
