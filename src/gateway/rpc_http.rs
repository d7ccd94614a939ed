//! `POST /rpc` (docs/gateway.md): one JSON-RPC request, or an array of up
//! to [`MAX_BATCH`] run one after another, answered as HTTP JSON for
//! clients that cannot keep a WebSocket open.
//!
//! Each HTTP request is a connection of its own (`Transport::Http`, counted
//! like a WebSocket session while it runs) with the same tower stack as
//! every other connection: the bearer token is presented by an `initialize`
//! the gateway sends first, then each element is fed to the stack as one
//! frame, exactly as the local socket feeds a line. Methods whose work goes
//! on after the answer (`session/prompt`, `logs/subscribe`) need a channel
//! this connection does not have: the transport gate answers them `-32012`
//! `channel_required`. Notifications the methods send are dropped.
//!
//! Memory: the body and every answer held for the reply are charged to the
//! daemon's memory budget until the reply is written, as a socket's queued
//! answers are; once the budget is spent, the limit layer answers the next
//! elements `-32004` (`{"limit":"memory"}`) as it would on a socket, and a
//! body that does not fit is refused `503` before it is parsed.
//!
//! Time: the body must arrive within the gateway's body timeout (`408`).
//! A valid token makes the HTTP connection trusted in admission: it is
//! never evicted by strangers.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{to_bytes, Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tower::Service;

use super::admission::Ticket;
use super::http_json::{bytes_response, json_response};
use super::Shared;
use crate::conn_state::{PeerInfo, Transport};
use crate::connection::{build_stack, new_conn, Stack};
use crate::jsonrpc::AnswerFrame;
use crate::limits::MAX_FRAME_BYTES;
use crate::memory::{budget, Charge};

/// The most requests one `POST /rpc` array may carry.
pub const MAX_BATCH: usize = 16;

/// The peer label of a `POST /rpc` client: `http:<ip>:<port>`.
fn peer_label(addr: SocketAddr) -> String {
    format!("http:{addr}")
}

/// `POST /rpc`.
pub(super) async fn rpc(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    req: Request,
) -> Response {
    let headers = req.headers().clone();
    if !is_json(&headers) {
        return json_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            json!({"error": "content_type", "expected": "application/json"}),
        );
    }
    let ticket = req.extensions().get::<Arc<Ticket>>().cloned();
    let read = tokio::time::timeout(
        shared.settings.body_timeout,
        to_bytes(req.into_body(), MAX_FRAME_BYTES),
    );
    let body = match read.await {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => {
            return json_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({"error": "body_too_large", "max_bytes": MAX_FRAME_BYTES}),
            )
        }
        Err(_) => {
            tracing::info!(event = "http_refused", reason = "body_timeout", peer = %peer_label(addr));
            let mut r = json_response(
                StatusCode::REQUEST_TIMEOUT,
                json!({"error": "body_timeout", "secs": shared.settings.body_timeout.as_secs()}),
            );
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return r;
        }
    };
    // What this request holds (its body, then its reply) counts against
    // the daemon's budget like a socket's frames.
    let mut held = match budget().try_charge(body.len()) {
        Ok(charge) => charge,
        Err(over) => {
            tracing::info!(event = "http_refused", reason = "memory_budget", peer = %peer_label(addr));
            let mut r = json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": "memory_budget", "max_bytes": over.max}),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return r;
        }
    };
    let Some((frames, batch)) = split_body(&body) else {
        return json_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            json!({"error": "batch_too_large", "max": MAX_BATCH}),
        );
    };

    let daemon = &shared.daemon;
    let guard = daemon.admit_remote();
    let peer = PeerInfo::remote(peer_label(addr));
    let (conn, mut queue) = new_conn(guard.id, peer, Transport::Http);
    // Nothing is written to this connection but answers, which come back
    // from the stack directly: refuse the rest at once.
    queue.close();
    let mut stack = build_stack(daemon, &conn);

    let answer = match authenticate(&mut stack, bearer(&headers)).await {
        Err(refusal) => refusal,
        Ok(()) => {
            if let Some(ticket) = &ticket {
                ticket.trust();
            }
            // The frames' text is owned by `frames` now; the body's charge
            // moves to the reply as it grows.
            drop(body);
            let mut reply = Reply::new(batch);
            for frame in frames {
                if let Some(a) = call(&mut stack, frame).await {
                    reply.push(&a, &mut held);
                }
            }
            reply.into_response(held)
        }
    };
    conn.input_closed.cancel();
    conn.peer_requests.close();
    conn.closed.cancel();
    tracing::info!(event = "connection_closed", conn = conn.id, peer = %conn.peer.label, principal_id = %conn.principal_id());
    drop(guard);
    answer
}

/// The frames of a body and whether the reply is an array; `None` for an
/// array over [`MAX_BATCH`]. An array is split here (the protocol refuses
/// batches on one frame, §3.4); anything else, invalid JSON and `[]`
/// included, is one frame for the stack. Its own function so the fuzz
/// target `gateway_http` runs exactly this split.
pub(super) fn split_body(body: &[u8]) -> Option<(Vec<String>, bool)> {
    let frames: Vec<String> = match serde_json::from_slice::<Vec<Box<RawValue>>>(body) {
        Ok(items) if items.len() > MAX_BATCH => return None,
        Ok(items) if !items.is_empty() => items.into_iter().map(|r| r.get().to_owned()).collect(),
        _ => vec![String::from_utf8_lossy(body).into_owned()],
    };
    let batch = frames.len() > 1 || body.trim_ascii_start().first() == Some(&b'[');
    Some((frames, batch))
}

pub(super) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// The token of `Authorization: Bearer <token>`, if there is one.
pub(super) fn bearer(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
}

/// One frame through the stack; its answer, if it has one.
async fn call(stack: &mut Stack, frame: String) -> Option<Vec<u8>> {
    std::future::poll_fn(|cx| stack.poll_ready(cx)).await.ok()?;
    match stack.call(frame).await {
        Ok(answer) => answer.map(AnswerFrame::into_vec),
        Err(never) => match never {},
    }
}

/// `initialize` with the bearer token; its error answer as the HTTP refusal
/// (`401`, or `403` for a principal without grants).
async fn authenticate(stack: &mut Stack, token: Option<String>) -> Result<(), Response> {
    let init = json!({"jsonrpc": "2.0", "method": "initialize", "id": null,
        "params": {"protocolVersion": 1, "authToken": token}});
    let answer = call(stack, init.to_string()).await.unwrap_or_default();
    let parsed: Value = serde_json::from_slice(&answer).unwrap_or(Value::Null);
    let Some(error) = parsed.get("error") else {
        return Ok(());
    };
    let status = if error["code"] == -32012 {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::UNAUTHORIZED
    };
    let mut r = bytes_response(status, answer);
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    Err(r)
}

/// The reply being built: the answers, joined as they come (an array for
/// an array), so no answer is held twice.
struct Reply {
    body: Vec<u8>,
    batch: bool,
    answers: usize,
}

impl Reply {
    fn new(batch: bool) -> Self {
        Self {
            body: Vec::new(),
            batch,
            answers: 0,
        }
    }

    /// Appends one answer and charges what the reply now holds (work
    /// already admitted: never refused, but it makes the next element's
    /// admission see the budget spent).
    fn push(&mut self, answer: &[u8], held: &mut Charge) {
        let answer = answer.trim_ascii_end();
        if self.batch {
            self.body.push(if self.answers == 0 { b'[' } else { b',' });
        }
        self.body.extend_from_slice(answer);
        self.answers += 1;
        held.set(held.bytes().max(self.body.capacity()));
    }

    /// `200` with the answer, `204` when every element was a notification.
    /// The charge is held until the body has been written (or dropped).
    fn into_response(mut self, held: Charge) -> Response {
        if self.answers == 0 {
            return StatusCode::NO_CONTENT.into_response();
        }
        if self.batch {
            self.body.push(b']');
        }
        let body = ChargedBody {
            data: Some(Bytes::from(self.body)),
            _held: held,
        };
        let mut r = bytes_response(StatusCode::OK, Vec::new());
        *r.body_mut() = Body::new(body);
        r
    }
}

/// A reply body that keeps its bytes charged to the budget until hyper has
/// taken them and dropped the body.
struct ChargedBody {
    data: Option<Bytes>,
    _held: Charge,
}

impl axum::body::HttpBody for ChargedBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        std::task::Poll::Ready(self.data.take().map(|d| Ok(hyper::body::Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}
