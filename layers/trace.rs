//! Tracing (§2.5): with `ZEROCLAW_LOG=debug`, a span per message
//! (peer, method) and its latency. At the default `info` level this layer
//! costs one cached level check per request and no allocation.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use tower::Service;
use tracing::{Level, Span};

use super::Reply;
use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::request::Request;

connection_layer! {
    /// Adds per-message spans for one connection.
    TraceLayer;
    /// Spans for `conn`.
    new;
    /// Per-message spans.
    Trace { conn: Conn }
}

pin_project_lite::pin_project! {
    /// The inner future, entered into its span on every poll when tracing is on.
    pub struct TraceFuture<F> {
        #[pin]
        inner: F,
        traced: Option<(Span, Instant)>,
    }
}

impl<F: Future<Output = Reply>> Future for TraceFuture<F> {
    type Output = Reply;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        let this = self.project();
        let Some((span, start)) = this.traced.as_ref() else {
            return this.inner.poll(cx);
        };
        let _enter = span.enter();
        let out = std::task::ready!(this.inner.poll(cx));
        let code = out.as_ref().err().map(RpcError::code);
        tracing::debug!(latency_us = start.elapsed().as_micros() as u64, error_code = ?code, "handled");
        Poll::Ready(out)
    }
}

impl<S: Service<Request, Response = Payload, Error = RpcError>> Service<Request> for Trace<S> {
    gate_service_head!(TraceFuture<S::Future>);

    fn call(&mut self, req: Request) -> Self::Future {
        let traced = tracing::enabled!(Level::DEBUG).then(|| {
            let span = tracing::debug_span!(
                "rpc",
                conn = self.conn.id,
                peer = %self.conn.peer.label,
                method = req.method.name,
                notification = !req.expects_reply,
            );
            (span, Instant::now())
        });
        TraceFuture {
            inner: self.inner.call(req),
            traced,
        }
    }
}
