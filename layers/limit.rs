//! The per-connection in-flight bound (§3.7, §4): at most 64 requests
//! and 64 MiB of their frames. A request over either bound is answered
//! `-32004` at once — tower's `ConcurrencyLimit` + `LoadShed` shape —
//! because reading must never pause: the frame after it may be the answer
//! to a daemon→client request that a running handler is waiting for.
//!
//! The counters (`crate::conn_state::InFlight`) live in the connection's
//! state, created at accept, so the bound holds across every request of
//! the connection. An admitted frame is
//! also charged to the daemon-wide memory budget (`crate::memory`): over it,
//! the request is answered `-32004` `{"limit":"memory"}`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tower::Service;

use super::{Gate, Reply};
use crate::conn_state::{Conn, Hold};
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::memory;
use crate::request::Request;

connection_layer! {
    /// Adds the in-flight bound of one connection.
    LimitLayer;
    /// The bound of `conn`.
    new;
    /// The in-flight bound.
    Limit { conn: Conn }
}

/// Gives a request's [`Hold`] back when its future ends or is dropped (the
/// handler may have given it back earlier, before writing its own answer).
#[derive(Debug)]
pub struct ReleaseOnDrop {
    conn: Conn,
    hold: Hold,
}

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.hold.release(&self.conn.in_flight);
    }
}

pin_project_lite::pin_project! {
    /// The inner future, holding its slot.
    pub struct LimitFuture<F> {
        #[pin]
        inner: Gate<F>,
        slot: Option<ReleaseOnDrop>,
    }
}

impl<F: Future<Output = Reply>> Future for LimitFuture<F> {
    type Output = Reply;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        let this = self.project();
        let out = std::task::ready!(this.inner.poll(cx));
        // Before the envelope makes the answer's frame, so before it is written.
        this.slot.take();
        Poll::Ready(out)
    }
}

impl<S: Service<Request, Response = Payload, Error = RpcError>> Service<Request> for Limit<S> {
    gate_service_head!(LimitFuture<S::Future>);

    fn call(&mut self, mut req: Request) -> Self::Future {
        let bytes = req.frame_len();
        // The daemon-wide budget after the connection's own bound: a frame
        // the connection may hold can still be one too many for the daemon.
        let admitted = self.conn.in_flight.try_acquire(bytes).and_then(|place| {
            match memory::budget().try_charge(bytes) {
                // The hold gives the charged bytes back itself, with its place.
                Ok(charge) => {
                    charge.hand_over();
                    Ok(Hold::admitted(place))
                }
                Err(over) => {
                    self.conn.in_flight.release(place);
                    Err(over.into())
                }
            }
        });
        match admitted {
            Ok(hold) => {
                req.hold = hold;
                LimitFuture {
                    slot: Some(ReleaseOnDrop {
                        conn: self.conn.clone(),
                        hold,
                    }),
                    inner: Gate::Pass {
                        fut: self.inner.call(req),
                    },
                }
            }
            Err(e) => {
                if !req.expects_reply {
                    tracing::info!(event = "notification_dropped", peer = %self.conn.peer.label, method = req.method.name, reason = "in_flight_limit");
                }
                LimitFuture {
                    slot: None,
                    inner: Gate::reject(e),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::testing::{conn, mock_inner, request};
    use crate::limits::MAX_IN_FLIGHT_REQUESTS;
    use tower::ServiceExt;

    #[tokio::test]
    async fn the_65th_request_is_shed_at_once_and_slots_come_back() {
        let conn = conn();
        let (svc, mut handle) = mock_inner();
        let mut limit = tower::ServiceBuilder::new()
            .layer(LimitLayer::new(conn.clone()))
            .service(svc);
        handle.allow(1000);
        let mut held = Vec::new();
        for _ in 0..MAX_IN_FLIGHT_REQUESTS {
            limit.ready().await.unwrap();
            held.push(limit.call(request("status")));
        }
        assert_eq!(conn.in_flight.requests(), 64);
        limit.ready().await.unwrap();
        let err = limit.call(request("status")).await.unwrap_err();
        assert_eq!(
            err,
            RpcError::LimitExceeded {
                limit: crate::error::LimitName::RequestsInFlight,
                max: 64
            }
        );
        // Completing one frees one slot; dropping the rest frees them all.
        let first = held.remove(0);
        limit.ready().await.unwrap();
        let (_, send) = handle.next_request().await.unwrap();
        send.send_response(Payload::empty_object());
        first.await.unwrap();
        assert_eq!(conn.in_flight.requests(), 63);
        drop(held);
        assert_eq!(conn.in_flight.requests(), 0);
    }
}
