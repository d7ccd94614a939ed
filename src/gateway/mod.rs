//! The HTTP/WebSocket gateway (§12): `GET /ws` carries the same
//! JSON-RPC methods as the local endpoint, one message per WebSocket text
//! message; `POST /pair` redeems the one-time pairing code for a token;
//! `POST /rpc` answers requests over plain HTTP; `GET /` is the dashboard.
//!
//! The gateway owns only what is WebSocket-specific: admission, TLS, the
//! HTTP routes, message framing and the heartbeat. Every JSON-RPC rule,
//! method and layer is the local endpoint's own: each session is served by
//! the connection driver (`connection::driver`) with a WebSocket wire,
//! with a `ConnCtx` whose transport is `Transport::Wss` (which is how
//! `initialize`, the transport gate and `file/attach` know where they are).
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | settings, binding, the accept loop, admission and the handshake deadline |
//! | `tls.rs` | loading `gateway.tls_cert` / `gateway.tls_key` into a rustls acceptor |
//! | `routes.rs` | the axum router: `GET /ws`, `POST /pair`, `POST /rpc`, the dashboard |
//! | `web_guard.rs` | the Host (DNS rebinding) and Origin checks, the security headers |
//! | `dashboard.rs` | the dashboard's files, embedded, with ETags |
//! | `rpc_http.rs` | `POST /rpc`: JSON-RPC over plain HTTP with a bearer token |
//! | `http_json.rs` | JSON answers of the HTTP routes |
//! | `pairing.rs` | the one-time code, its redemption and the per-IP lockout |
//! | `ws_connection.rs` | one WebSocket connection on the shared driver: reading, the heartbeat, closing |
//! | `ws_writer.rs` | the connection's write queue drained into WebSocket messages |
//!
//! Lifecycle: [`start`] binds after the local endpoint is claimed (a bind
//! failure is a startup failure naming the address) and spawns the accept
//! loop. The loop and every connection still in its handshake stop when
//! `Daemon::stop` is cancelled; open sessions close with the local
//! connections when `Daemon::shutdown` is, after running turns have ended.

mod dashboard;
mod http_json;
mod pairing;
mod routes;
mod rpc_http;
mod tls;
mod web_guard;
mod ws_connection;
mod ws_writer;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;

use crate::limits::{ACCEPT_BACKOFF, MAX_FRAME_BYTES};
use crate::state::Daemon;

pub use pairing::PAIRING_CODE_HEADER;
pub use rpc_http::MAX_BATCH;
pub use web_guard::CONTENT_SECURITY_POLICY;

/// The largest WebSocket message (and frame) the gateway reads whole. A
/// message over 8 MiB but within this bound is answered with
/// `frame_too_large` and the session goes on, as on the local endpoint; a
/// larger one is answered and the session closed with code 1009, because
/// the WebSocket library cannot skip the rest of it (docs/gateway.md).
pub const WS_MESSAGE_LIMIT: usize = MAX_FRAME_BYTES + 1024 * 1024;

/// The gateway's timings and bounds. [`Settings::default`] is §12;
/// tests start a gateway with shorter intervals (no config key changes them).
#[derive(Debug, Clone)]
pub struct Settings {
    /// A Ping is sent after this long without an incoming message (20 s).
    pub ping_after: Duration,
    /// After the Ping, the session is closed if nothing arrives within this (10 s).
    pub close_after: Duration,
    /// TLS and the WebSocket upgrade must finish within this of accept (10 s).
    pub handshake_timeout: Duration,
    /// Connections in the handshake phase at once (256).
    pub max_handshakes: usize,
    /// Open WebSocket sessions (512).
    pub max_sessions: usize,
    /// Failed `/pair` attempts from one IP before it is locked out (5).
    pub max_pairing_failures: u32,
    /// How long a locked-out IP is refused (300 s).
    pub pairing_lockout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            ping_after: Duration::from_secs(20),
            close_after: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(10),
            max_handshakes: 256,
            max_sessions: 512,
            max_pairing_failures: 5,
            pairing_lockout: Duration::from_secs(300),
        }
    }
}

/// Why the gateway could not start (a startup failure, exit status 1).
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The listening socket could not be bound.
    #[error("gateway: cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    /// `gateway.tls_cert` / `gateway.tls_key` are unusable.
    #[error("gateway: {0}")]
    Tls(String),
    /// No randomness for the pairing code.
    #[error("gateway: {0}")]
    Pairing(String),
}

/// A running gateway.
#[derive(Debug)]
pub struct Gateway {
    /// The address it listens on (with the port the OS chose for port 0).
    pub local_addr: SocketAddr,
    /// Whether connections start with a TLS handshake.
    pub tls: bool,
}

/// What every connection of one gateway shares.
#[derive(Debug)]
struct Shared {
    daemon: Arc<Daemon>,
    settings: Settings,
    /// Permits for connections in the handshake phase.
    handshakes: Arc<Semaphore>,
    /// Permits for open WebSocket sessions.
    sessions: Arc<Semaphore>,
    pairing: pairing::Pairing,
    /// The Host and Origin rules of this gateway's web surface.
    web: Arc<web_guard::WebGuard>,
}

/// Binds `gateway.host:gateway.port`, logs the pairing code when one is
/// needed, and serves until the daemon stops.
pub async fn start(daemon: &Arc<Daemon>, settings: Settings) -> Result<Gateway, GatewayError> {
    let config = daemon.config.current();
    let g = &config.gateway;
    let tls = tls::acceptor(
        &daemon.paths.config_dir,
        g.tls_cert.as_deref(),
        g.tls_key.as_deref(),
    )?;
    let addr = if g.host.contains(':') {
        format!("[{}]:{}", g.host, g.port)
    } else {
        format!("{}:{}", g.host, g.port)
    };
    let bind_error = |source| GatewayError::Bind {
        addr: addr.clone(),
        source,
    };
    let listener = TcpListener::bind((g.host.as_str(), g.port))
        .await
        .map_err(bind_error)?;
    let local_addr = listener.local_addr().map_err(bind_error)?;
    // A code exists only while it is needed: pairing required and nothing paired yet.
    if g.require_pairing && g.paired_tokens.is_empty() {
        let code = daemon
            .pairing_code
            .issue()
            .await
            .map_err(|e| GatewayError::Pairing(e.to_string()))?;
        tracing::info!(
            event = "pairing_code",
            code = %code,
            "POST /pair with header {PAIRING_CODE_HEADER}: {code} to obtain a token (single use)"
        );
    }
    tracing::info!(event = "gateway_listening", address = %local_addr, tls = tls.is_some());
    let shared = Arc::new(Shared {
        daemon: daemon.clone(),
        handshakes: Arc::new(Semaphore::new(settings.max_handshakes)),
        sessions: Arc::new(Semaphore::new(settings.max_sessions)),
        pairing: pairing::Pairing::new(settings.max_pairing_failures, settings.pairing_lockout),
        settings,
        web: Arc::new(web_guard::WebGuard::new(tls.is_some(), g)),
    });
    let gateway = Gateway {
        local_addr,
        tls: tls.is_some(),
    };
    tokio::spawn(accept_loop(shared, listener, tls));
    Ok(gateway)
}

/// Accepts until the daemon stops; turns away what admission refuses.
async fn accept_loop(shared: Arc<Shared>, listener: TcpListener, tls: Option<TlsAcceptor>) {
    let router = routes::router(shared.clone());
    loop {
        let accepted = tokio::select! {
            _ = shared.daemon.stop.cancelled() => break,
            a = listener.accept() => a,
        };
        let (tcp, addr) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Nothing an accept error says makes the local endpoint less useful:
                // log, back off, go on.
                tracing::warn!(event = "gateway_accept_failed", error = %e);
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let Some(permit) = admit(&shared, addr) else {
            drop(tcp);
            continue;
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(handshake(
            shared.clone(),
            router.clone(),
            tcp,
            addr,
            permit,
            tls.clone(),
        ));
    }
    tracing::info!(event = "gateway_stopped");
}

/// Admission at accept (§12): a handshake permit, and room for one more session.
fn admit(shared: &Shared, addr: SocketAddr) -> Option<OwnedSemaphorePermit> {
    let reason = if shared.sessions.available_permits() == 0 {
        "websocket_sessions"
    } else {
        match shared.handshakes.clone().try_acquire_owned() {
            Ok(permit) => return Some(permit),
            Err(_) => "handshakes",
        }
    };
    tracing::info!(event = "connection_rejected", peer = %peer_label(addr), reason);
    None
}

/// The peer label of a WebSocket client (§2.5): `wss:<ip>:<port>`, an IPv6
/// address in brackets.
pub fn peer_label(addr: SocketAddr) -> String {
    format!("wss:{addr}")
}

/// The handshake phase of one connection: TLS when configured, then HTTP
/// until the connection is upgraded or ends, all within the deadline. The
/// permit is released when the phase ends; an upgraded session runs on in
/// the task the upgrade spawned.
async fn handshake(
    shared: Arc<Shared>,
    router: axum::Router,
    tcp: TcpStream,
    addr: SocketAddr,
    permit: OwnedSemaphorePermit,
    tls: Option<TlsAcceptor>,
) {
    let work = async {
        match tls {
            Some(acceptor) => match acceptor.accept(tcp).await {
                Ok(stream) => serve_http(router, stream, addr).await,
                Err(e) => {
                    tracing::debug!(peer = %peer_label(addr), error = %e, "TLS handshake failed")
                }
            },
            None => serve_http(router, tcp, addr).await,
        }
    };
    tokio::select! {
        _ = work => {}
        _ = tokio::time::sleep(shared.settings.handshake_timeout) => {
            tracing::info!(event = "handshake_timeout", peer = %peer_label(addr));
        }
        _ = shared.daemon.stop.cancelled() => {}
    }
    drop(permit);
}

/// Serves HTTP/1.1 on one connection; ends when it is upgraded or closed.
async fn serve_http<IO>(router: axum::Router, io: IO, addr: SocketAddr)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = tower::service_fn(
        move |mut req: axum::extract::Request<hyper::body::Incoming>| {
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(addr));
            tower::ServiceExt::oneshot(router.clone(), req)
        },
    );
    let served = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(io), TowerToHyperService::new(service))
        .with_upgrades()
        .await;
    if let Err(e) = served {
        tracing::debug!(peer = %peer_label(addr), error = %e, "HTTP connection failed");
    }
}
