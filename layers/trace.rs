//! Tracing (§2.5): with `ZEROCLAW_LOG=debug`, a span per message
//! (peer, method) and its latency. At the default `info` level this layer
//! costs one cached level check per request and no allocation; at `debug` a
//! request that waits is boxed once more, to carry its span.

use std::time::Instant;

use tower::Service;
use tracing::{Instrument, Level};

use super::{Inner, Reply, ReplyFuture};
use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::request::Request;

connection_layer! {
    /// Adds per-message spans for one connection.
    TraceLayer;
    /// Spans for `conn`.
    new;
    /// Per-message spans.
    Trace { conn: Conn }
}

impl<S: Inner> Service<Request> for Trace<S> {
    gate_service_head!();

    fn call(&mut self, req: Request) -> ReplyFuture {
        if !tracing::enabled!(Level::DEBUG) {
            return self.inner.call(req);
        }
        let span = tracing::debug_span!(
            "rpc",
            conn = self.conn.id,
            peer = %self.conn.peer.label,
            method = req.method.name,
            notification = !req.expects_reply,
        );
        let start = Instant::now();
        match span.in_scope(|| self.inner.call(req)) {
            ReplyFuture::Ready(Some(reply)) => {
                span.in_scope(|| handled(&reply, start));
                ReplyFuture::ready(reply)
            }
            fut => ReplyFuture::boxed(
                async move {
                    let reply = fut.await;
                    handled(&reply, start);
                    reply
                }
                .instrument(span),
            ),
        }
    }
}

/// The span's last event: the request's latency and its error code, if any.
fn handled(reply: &Reply, start: Instant) {
    let code = reply.as_ref().err().map(RpcError::code);
    tracing::debug!(latency_us = start.elapsed().as_micros() as u64, error_code = ?code, "handled");
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll, Waker};

    use tokio::sync::oneshot;
    use tower::Layer;

    use super::*;
    use crate::error::AuthReason;
    use crate::jsonrpc::Payload;
    use crate::layers::testing::{conn, request, Answering};

    /// What the subscriber wrote.
    #[derive(Clone, Default)]
    struct Written(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Written {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("not poisoned").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn at_debug_a_ready_and_a_waiting_request_each_log_once_inside_their_span() {
        let written = Written::default();
        let sink = written.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(Level::DEBUG)
            .with_ansi(false)
            .without_time()
            .with_writer(move || sink.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let (reply, later) = oneshot::channel::<Reply>();
            let mut later = Some(later);
            // `status` is answered at once, the one other request when the
            // test sends its reply.
            let mut svc = TraceLayer::new(conn()).layer(Answering(move |req: Request| {
                if req.method.name == "status" {
                    return ReplyFuture::ready(Ok(Payload::empty_object()));
                }
                let later = later.take().expect("one request answered later");
                ReplyFuture::boxed(async move { later.await.expect("the test replies") })
            }));
            let ready = svc.call(request("status"));
            assert!(matches!(ready, ReplyFuture::Ready(Some(Ok(_)))));

            let mut waiting = svc.call(request("config/get"));
            let mut cx = Context::from_waker(Waker::noop());
            assert!(Pin::new(&mut waiting).poll(&mut cx).is_pending());
            let refused = RpcError::Auth(AuthReason::NotInitialized);
            assert!(reply.send(Err(refused.clone())).is_ok());
            match Pin::new(&mut waiting).poll(&mut cx) {
                Poll::Ready(Err(e)) => assert_eq!(e, refused),
                other => panic!("expected the refusal, got {other:?}"),
            }
        });
        let text =
            String::from_utf8(written.0.lock().expect("not poisoned").clone()).expect("utf-8");
        let handled: Vec<&str> = text.lines().filter(|l| l.contains("handled")).collect();
        assert_eq!(handled.len(), 2, "{text}");
        assert!(
            handled[0].contains("rpc{conn=1 peer=test method=\"status\" notification=false}"),
            "{text}"
        );
        assert!(handled[0].contains("error_code=None"), "{text}");
        assert!(handled[1].contains("method=\"config/get\""), "{text}");
        assert!(handled[1].contains("error_code=Some(-32010)"), "{text}");
    }
}
