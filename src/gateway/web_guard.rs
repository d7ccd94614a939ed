//! The rules that make the gateway safe to expose to a browser
//! (docs/gateway.md, "Security of the local web surface"):
//!
//! - **Host** (DNS rebinding): a request whose `Host` names a host other
//!   than an IP literal, `localhost`, the configured `gateway.host` or an
//!   entry of `gateway.allowed_hosts` is answered `421` before any route.
//!   A rebinding page reaches us under its own DNS name, so its `Host` is
//!   that name; an IP literal cannot be rebound.
//! - **Origin** (cross-site pages): a request that carries `Origin` must come
//!   from the gateway's own origin, `<scheme>://<Host>` of that request, or
//!   one listed in `gateway.allowed_origins`; else `403`. This covers the
//!   WebSocket upgrade, which browsers never subject to CORS. A request
//!   without `Origin` is not from a cross-site page (browsers send it on
//!   every cross-origin request and on upgrades) and passes.
//! - **Headers** on every answer: a strict Content-Security-Policy, `nosniff`
//!   and `no-referrer`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;

use super::http_json::json_response;

/// The dashboard's policy: only its own files, its own WebSocket, no frames,
/// no `<base>`, forms to itself only.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// What the checks compare against, fixed at startup.
#[derive(Debug, Clone)]
pub(super) struct WebGuard {
    /// `https` with TLS, else `http`.
    pub scheme: &'static str,
    /// `gateway.host`, lowercase.
    pub host: String,
    /// `gateway.allowed_hosts`, lowercase host names.
    pub allowed_hosts: Vec<String>,
    /// `gateway.allowed_origins`, lowercase, without a trailing `/`.
    pub allowed_origins: Vec<String>,
}

impl WebGuard {
    pub fn new(tls: bool, g: &crate::config::schema::GatewayConfig) -> Self {
        Self {
            scheme: if tls { "https" } else { "http" },
            host: g.host.to_ascii_lowercase(),
            allowed_hosts: g
                .allowed_hosts
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            allowed_origins: g.allowed_origins.iter().map(|o| normal_origin(o)).collect(),
        }
    }

    /// Whether a `Host` header value may be served.
    pub fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host).to_ascii_lowercase();
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        bare.parse::<std::net::IpAddr>().is_ok()
            || name == "localhost"
            || name == self.host
            || self.allowed_hosts.contains(&name)
    }

    /// Whether a request with this `Origin` (and `Host`) may be served.
    pub fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        let origin = normal_origin(origin);
        host.is_some_and(|h| origin == format!("{}://{}", self.scheme, h.to_ascii_lowercase()))
            || self.allowed_origins.contains(&origin)
    }
}

/// The host part of a `Host` value: `[::1]:80` → `[::1]`, `a.b:80` → `a.b`.
pub(super) fn host_name(host: &str) -> &str {
    match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => &host[..i],
        _ => host,
    }
}

fn normal_origin(o: &str) -> String {
    o.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// Checks `Host` and `Origin`, then adds the security headers to the answer.
pub(super) async fn guard(
    State(guard): State<Arc<WebGuard>>,
    req: Request,
    next: Next,
) -> Response {
    let headers = req.headers();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let mut r = if host.is_some_and(|h| !guard.host_allowed(h)) || bad_header(headers, header::HOST)
    {
        tracing::info!(event = "http_refused", reason = "host", path = %req.uri().path());
        json_response(
            StatusCode::MISDIRECTED_REQUEST,
            json!({"error": "host_not_allowed"}),
        )
    } else if let Some(origin) = headers.get(header::ORIGIN) {
        match origin.to_str() {
            Ok(o) if guard.origin_allowed(o, host) => next.run(req).await,
            _ => {
                tracing::info!(event = "http_refused", reason = "origin", path = %req.uri().path());
                json_response(
                    StatusCode::FORBIDDEN,
                    json!({"error": "origin_not_allowed"}),
                )
            }
        }
    } else {
        next.run(req).await
    };
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

/// A header present but not readable text, or present twice: refused like a wrong one.
fn bad_header(headers: &HeaderMap, name: header::HeaderName) -> bool {
    let mut all = headers.get_all(name).iter();
    match (all.next(), all.next()) {
        (Some(v), None) => v.to_str().is_err(),
        (None, None) => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(host: &str, hosts: &[&str], origins: &[&str]) -> WebGuard {
        let g = crate::config::schema::GatewayConfig {
            host: host.into(),
            allowed_hosts: hosts.iter().map(|s| s.to_string()).collect(),
            allowed_origins: origins.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        WebGuard::new(false, &g)
    }

    #[test]
    fn hosts_ip_literals_localhost_the_configured_name_and_the_list() {
        let g = guard("0.0.0.0", &["Box.Lan"], &[]);
        for ok in [
            "127.0.0.1:42617",
            "[::1]:42617",
            "10.0.0.5",
            "localhost:1",
            "LOCALHOST",
            "box.lan:42617",
            "0.0.0.0:1",
        ] {
            assert!(g.host_allowed(ok), "{ok}");
        }
        for bad in [
            "evil.example:42617",
            "localhost.evil.example",
            "box.lan.evil",
            "127.0.0.1.nip.io:42617",
        ] {
            assert!(!g.host_allowed(bad), "{bad}");
        }
        assert!(guard("myhost", &[], &[]).host_allowed("MyHost:9"));
    }

    #[test]
    fn origins_are_the_request_s_own_or_listed() {
        let g = guard("127.0.0.1", &[], &["https://Tools.Example/"]);
        let host = Some("127.0.0.1:42617");
        assert!(g.origin_allowed("http://127.0.0.1:42617", host));
        assert!(g.origin_allowed("https://tools.example", host));
        for bad in [
            "http://127.0.0.1:1",
            "https://127.0.0.1:42617",
            "null",
            "http://evil.example",
            "http://localhost:42617",
        ] {
            assert!(!g.origin_allowed(bad, host), "{bad}");
        }
        assert!(!g.origin_allowed("http://127.0.0.1:42617", None));
    }
}
