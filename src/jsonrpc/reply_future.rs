//! What every service below the envelope returns, the router's methods and
//! the gates in front of them alike: the reply now, or a boxed future of it.
//!
//! Most requests are answered while the stack is being called (`status`,
//! `config/get`, every refusal of a gate), so a gate looks at what the
//! service below it returned before it returns: a reply that is ready
//! passes up as a value of its own, with nothing nested, nothing polled and
//! nothing to drop later. Only a request that must wait (a turn, a file, a
//! question to the client) gets a future, boxed once by its handler and
//! wrapped again only by a gate that must act when it ends (the in-flight
//! bound). The type is `Unpin`, so the connection driver can poll the
//! stack's future in place and then move it into a task.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::Reply;
use crate::error::RpcError;

/// A reply now, or a future of it.
#[allow(missing_debug_implementations)]
pub enum ReplyFuture {
    /// Answered while the stack was called; `None` once polled out.
    Ready(Option<Reply>),
    /// An answer that needs to wait.
    Pending(Pin<Box<dyn Future<Output = Reply> + Send>>),
}

impl ReplyFuture {
    /// A reply available now.
    pub fn ready(reply: Reply) -> Self {
        Self::Ready(Some(reply))
    }

    /// A refusal, decided without reaching the service below.
    pub fn reject(error: RpcError) -> Self {
        Self::Ready(Some(Err(error)))
    }

    /// An answer that needs to wait.
    pub fn boxed(fut: impl Future<Output = Reply> + Send + 'static) -> Self {
        Self::Pending(Box::pin(fut))
    }
}

/// What a handler that panicked while it was polled answers.
pub fn panicked() -> RpcError {
    RpcError::internal("internal error: the handler panicked", None)
}

impl Future for ReplyFuture {
    type Output = Reply;

    /// A panic inside a pending handler becomes `-32603` for that request
    /// only (the router catches one inside `call`).
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        match &mut *self {
            Self::Ready(r) => Poll::Ready(r.take().unwrap_or_else(|| Err(panicked()))),
            Self::Pending(fut) => catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx)))
                .unwrap_or_else(|_| {
                    tracing::error!(event = "handler_panicked");
                    Poll::Ready(Err(panicked()))
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Payload;

    fn noop_cx() -> Context<'static> {
        Context::from_waker(std::task::Waker::noop())
    }

    #[test]
    fn a_ready_reply_is_polled_out_once() {
        let mut fut = ReplyFuture::ready(Ok(Payload::empty_object()));
        let mut cx = noop_cx();
        assert!(matches!(
            Pin::new(&mut fut).poll(&mut cx),
            Poll::Ready(Ok(_))
        ));
        // Polled again (a misuse): an internal error, not a panic.
        match Pin::new(&mut fut).poll(&mut cx) {
            Poll::Ready(Err(e)) => assert_eq!(e.code(), -32603),
            other => panic!("expected -32603, got {other:?}"),
        }
    }

    #[test]
    fn a_pending_handler_that_panics_answers_internal_error() {
        let mut fut = ReplyFuture::boxed(async {
            tokio::task::yield_now().await;
            panic!("boom");
        });
        let mut cx = noop_cx();
        assert!(Pin::new(&mut fut).poll(&mut cx).is_pending());
        match Pin::new(&mut fut).poll(&mut cx) {
            Poll::Ready(Err(e)) => assert_eq!(e.code(), -32603),
            other => panic!("expected -32603, got {other:?}"),
        }
    }
}
