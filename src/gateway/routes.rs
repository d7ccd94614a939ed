//! The gateway's HTTP routes (§12): `GET /ws` upgrades to a WebSocket
//! session, `POST /pair` redeems the pairing code, `POST /rpc` answers
//! JSON-RPC over plain HTTP (`rpc_http`), `GET /` and `GET /assets/…` serve
//! the dashboard (`dashboard`). Anything else is 404 (405 for a known path
//! with another method). Every request first passes the Host and Origin
//! checks of `web_guard`, which also adds the security headers.
//!
//! `/pair` answers JSON: `200 {"token":"zc_…"}`; `401
//! {"error":"invalid_pairing_code"}`; `403 {"error":"pairing_unavailable"}`
//! when no code can be redeemed; `429 {"error":"locked_out",
//! "retry_after_secs":N}` with `Retry-After`; `500 {"error":"internal",
//! "message":…}` when the commit failed.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;

use super::http_json::json_response;
use super::pairing::{PairOutcome, PAIRING_CODE_HEADER};
use super::source::Source;
use super::{dashboard, rpc_http, web_guard};
use super::{peer_label, ws_connection, Shared, WS_MESSAGE_LIMIT};

/// The WebSocket library's read buffer per session.
const WS_READ_BUFFER: usize = 16 * 1024;

/// The router of one gateway.
pub(super) fn router(shared: Arc<Shared>) -> Router {
    let guard = shared.web.clone();
    let mut router = Router::new()
        .route("/ws", get(upgrade))
        .route("/pair", post(pair))
        .route("/rpc", post(rpc_http::rpc));
    for path in dashboard::paths() {
        router = router.route(path, get(dashboard::serve));
    }
    router
        .with_state(shared)
        .layer(axum::middleware::from_fn_with_state(
            guard,
            web_guard::guard,
        ))
}

/// `GET /ws`: takes a session's place in admission, then upgrades. When
/// every place is held by a bound session the answer is 503.
async fn upgrade(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    ws: WebSocketUpgrade,
) -> Response {
    let Ok(ticket) = shared.admission.admit_session(Source::of(addr.ip())) else {
        tracing::info!(event = "connection_rejected", peer = %peer_label(addr), reason = "websocket_sessions");
        return json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"error": "too_many_sessions"}),
        );
    };
    // The read buffer is allocated up front (128 KiB by default): keep idle sessions small.
    ws.read_buffer_size(WS_READ_BUFFER)
        .max_message_size(WS_MESSAGE_LIMIT)
        .max_frame_size(WS_MESSAGE_LIMIT)
        .on_upgrade(move |socket| ws_connection::serve(shared, socket, addr, ticket))
}

/// `POST /pair` (§12).
async fn pair(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let given = headers
        .get(PAIRING_CODE_HEADER)
        .and_then(|v| v.to_str().ok());
    let peer = peer_label(addr);
    let source = Source::of(addr.ip());
    match shared.pairing.redeem(&shared.daemon, source, given).await {
        PairOutcome::Paired(token) => {
            tracing::info!(event = "pairing_redeemed", peer = %peer);
            json_response(StatusCode::OK, json!({ "token": token }))
        }
        PairOutcome::LockedOut(left) => {
            let secs = left.as_secs_f64().ceil() as u64;
            tracing::info!(event = "pairing_refused", peer = %peer, source = %source, reason = "locked_out");
            let mut r = json_response(
                StatusCode::TOO_MANY_REQUESTS,
                json!({"error": "locked_out", "retry_after_secs": secs}),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            r
        }
        PairOutcome::Unavailable => {
            tracing::info!(event = "pairing_refused", peer = %peer, source = %source, reason = "unavailable");
            json_response(
                StatusCode::FORBIDDEN,
                json!({"error": "pairing_unavailable"}),
            )
        }
        PairOutcome::Rejected => {
            tracing::info!(event = "pairing_refused", peer = %peer, source = %source, reason = "invalid_code");
            json_response(
                StatusCode::UNAUTHORIZED,
                json!({"error": "invalid_pairing_code"}),
            )
        }
        PairOutcome::Failed(e) => {
            tracing::warn!(event = "pairing_failed", peer = %peer, error = %e);
            json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"error": "internal", "message": e.to_string()}),
            )
        }
    }
}
