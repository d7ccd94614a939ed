//! The handshake gate (§5.1): nothing but `initialize` until an
//! `initialize` has succeeded. Requests get `-32010` `not_initialized`;
//! notifications are dropped (the envelope layer never answers them).
//! A bound request leaves this layer carrying the connection's binding.

use tower::Service;

use super::{Inner, ReplyFuture};
use crate::conn_state::{BindingCopy, Conn};
use crate::error::{AuthReason, RpcError};
use crate::methods::Access;
use crate::request::Request;

connection_layer! {
    /// Adds the handshake gate for one connection.
    HandshakeLayer;
    /// The gate of `conn`.
    new;
    /// The handshake gate, with its copy of the connection's binding.
    Handshake { conn: Conn, binding: BindingCopy }
}

impl<S: Inner> Service<Request> for Handshake<S> {
    gate_service_head!();

    fn call(&mut self, mut req: Request) -> Self::Future {
        if req.method.access != Access::Handshake {
            match self.conn.current_binding(&mut self.binding) {
                Some(b) => req.binding = Some(b.clone()),
                None => return ReplyFuture::reject(RpcError::Auth(AuthReason::NotInitialized)),
            }
        }
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Payload;
    use crate::layers::testing::{bind, conn, mock_inner, request};
    use std::task::{Context, Poll};

    #[tokio::test]
    async fn only_initialize_passes_until_bound_then_everything_does() {
        let conn = conn();
        let (svc, mut handle) = mock_inner();
        let mut gate = tower::ServiceBuilder::new()
            .layer(HandshakeLayer::new(conn.clone(), BindingCopy::default()))
            .service(svc);
        handle.allow(10);

        // Before initialize: rejected without reaching the inner service.
        tower::ServiceExt::ready(&mut gate).await.unwrap();
        let err = gate.call(request("status")).await.unwrap_err();
        assert_eq!(err, RpcError::Auth(AuthReason::NotInitialized));

        // initialize passes, unbound.
        tower::ServiceExt::ready(&mut gate).await.unwrap();
        let fut = gate.call(request("initialize"));
        let (req, send) = handle.next_request().await.unwrap();
        assert_eq!(req.method.name, "initialize");
        assert!(req.binding.is_none());
        send.send_response(Payload::empty_object());
        fut.await.unwrap();

        // Once bound, a request carries the binding down.
        bind(&conn);
        tower::ServiceExt::ready(&mut gate).await.unwrap();
        let fut = gate.call(request("status"));
        let (req, send) = handle.next_request().await.unwrap();
        assert_eq!(
            req.binding.as_ref().unwrap().principal.id,
            "shared-operator"
        );
        send.send_response(Payload::empty_object());
        fut.await.unwrap();
    }

    #[tokio::test]
    async fn readiness_is_the_inner_services() {
        let (svc, mut handle) = mock_inner();
        let mut gate = tower::ServiceBuilder::new()
            .layer(HandshakeLayer::new(conn(), BindingCopy::default()))
            .service(svc);
        handle.allow(0);
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(gate.poll_ready(&mut cx).is_pending());
        handle.allow(1);
        assert!(matches!(gate.poll_ready(&mut cx), Poll::Ready(Ok(()))));
    }
}
