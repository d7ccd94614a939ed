//! The tower layers in front of the method services, one concern per file.
//!
//! Order (outermost first), as [`crate::connection::build_stack`] assembles it:
//! envelope → trace → transport → handshake → limit → authz → router.
//! Every layer below the envelope maps [`Request`] to [`Reply`]; the envelope
//! layer turns a frame into a request and a reply into a frame.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::error::RpcError;

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

/// The head of a gate's `Service<Request>` impl: a [`Reply`] with future
/// `$fut`, ready when its inner service is (a gate never waits on its own).
macro_rules! gate_service_head {
    ($fut:ty) => {
        type Response = $crate::jsonrpc::Payload;
        type Error = $crate::error::RpcError;
        type Future = $fut;

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
pub use crate::jsonrpc::Reply;

pin_project_lite::pin_project! {
    /// A gate's future: either its inner service's future, or a rejection
    /// decided in `call` without reaching the inner service.
    #[project = GateProj]
    pub enum Gate<F> {
        Pass { #[pin] fut: F },
        Reject { error: Option<RpcError> },
    }
}

impl<F> Gate<F> {
    /// A rejection.
    pub fn reject(error: RpcError) -> Self {
        Gate::Reject { error: Some(error) }
    }
}

impl<F: Future<Output = Reply>> Future for Gate<F> {
    type Output = Reply;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        match self.project() {
            GateProj::Pass { fut } => fut.poll(cx),
            GateProj::Reject { error } => Poll::Ready(Err(error
                .take()
                .unwrap_or_else(|| RpcError::internal("gate polled after completion", None)))),
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers for the layers' unit tests.
    use std::sync::Arc;

    use tokio_util::sync::CancellationToken;
    use tower::ServiceExt;

    use crate::authz::{Binding, Credential, Principal};
    use crate::conn_state::{Conn, ConnCtx, PeerInfo, Transport};
    use crate::dialect::Dialect;
    use crate::error::RpcError;
    use crate::jsonrpc::Payload;
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

    /// A tower-test mock as an inner service of the layers.
    #[allow(clippy::type_complexity)]
    pub fn mock_inner() -> (
        tower::util::MapErr<
            tower_test::mock::Mock<Request, Payload>,
            fn(Box<dyn std::error::Error + Send + Sync>) -> RpcError,
        >,
        tower_test::mock::Handle<Request, Payload>,
    ) {
        let (svc, handle) = tower_test::mock::pair::<Request, Payload>();
        let f: fn(Box<dyn std::error::Error + Send + Sync>) -> RpcError =
            |e| RpcError::internal(e.to_string(), None);
        (svc.map_err(f), handle)
    }
}
