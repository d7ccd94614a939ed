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

use std::ops::Deref;

use tower::Service;

use super::{Inner, ReplyFuture};
use crate::conn_state::{Conn, ConnCtx, Hold};
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

/// Gives a request's [`Hold`] back when dropped, unless handed over: held
/// across the call below (borrowing the connection: the end of `call` for a
/// ready reply, or the unwind of a panic), then, for a reply that waits, by
/// its future (owning a clone), when it ends or is dropped. The handler may
/// have given the hold back earlier, before writing its own answer.
struct ReleaseOnDrop<C: Deref<Target = ConnCtx>> {
    conn: C,
    hold: Hold,
}

impl<C: Deref<Target = ConnCtx>> ReleaseOnDrop<C> {
    /// The hold, for another guard that gives it back instead.
    fn hand_over(self) -> Hold {
        let hold = self.hold;
        std::mem::forget(self);
        hold
    }
}

impl<C: Deref<Target = ConnCtx>> Drop for ReleaseOnDrop<C> {
    fn drop(&mut self) {
        self.hold.release(&self.conn.in_flight);
    }
}

impl<S: Inner> Service<Request> for Limit<S> {
    gate_service_head!();

    fn call(&mut self, mut req: Request) -> ReplyFuture {
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
        let hold = match admitted {
            Ok(hold) => hold,
            Err(e) => {
                if !req.expects_reply {
                    tracing::info!(event = "notification_dropped", peer = %self.conn.peer.label, method = req.method.name, reason = "in_flight_limit");
                }
                return ReplyFuture::reject(e);
            }
        };
        req.hold = hold;
        // Given back before the envelope makes the answer's frame, so before
        // it can be written: at once for a reply that is ready (or if the
        // service below panics), when the future ends or is dropped for one
        // that waits.
        let done = ReleaseOnDrop {
            conn: &*self.conn,
            hold,
        };
        match self.inner.call(req) {
            ReplyFuture::Pending(fut) => {
                let slot = ReleaseOnDrop {
                    conn: self.conn.clone(),
                    hold: done.hand_over(),
                };
                ReplyFuture::boxed(async move {
                    let reply = fut.await;
                    drop(slot);
                    reply
                })
            }
            ready => ready,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::RpcError;
    use crate::jsonrpc::Payload;
    use crate::layers::testing::{conn, mock_inner, request, Answering};
    use crate::limits::MAX_IN_FLIGHT_REQUESTS;
    use tower::{Layer, ServiceExt};

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

    #[test]
    fn a_ready_reply_holds_its_place_while_handled_and_gives_it_back_before_it_returns() {
        let conn = conn();
        let mut held_inside = Vec::new();
        let mut limit = LimitLayer::new(conn.clone()).layer(Answering(|req: Request| {
            assert!(req.hold != Hold::default(), "the handler gets the place");
            held_inside.push(conn.in_flight.requests());
            ReplyFuture::ready(Ok(Payload::empty_object()))
        }));
        for _ in 0..3 {
            let reply = limit.call(request("status"));
            assert!(matches!(reply, ReplyFuture::Ready(Some(Ok(_)))));
            assert_eq!(conn.in_flight.requests(), 0);
        }
        drop(limit);
        assert_eq!(held_inside, [1, 1, 1]);
    }

    #[test]
    fn a_panic_below_the_limit_gives_the_place_back() {
        let conn = conn();
        let mut limit =
            LimitLayer::new(conn.clone()).layer(Answering(|_: Request| -> ReplyFuture {
                panic!("a gate below the limit panicked")
            }));
        for _ in 0..3 {
            let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                limit.call(request("status"))
            }));
            assert!(unwound.is_err());
            assert_eq!(conn.in_flight.requests(), 0);
        }
    }
}
