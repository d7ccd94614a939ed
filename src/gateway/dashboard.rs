//! The web dashboard's static files (`web/dashboard/`), embedded in the
//! binary at compile time: `GET /` is `index.html`, `GET /assets/<file>` the
//! rest. No file is read at run time and nothing is fetched from elsewhere.
//!
//! Every file is served `Cache-Control: no-cache` with a strong `ETag` (the
//! SHA-256 of its bytes), so a browser revalidates each load and gets `304`
//! while the binary is unchanged: the names carry no hash, so a cached copy
//! must never outlive an upgrade. The security headers every gateway answer
//! carries are added by `web_guard`.

use std::sync::OnceLock;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// One embedded file.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $file:literal, $type:expr) => {
        Asset {
            path: $path,
            content_type: $type,
            body: include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/web/dashboard/",
                $file
            )),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

const ASSETS: &[Asset] = &[
    asset!("/", "index.html", "text/html; charset=utf-8"),
    asset!("/assets/style.css", "style.css", "text/css; charset=utf-8"),
    asset!("/assets/favicon.svg", "favicon.svg", "image/svg+xml"),
    asset!("/assets/app.js", "app.js", JS),
    asset!("/assets/approvals.js", "approvals.js", JS),
    asset!("/assets/dom.js", "dom.js", JS),
    asset!("/assets/forms.js", "forms.js", JS),
    asset!("/assets/logs.js", "logs.js", JS),
    asset!("/assets/pairing.js", "pairing.js", JS),
    asset!("/assets/rpc.js", "rpc.js", JS),
    asset!("/assets/sessions.js", "sessions.js", JS),
    asset!("/assets/transcript.js", "transcript.js", JS),
    asset!("/assets/turn.js", "turn.js", JS),
];

/// The `ETag` of each asset, in `ASSETS` order: `"<sha256 hex>"`.
fn etags() -> &'static [String] {
    static ETAGS: OnceLock<Vec<String>> = OnceLock::new();
    ETAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| format!("\"{}\"", crate::hex::sha256(a.body)))
            .collect()
    })
}

/// `GET /` and `GET /assets/<file>`: the file, `304` when `If-None-Match`
/// names its tag, `404` for a name that is not embedded.
pub(super) async fn serve(uri: Uri, headers: HeaderMap) -> Response {
    let Some(i) = ASSETS.iter().position(|a| a.path == uri.path()) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let (asset, etag) = (&ASSETS[i], &etags()[i]);
    let fresh = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            let t = t.trim();
            t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag
        });
    let mut r = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (StatusCode::OK, asset.body).into_response()
    };
    let h = r.headers_mut();
    if !fresh {
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(asset.content_type),
        );
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    r
}

/// The paths served, for the router.
pub(super) fn paths() -> impl Iterator<Item = &'static str> {
    ASSETS.iter().map(|a| a.path)
}
