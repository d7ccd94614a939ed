//! One WebSocket session (SPEC §12): the connection's life as in
//! `connection::serve`, with WebSocket messages in place of NDJSON lines.
//!
//! - Each text message is one frame, fed to the connection's own stack
//!   (`connection::build_stack`) through `connection::dispatch`; the
//!   `ConnCtx` says `Transport::Wss`, and the layers and methods take it
//!   from there. Binary messages are ignored.
//! - A text message over 8 MiB is answered with `frame_too_large` (§3.1)
//!   and the session goes on; one over [`WS_MESSAGE_LIMIT`](super::WS_MESSAGE_LIMIT) cannot be read
//!   past, so it is answered and the session closed (1009).
//! - Heartbeat: a Ping after `ping_after` without an incoming message (any
//!   message, control frames included); closed (1011) if nothing arrives
//!   within `close_after` of the Ping.
//! - The session counts as a connection (`Daemon::admit`, so `status` and
//!   ephemeral mode see it) from the upgrade until it is fully closed.
//! - A WebSocket has no half-close: once the peer has closed (or vanished)
//!   nothing more can be delivered, so what is in flight is not waited for.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use futures_util::{Stream, StreamExt};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::sink::{CloseSlot, WsWriter, PING};
use super::{peer_label, Settings, Shared};
use crate::connection::{build_stack, dispatch};
use crate::context::{Conn, ConnCtx, PeerInfo, Transport};
use crate::error::RpcError;
use crate::jsonrpc::error_frame;
use crate::limits::{MAX_FRAME_BYTES, WRITE_STALL};
use crate::outbound::write_queue;
use crate::state::Daemon;

/// How long a session that ends abruptly waits for its Close frame to go out.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Why reading stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The peer closed, vanished, or broke the WebSocket protocol.
    Peer,
    /// The connection was closed from this side (shutdown, write stall).
    Closed,
    /// A message beyond [`WS_MESSAGE_LIMIT`](super::WS_MESSAGE_LIMIT): answered, then the session closes.
    TooLarge,
    /// No answer to the heartbeat Ping.
    Heartbeat,
}

/// Serves one upgraded WebSocket until it closes.
pub(super) async fn serve(
    shared: Arc<Shared>,
    socket: WebSocket,
    addr: SocketAddr,
    permit: OwnedSemaphorePermit,
) {
    let daemon = &shared.daemon;
    let guard = daemon.admit_remote();
    let peer = PeerInfo {
        uid: None,
        pid: None,
        label: peer_label(addr),
    };
    let closed = daemon.shutdown.child_token();
    let finish = CancellationToken::new();
    let (outbound, queue) = write_queue(closed.clone());
    let conn: Conn = Arc::new(ConnCtx::new(
        guard.id,
        peer,
        Transport::Wss,
        outbound,
        closed.clone(),
    ));
    tracing::info!(event = "connection_accepted", conn = conn.id, peer = %conn.peer.label);
    let (sink, stream) = socket.split();
    let close = CloseSlot::default();
    let sink = WsWriter::new(sink, close.clone(), daemon.shutdown.clone());
    let mut writer = tokio::spawn(queue.run(sink, closed.clone(), finish.clone()));
    let tasks = TaskTracker::new();
    let end = read_messages(daemon, &conn, &tasks, stream, &closed, &shared.settings).await;

    conn.peer_requests.close();
    daemon.staging.drop_connection(conn.id);
    tasks.close();
    let grace = match end {
        End::TooLarge => {
            // The answer is queued: write it, then close.
            close.set(1009, "message too big");
            finish.cancel();
            WRITE_STALL
        }
        End::Heartbeat => {
            close.set(1011, "heartbeat timeout");
            closed.cancel();
            CLOSE_GRACE
        }
        End::Peer | End::Closed => {
            closed.cancel();
            CLOSE_GRACE
        }
    };
    tokio::select! {
        _ = &mut writer => {}
        _ = tokio::time::sleep(grace) => writer.abort(),
    }
    closed.cancel();
    tracing::info!(event = "connection_closed", conn = conn.id, peer = %conn.peer.label, principal_id = %conn.principal_id(), reason = ?end);
    drop(guard);
    drop(permit);
}

async fn read_messages<S>(
    daemon: &Arc<Daemon>,
    conn: &Conn,
    tasks: &TaskTracker,
    mut stream: S,
    closed: &CancellationToken,
    settings: &Settings,
) -> End
where
    S: Stream<Item = Result<Message, axum::Error>> + Unpin,
{
    let mut stack = build_stack(daemon, conn);
    let cancelled = closed.cancelled();
    tokio::pin!(cancelled);
    // The timer is moved only when it fires, not on every message.
    let mut last = Instant::now();
    let mut pinged = false;
    let timer = tokio::time::sleep(settings.ping_after);
    tokio::pin!(timer);
    loop {
        let item = tokio::select! {
            biased;
            _ = &mut cancelled => return End::Closed,
            item = stream.next() => item,
            () = &mut timer => {
                if pinged {
                    return End::Heartbeat;
                }
                let now = Instant::now();
                if now < last + settings.ping_after {
                    timer.as_mut().reset(last + settings.ping_after);
                } else {
                    ping(conn);
                    pinged = true;
                    timer.as_mut().reset(now + settings.close_after);
                }
                continue;
            }
        };
        last = Instant::now();
        if pinged {
            pinged = false;
            timer.as_mut().reset(last + settings.ping_after);
        }
        let text = match item {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Binary(b))) => {
                tracing::debug!(conn = conn.id, len = b.len(), "binary message ignored");
                continue;
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Close(_))) | None => return End::Peer,
            Some(Err(e)) => {
                return match too_long(e) {
                    Some(size) => {
                        reject_too_large(conn, size).await;
                        End::TooLarge
                    }
                    None => End::Peer,
                };
            }
        };
        if text.len() > MAX_FRAME_BYTES {
            if !reject_too_large(conn, text.len()).await {
                return End::Closed;
            }
            continue;
        }
        if !dispatch(&mut stack, conn, tasks, text.as_str().to_owned()).await {
            return End::Closed;
        }
    }
}

/// Queues a Ping (through the write queue, so it cannot interleave with a frame).
fn ping(conn: &Conn) {
    let out = conn.outbound.clone();
    tokio::spawn(async move {
        let _ = out.send(PING.to_vec()).await;
    });
}

/// Answers an oversized message (§3.1) and logs it; `false` if the
/// connection can take no more output.
async fn reject_too_large(conn: &Conn, len: usize) -> bool {
    tracing::info!(event = "frame_rejected", peer = %conn.peer.label, principal_id = %conn.principal_id(), line_len = len, reason = "frame_too_large");
    conn.outbound
        .send(error_frame(&RpcError::FrameTooLarge, None))
        .await
        .is_ok()
}

/// The size of a message the WebSocket library refused as too long.
fn too_long(e: axum::Error) -> Option<usize> {
    use tungstenite::error::{CapacityError, Error};
    match *e.into_inner().downcast::<Error>().ok()? {
        Error::Capacity(CapacityError::MessageTooLong { size, .. }) => Some(size),
        other => {
            tracing::debug!(error = %other, "WebSocket read failed");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::WS_MESSAGE_LIMIT;

    #[test]
    fn the_message_limit_is_above_the_frame_limit() {
        const { assert!(WS_MESSAGE_LIMIT > MAX_FRAME_BYTES) };
    }

    #[test]
    fn a_capacity_error_gives_its_size() {
        use tungstenite::error::{CapacityError, Error};
        let e = axum::Error::new(Error::Capacity(CapacityError::MessageTooLong {
            size: 10,
            max_size: 5,
        }));
        assert_eq!(too_long(e), Some(10));
        assert_eq!(too_long(axum::Error::new(Error::ConnectionClosed)), None);
    }
}
