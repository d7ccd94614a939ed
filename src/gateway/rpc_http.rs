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

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::to_bytes;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tower::Service;

use super::http_json::{bytes_response, json_response};
use super::Shared;
use crate::conn_state::{PeerInfo, Transport};
use crate::connection::{build_stack, new_conn, Stack};
use crate::jsonrpc::AnswerFrame;
use crate::limits::MAX_FRAME_BYTES;

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
    let Ok(body) = to_bytes(req.into_body(), MAX_FRAME_BYTES).await else {
        return json_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            json!({"error": "body_too_large", "max_bytes": MAX_FRAME_BYTES}),
        );
    };
    // An array is split here (the protocol refuses batches on one frame,
    // §3.4); anything else, invalid JSON included, is one frame for the stack.
    let frames: Vec<String> = match serde_json::from_slice::<Vec<Box<RawValue>>>(&body) {
        Ok(items) if items.len() > MAX_BATCH => {
            return json_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({"error": "batch_too_large", "max": MAX_BATCH}),
            )
        }
        Ok(items) if !items.is_empty() => items.into_iter().map(|r| r.get().to_owned()).collect(),
        _ => vec![String::from_utf8_lossy(&body).into_owned()],
    };
    let batch = frames.len() > 1 || body.trim_ascii_start().first() == Some(&b'[');

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
            let mut answers = Vec::new();
            for frame in frames {
                if let Some(a) = call(&mut stack, frame).await {
                    answers.push(a);
                }
            }
            respond(answers, batch)
        }
    };
    conn.input_closed.cancel();
    conn.peer_requests.close();
    conn.closed.cancel();
    tracing::info!(event = "connection_closed", conn = conn.id, peer = %conn.peer.label, principal_id = %conn.principal_id());
    drop(guard);
    answer
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// The token of `Authorization: Bearer <token>`, if there is one.
fn bearer(headers: &HeaderMap) -> Option<String> {
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

/// `200` with the answer (an array for an array), `204` when every element
/// was a notification.
fn respond(answers: Vec<Vec<u8>>, batch: bool) -> Response {
    if answers.is_empty() {
        return StatusCode::NO_CONTENT.into_response();
    }
    let body = if batch {
        let mut b = Vec::with_capacity(answers.iter().map(|a| a.len() + 1).sum::<usize>() + 1);
        b.push(b'[');
        for (i, a) in answers.iter().enumerate() {
            if i > 0 {
                b.push(b',');
            }
            b.extend_from_slice(a.trim_ascii_end());
        }
        b.push(b']');
        b
    } else {
        answers.into_iter().next().unwrap_or_default()
    };
    bytes_response(StatusCode::OK, body)
}
