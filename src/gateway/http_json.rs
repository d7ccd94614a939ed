//! The JSON answers of the gateway's HTTP routes (`/pair`, `/rpc`, the
//! refusals of `web_guard`): a body and `Content-Type: application/json`.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// `status` with `body` as JSON.
pub(super) fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    bytes_response(status, body.to_string().into_bytes())
}

/// `status` with `body`, JSON text already (a trailing newline dropped).
pub(super) fn bytes_response(status: StatusCode, mut body: Vec<u8>) -> Response {
    while body.last() == Some(&b'\n') {
        body.pop();
    }
    let mut r = (status, Body::from(body)).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}
