//! The tower layers in front of the method services, one concern per file.
//!
//! Order (outermost first), as [`crate::connection::build_stack`] assembles it:
//! envelope → trace → transport → handshake → limit → authz → router.
//! Every layer below the envelope maps a [`Request`] to a [`ReplyFuture`]
//! (the [`Inner`] it wraps does the same); the envelope layer turns a frame
//! into a request and a reply into a frame.

use tower::Service;

use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::request::Request;

/// Declares a per-connection layer: `$layer { fields }` with `new(fields)`,
/// its [`tower::Layer`] impl, and the `$svc<S> { inner, fields }` service
/// it wraps each inner service in, the fields cloned from the layer. A
/// macro, not a generic wrapper type, so every layer keeps its own named
/// types (and its own `Service` impl) and the code is what it was spelled
/// out by hand: nothing added on the hot path.
macro_rules! connection_layer {
    (
        $(#[$layer_doc:meta])* $layer:ident;
        $(#[$new_doc:meta])* new;
        $(#[$svc_doc:meta])* $svc:ident { $($field:ident: $ty:ty),+ $(,)? }
    ) => {
        $(#[$layer_doc])*
        #[derive(Debug, Clone)]
        pub struct $layer {
            $($field: $ty),+
        }

        impl $layer {
            $(#[$new_doc])*
            pub fn new($($field: $ty),+) -> Self {
                Self { $($field),+ }
            }
        }

        impl<S> tower::Layer<S> for $layer {
            type Service = $svc<S>;
            fn layer(&self, inner: S) -> Self::Service {
                $svc {
                    inner,
                    $($field: self.$field.clone()),+
                }
            }
        }

        $(#[$svc_doc])*
        #[derive(Debug, Clone)]
        pub struct $svc<S> {
            inner: S,
            $($field: $ty),+
        }
    };
}

/// The head of a gate's `Service<Request>` impl: a [`ReplyFuture`], ready
/// when its inner service is (a gate never waits on its own).
macro_rules! gate_service_head {
    () => {
        type Response = $crate::jsonrpc::Payload;
        type Error = $crate::error::RpcError;
        type Future = $crate::jsonrpc::ReplyFuture;

        fn poll_ready(
            &mut self,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), $crate::error::RpcError>> {
            self.inner.poll_ready(cx)
        }
    };
}

pub mod authz;
pub mod envelope;
pub mod handshake;
pub mod limit;
pub mod trace;
pub mod transport;

/// What a method (or a gate in front of it) answers; defined with the
/// frames so the services below the layers can name it too.
pub use crate::jsonrpc::{Reply, ReplyFuture};

/// The service a gate wraps: a request in, a reply now or later out. Every
/// layer below the envelope is one, and so is the router.
pub trait Inner:
    Service<Request, Response = Payload, Error = RpcError, Future = ReplyFuture>
{
}

impl<T> Inner for T where
    T: Service<Request, Response = Payload, Error = RpcError, Future = ReplyFuture>
{
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers for the layers' unit tests.
    use std::sync::Arc;
    use std::task::{Context, Poll};

    use tokio_util::sync::CancellationToken;
    use tower::Service;

    use crate::authz::{Binding, Credential, Principal};
    use crate::conn_state::{Conn, ConnCtx, PeerInfo, Transport};
    use crate::dialect::Dialect;
    use crate::error::RpcError;
    use crate::jsonrpc::{Payload, ReplyFuture};
    use crate::request::Request;

    /// A connection with a write queue nobody drains.
    pub fn conn() -> Conn {
        let closed = CancellationToken::new();
        let (out, q) = crate::outbound::write_queue(closed.clone());
        std::mem::forget(q);
        let peer = PeerInfo {
            uid: Some(0),
            pid: Some(1),
            label: "test".into(),
        };
        Arc::new(ConnCtx::new(1, peer, Transport::Local, out, closed))
    }

    /// Binds `conn` as the shared operator at generation 1.
    pub fn bind(conn: &Conn) {
        conn.set_binding(Some(Arc::new(Binding {
            principal: Arc::new(Principal::shared_operator()),
            generation: 1,
            credential: Credential::None,
        })));
    }

    /// A request for one of the daemon's methods, with `{}` params.
    pub fn request(method: &str) -> Request {
        let spec = crate::methods::lookup(method, true).expect("a served method");
        Request::with_params_range(String::from("{}"), Some(0..2), spec, true, Dialect::Camel)
    }

    /// A tower-test mock as an inner service of the layers: every request
    /// it takes is answered later, by the test, through its handle; ready
    /// when the handle allows.
    pub fn mock_inner() -> (MockInner, tower_test::mock::Handle<Request, Payload>) {
        let (svc, handle) = tower_test::mock::pair::<Request, Payload>();
        (MockInner(svc), handle)
    }

    /// [`mock_inner`]'s service.
    pub struct MockInner(tower_test::mock::Mock<Request, Payload>);

    impl Service<Request> for MockInner {
        type Response = Payload;
        type Error = RpcError;
        type Future = ReplyFuture;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), RpcError>> {
            self.0.poll_ready(cx).map_err(lost)
        }

        fn call(&mut self, req: Request) -> ReplyFuture {
            let fut = self.0.call(req);
            ReplyFuture::boxed(async move { fut.await.map_err(lost) })
        }
    }

    /// The mock's own failure, as an error a reply can carry.
    fn lost(e: Box<dyn std::error::Error + Send + Sync>) -> RpcError {
        RpcError::internal(e.to_string(), None)
    }

    /// A service below a gate whose `call` is the test's closure; always ready.
    pub struct Answering<F>(pub F);

    impl<F: FnMut(Request) -> ReplyFuture> Service<Request> for Answering<F> {
        type Response = Payload;
        type Error = RpcError;
        type Future = ReplyFuture;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), RpcError>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: Request) -> ReplyFuture {
            (self.0)(req)
        }
    }
}
