//! Transport restriction (SPEC §3.5 step 2, §8.18): local-only methods
//! answer `-32012` `local_only` on a WebSocket connection, before the
//! handshake gate, so the answer does not depend on the connection's state.

use std::task::{Context, Poll};

use tower::{Layer, Service};

use super::Gate;
use crate::context::Transport;
use crate::error::{Forbidden, RpcError};
use crate::request::Request;

/// Adds the local-only check for connections of `transport`.
#[derive(Debug, Clone, Copy)]
pub struct LocalityLayer {
    transport: Transport,
}

impl LocalityLayer {
    /// The check for one connection's transport.
    pub fn new(transport: Transport) -> Self {
        Self { transport }
    }
}

impl<S> Layer<S> for LocalityLayer {
    type Service = Locality<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Locality {
            inner,
            transport: self.transport,
        }
    }
}

/// The local-only check.
#[derive(Debug, Clone)]
pub struct Locality<S> {
    inner: S,
    transport: Transport,
}

impl<S: Service<Request, Response = crate::jsonrpc::Payload, Error = RpcError>> Service<Request>
    for Locality<S>
{
    type Response = crate::jsonrpc::Payload;
    type Error = RpcError;
    type Future = Gate<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), RpcError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        if req.method.local_only() && self.transport != Transport::Local {
            return Gate::reject(RpcError::Forbidden(Forbidden::LocalOnly {
                method: req.method.name.to_owned(),
            }));
        }
        Gate::Pass {
            fut: self.inner.call(req),
        }
    }
}
