//! The envelope layer (§3.2–§3.6): a frame in, a frame (or nothing) out.
//!
//! It parses and classifies each frame, answers invalid ones with the error
//! the spec names (and logs `frame_rejected` without their contents), routes
//! responses to the connection's pending daemon requests (never answering
//! them; a response passes the binding check a request passes, so a
//! revoked client's answer never reaches an agent), looks the method up in the static table (`-32601` before anything
//! else), and turns what the inner stack replies into the response frame,
//! echoing the id byte for byte. Notifications are never answered.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::value::RawValue;
use tower::Service;

use super::{Inner, Reply, ReplyFuture};
use crate::authz::AuthzState;
use crate::conn_state::Conn;
use crate::error::{InternalReason, RpcError};
use crate::jsonrpc::{classify, error_frame, AnswerFrame, Classified, IdText};
use crate::limits::MAX_FRAME_BYTES;
use crate::methods;
use crate::peer::PeerReply;
use crate::request::Request;

connection_layer! {
    /// Adds the envelope handling of one connection.
    EnvelopeLayer;
    /// Envelope handling for `conn`; `test_faults` exposes `debug/set-faults`;
    /// `authz` checks the binding of a client's responses.
    new;
    /// The envelope service.
    Envelope { conn: Conn, test_faults: bool, authz: std::sync::Arc<AuthzState> }
}

/// The stack's future: the answer frame decided at once (or nothing to
/// write), or the reply still to come and the id to answer it with.
#[allow(missing_debug_implementations)]
pub enum EnvelopeFuture {
    Call {
        fut: ReplyFuture,
        id: Option<IdText>,
    },
    Done {
        frame: Option<AnswerFrame>,
    },
}

impl Future for EnvelopeFuture {
    type Output = Result<Option<AnswerFrame>, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut *self {
            Self::Call { fut, id } => {
                let reply = std::task::ready!(Pin::new(fut).poll(cx));
                Poll::Ready(Ok(answer(reply, id.take())))
            }
            Self::Done { frame } => Poll::Ready(Ok(frame.take())),
        }
    }
}

/// The frame answering `reply`: none for a notification (no `id`) or a
/// request its handler answered itself.
fn answer(reply: Reply, id: Option<IdText>) -> Option<AnswerFrame> {
    match reply {
        Ok(p) if p.is_answered() => None,
        reply => id.map(|id| response_frame(reply, id)),
    }
}

/// Where `part` (a slice of `frame`) lies in `frame`.
fn span_of(frame: &str, part: &str) -> std::ops::Range<usize> {
    let start = part.as_ptr() as usize - frame.as_ptr() as usize;
    start..start + part.len()
}

/// The response frame for `reply`, or `response_too_large` if it would exceed the frame limit.
fn response_frame(reply: Reply, id: IdText) -> AnswerFrame {
    match reply {
        // The frame's length without its `\n` is what the limit bounds.
        Ok(payload) if payload.frame_len(id.as_bytes()) - 1 > MAX_FRAME_BYTES => {
            let e = RpcError::internal(
                format!("Response exceeds {MAX_FRAME_BYTES} bytes"),
                Some(InternalReason::ResponseTooLarge),
            );
            AnswerFrame::Whole(error_frame(&e, Some(id.as_str())))
        }
        Ok(payload) => AnswerFrame::Parts(payload, id),
        Err(e) => AnswerFrame::Whole(error_frame(&e, Some(id.as_str()))),
    }
}

impl<S> Envelope<S> {
    fn rejected(&self, frame_len: usize, reason: &str) {
        tracing::info!(
            event = "frame_rejected",
            peer = %self.conn.peer.label,
            principal_id = %self.conn.principal_id(),
            line_len = frame_len,
            reason,
        );
    }

    fn route_response(&self, id: &str, outcome: Result<&str, &str>) {
        if !self.conn.may_answer(&self.authz) {
            tracing::info!(
                event = "response_dropped",
                peer = %self.conn.peer.label,
                principal_id = %self.conn.principal_id(),
                reason = "binding revoked",
            );
            return;
        }
        // The text was read as JSON already: owning it cannot fail.
        let owned = |raw: &str| RawValue::from_string(raw.to_owned());
        let reply = match outcome {
            Ok(r) => owned(r).map(PeerReply::Result),
            Err(e) => owned(e).map(PeerReply::Error),
        };
        let resolved = reply.is_ok_and(|reply| self.conn.peer_requests.resolve(id, reply));
        if !resolved {
            tracing::info!(
                event = "response_dropped",
                peer = %self.conn.peer.label,
                principal_id = %self.conn.principal_id(),
                reason = "no pending request has this id",
            );
        }
    }
}

impl<S: Inner> Service<String> for Envelope<S> {
    type Response = Option<AnswerFrame>;
    type Error = Infallible;
    type Future = EnvelopeFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The gates below never fail readiness; a failure would only mean
        // "answer with an error", which `call` does anyway.
        self.inner.poll_ready(cx).map(|_| Ok(()))
    }

    fn call(&mut self, frame: String) -> Self::Future {
        if frame.trim().is_empty() {
            return EnvelopeFuture::Done { frame: None };
        }
        let (id, spec, params) = match classify(&frame) {
            Classified::Request { id, method, params } => {
                match methods::lookup(&method, self.test_faults) {
                    Some(spec) => (
                        id.map(IdText::new),
                        spec,
                        params.map(|p| span_of(&frame, p)),
                    ),
                    None => {
                        let reply = id.map(|id| {
                            let e = RpcError::method_not_found(&method);
                            AnswerFrame::Whole(error_frame(&e, Some(id)))
                        });
                        return EnvelopeFuture::Done { frame: reply };
                    }
                }
            }
            Classified::Reply { id, error } => {
                let reason = match error {
                    RpcError::Parse(_) => "parse_error",
                    RpcError::Batch => "batch",
                    _ => "invalid_envelope",
                };
                self.rejected(frame.len(), reason);
                let frame = error_frame(&error, id);
                return EnvelopeFuture::Done {
                    frame: Some(AnswerFrame::Whole(frame)),
                };
            }
            Classified::Drop { reason } => {
                self.rejected(frame.len(), reason);
                return EnvelopeFuture::Done { frame: None };
            }
            Classified::Response { id, outcome } => {
                self.route_response(id, outcome);
                return EnvelopeFuture::Done { frame: None };
            }
        };
        let expects_reply = id.is_some();
        let mut req =
            Request::with_params_range(frame, params, spec, expects_reply, self.conn.dialect());
        req.id = id.clone();
        match self.inner.call(req) {
            ReplyFuture::Ready(Some(reply)) => EnvelopeFuture::Done {
                frame: answer(reply, id),
            },
            fut => EnvelopeFuture::Call { fut, id },
        }
    }
}
