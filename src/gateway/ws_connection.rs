//! One WebSocket connection (§12), served by the same connection
//! driver as the local endpoint (`connection::driver`) through [`WsWire`]:
//!
//! - Each text message is one frame for the connection's own stack; the
//!   `ConnCtx` says `Transport::Wss`, and the layers and methods take it from
//!   there. Binary messages are ignored.
//! - A text message over 8 MiB is answered with `frame_too_large` (§3.1)
//!   and the connection goes on; one over [`WS_MESSAGE_LIMIT`](super::WS_MESSAGE_LIMIT)
//!   cannot be read past, so it is answered and the connection closed (1009)
//!   once everything owed is written.
//! - Heartbeat: a Ping after `ping_after` without an incoming message (any
//!   message, control frames included); closed (1011) if nothing arrives
//!   within `close_after` of the Ping.
//! - The connection counts as one (`Daemon::admit_remote`, so `status` and
//!   ephemeral mode see it) from the upgrade until it is fully closed.
//! - Until `initialize` has bound a token the session holds an unbound
//!   place in admission (`admission`): it is closed (1008) if it has not
//!   bound within `bind_timeout`, or when a newer stranger evicts it. Once
//!   bound, its place is trusted and only the heartbeat and the peer end it.
//! - A WebSocket has no half-close: once the peer has closed (or vanished)
//!   nothing more can be delivered, so what is in flight is not waited for.

use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::ws::{Message, WebSocket};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::StreamExt;
use std::future::Future;
use tokio::io::AsyncWrite;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::admission::Ticket;
use super::ws_writer::{CloseSlot, WsWriter, PING};
use super::{peer_label, Settings, Shared};
use crate::codec::{Frame, Rejection};
use crate::conn_state::{Conn, PeerInfo, Transport};
use crate::connection::driver::{self, ConnectionEnd};
use crate::connection::{new_conn, Inbound, Wire};
use crate::limits::MAX_FRAME_BYTES;
use crate::outbound::Outbound;

/// Serves one upgraded WebSocket until it closes.
pub(super) async fn serve(
    shared: Arc<Shared>,
    socket: WebSocket,
    addr: SocketAddr,
    ticket: Ticket,
) {
    let daemon = &shared.daemon;
    let guard = daemon.admit_remote();
    let peer = PeerInfo::remote(peer_label(addr));
    let (conn, queue) = new_conn(guard.id, peer, Transport::Wss);
    let (sink, stream) = socket.split();
    let close = CloseSlot::default();
    let mut wire = WsWire {
        stream,
        sink: WsWriter::new(sink, close.clone(), daemon.shutdown.clone()),
        close,
        heartbeat: Heartbeat::new(&shared.settings, conn.outbound.clone()),
        unbound: Some(Unbound {
            deadline: Box::pin(tokio::time::sleep(shared.settings.bind_timeout)),
            evicted: Box::pin(ticket.evicted().clone().cancelled_owned()),
        }),
        conn: conn.clone(),
        ticket,
        ending: None,
        reason: None,
    };
    let end = driver::drive(daemon, &conn, queue, &mut wire).await;
    let reason = wire.reason.unwrap_or(match end {
        ConnectionEnd::Gone => Reason::Peer,
        ConnectionEnd::Finished | ConnectionEnd::Stalled | ConnectionEnd::Closed => Reason::Closed,
    });
    log_closed(&conn, reason);
    drop(guard);
    drop(wire);
}

/// Why a WebSocket connection ended, as its `connection_closed` log says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    /// The peer closed, vanished, or broke the WebSocket protocol.
    Peer,
    /// Closed from this side (shutdown, write stall).
    Closed,
    /// A message beyond [`WS_MESSAGE_LIMIT`](super::WS_MESSAGE_LIMIT): answered, then closed.
    TooLarge,
    /// No answer to the heartbeat Ping.
    Heartbeat,
    /// No token bound within the bind timeout.
    Unbound,
    /// Evicted by a newer connection while it had not bound a token.
    Evicted,
}

fn log_closed(conn: &Conn, reason: Reason) {
    tracing::info!(event = "connection_closed", conn = conn.id, peer = %conn.peer.label, principal_id = %conn.principal_id(), reason = ?reason);
}

/// A WebSocket as the connection driver's wire.
struct WsWire {
    stream: SplitStream<WebSocket>,
    sink: WsWriter<SplitSink<WebSocket, Message>>,
    close: CloseSlot,
    heartbeat: Heartbeat,
    /// Until the session binds: its deadline and its eviction.
    unbound: Option<Unbound>,
    conn: Conn,
    /// The session's place in admission, held until it ends.
    ticket: Ticket,
    /// What the next inbound step is, once the input has ended.
    ending: Option<Inbound>,
    /// Why the input ended, when the WebSocket says.
    reason: Option<Reason>,
}

/// What ends a session that has not bound a token yet.
struct Unbound {
    deadline: std::pin::Pin<Box<Sleep>>,
    evicted: std::pin::Pin<Box<WaitForCancellationFutureOwned>>,
}

impl WsWire {
    /// Checks an unbound session: trusted once bound, closed when its time
    /// is up or it was evicted. `Some` ends the input.
    fn poll_unbound(&mut self, cx: &mut Context<'_>) -> Option<Inbound> {
        let unbound = self.unbound.as_mut()?;
        let reason = if self.conn.binding().is_some() {
            if self.ticket.trust() {
                self.unbound = None;
                return None;
            }
            Reason::Evicted
        } else if unbound.evicted.as_mut().poll(cx).is_ready() {
            Reason::Evicted
        } else if unbound.deadline.as_mut().poll(cx).is_ready() {
            Reason::Unbound
        } else {
            return None;
        };
        let why = match reason {
            Reason::Unbound => "initialize with a token in time",
            _ => "evicted before initialize",
        };
        self.close.set(1008, why);
        self.reason = Some(reason);
        Some(Inbound::Gone)
    }
}

impl Wire for WsWire {
    fn poll_inbound(&mut self, cx: &mut Context<'_>) -> Poll<Inbound> {
        if let Some(end) = self.ending.take() {
            return Poll::Ready(end);
        }
        if let Some(end) = self.poll_unbound(cx) {
            return Poll::Ready(end);
        }
        loop {
            if self.heartbeat.poll_expired(cx) {
                self.close.set(1011, "heartbeat timeout");
                self.reason = Some(Reason::Heartbeat);
                return Poll::Ready(Inbound::Gone);
            }
            let Poll::Ready(item) = self.stream.poll_next_unpin(cx) else {
                return Poll::Pending;
            };
            self.heartbeat.heard();
            match item {
                Some(Ok(Message::Text(text))) if text.len() > MAX_FRAME_BYTES => {
                    return Poll::Ready(too_large(text.len()));
                }
                Some(Ok(Message::Text(text))) => {
                    return Poll::Ready(Inbound::Frame(Frame::Line(text.as_str().to_owned())));
                }
                Some(Ok(Message::Binary(b))) => {
                    tracing::debug!(len = b.len(), "binary message ignored");
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_))) | None => {
                    self.reason = Some(Reason::Peer);
                    return Poll::Ready(Inbound::Gone);
                }
                Some(Err(e)) => {
                    return Poll::Ready(match too_long(e) {
                        Some(size) => {
                            // Answered, then the connection closes once what is owed is written.
                            self.close.set(1009, "message too big");
                            self.reason = Some(Reason::TooLarge);
                            self.ending = Some(Inbound::End);
                            too_large(size)
                        }
                        None => {
                            self.reason = Some(Reason::Peer);
                            Inbound::Gone
                        }
                    });
                }
            }
        }
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.sink).poll_write(cx, buf)
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.sink).poll_shutdown(cx)
    }
}

fn too_large(line_len: usize) -> Inbound {
    Inbound::Frame(Frame::Rejected(Rejection::TooLarge { line_len }))
}

/// The heartbeat: a Ping after `ping_after` of silence, the end after
/// `close_after` more. The timer is moved only when it fires, not on every
/// message.
struct Heartbeat {
    timer: std::pin::Pin<Box<Sleep>>,
    last: Instant,
    pinged: bool,
    ping_after: std::time::Duration,
    close_after: std::time::Duration,
    outbound: Outbound,
}

impl Heartbeat {
    fn new(settings: &Settings, outbound: Outbound) -> Self {
        Self {
            timer: Box::pin(tokio::time::sleep(settings.ping_after)),
            last: Instant::now(),
            pinged: false,
            ping_after: settings.ping_after,
            close_after: settings.close_after,
            outbound,
        }
    }

    /// A message (of any kind) arrived.
    fn heard(&mut self) {
        self.last = Instant::now();
        if self.pinged {
            self.pinged = false;
            self.timer.as_mut().reset(self.last + self.ping_after);
        }
    }

    /// Whether the peer failed to answer a Ping in time; sends the Ping when due.
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> bool {
        while self.timer.as_mut().poll(cx).is_ready() {
            if self.pinged {
                return true;
            }
            let now = Instant::now();
            if now < self.last + self.ping_after {
                self.timer.as_mut().reset(self.last + self.ping_after);
            } else {
                self.ping();
                self.pinged = true;
                self.timer.as_mut().reset(now + self.close_after);
            }
        }
        false
    }

    /// Queues a Ping (through the write queue, so it cannot interleave with a frame).
    fn ping(&self) {
        let out = self.outbound.clone();
        tokio::spawn(async move {
            let _ = out.send(PING.to_vec()).await;
        });
    }
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
