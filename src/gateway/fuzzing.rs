//! Entry points for the fuzz target `gateway_http` (`fuzz/`), not an API:
//! the parts of an HTTP request that the gateway reads itself, before or
//! beside hyper and axum, are private to the gateway; these thin wrappers
//! make exactly that code callable from the fuzz crate, which is another
//! crate and sees only `pub` items. Nothing in the daemon calls them.

use axum::http::HeaderMap;

use crate::config::GatewayConfig;

pub use super::source::Source;

/// The `Host` check of the web guard built from `g` as at startup.
pub fn host_allowed(tls: bool, g: &GatewayConfig, host: &str) -> bool {
    super::web_guard::WebGuard::new(tls, g).host_allowed(host)
}

/// The `Origin` check of the web guard built from `g` as at startup.
pub fn origin_allowed(tls: bool, g: &GatewayConfig, origin: &str, host: Option<&str>) -> bool {
    super::web_guard::WebGuard::new(tls, g).origin_allowed(origin, host)
}

/// The host part of a `Host` value, as the guard takes it.
pub fn host_name(host: &str) -> &str {
    super::web_guard::host_name(host)
}

/// The token of `Authorization: Bearer <token>` as `POST /rpc` reads it.
pub fn bearer(headers: &HeaderMap) -> Option<String> {
    super::rpc_http::bearer(headers)
}

/// Whether `POST /rpc` takes the body as JSON (its `Content-Type`).
pub fn is_json(headers: &HeaderMap) -> bool {
    super::rpc_http::is_json(headers)
}

/// `POST /rpc`'s split of a body into frames, and whether the reply is an array.
pub fn split_body(body: &[u8]) -> Option<(Vec<String>, bool)> {
    super::rpc_http::split_body(body)
}
