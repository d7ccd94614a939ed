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
//! | `mod.rs` | settings, binding, the accept loop, and each HTTP connection's time limits |
//! | `tls.rs` | loading `gateway.tls_cert` / `gateway.tls_key` into a rustls acceptor |
//! | `routes.rs` | the axum router: `GET /ws`, `POST /pair`, `POST /rpc`, the dashboard |
//! | `web_guard.rs` | the Host (DNS rebinding) and Origin checks, the security headers |
//! | `dashboard.rs` | the dashboard's files, embedded, with ETags |
//! | `rpc_http.rs` | `POST /rpc`: JSON-RPC over plain HTTP with a bearer token |
//! | `http_json.rs` | JSON answers of the HTTP routes |
//! | `pairing.rs` | the one-time code's redemption and the per-source lockout |
//! | `source.rs` | who a connection counts as for per-source limits (loopback is one) |
//! | `admission.rs` | the bounds on connections without a credential, per source and in total, and eviction |
//! | `ws_connection.rs` | one WebSocket connection on the shared driver: reading, the heartbeat, closing |
//! | `ws_writer.rs` | the connection's write queue drained into WebSocket messages |
//! | `fuzzing.rs` | entry points for the fuzz target `gateway_http` only (not an API) |
//!
//! Lifecycle: [`start`] binds after the local endpoint is claimed (a bind
//! failure is a startup failure naming the address) and spawns the accept
//! loop. The loop and every connection still in its handshake stop when
//! `Daemon::stop` is cancelled; open sessions close with the local
//! connections when `Daemon::shutdown` is, after running turns have ended.

mod admission;
mod dashboard;
#[doc(hidden)]
pub mod fuzzing;
mod http_json;
mod pairing;
mod routes;
mod rpc_http;
mod source;
mod tls;
mod web_guard;
mod ws_connection;
mod ws_writer;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use admission::{Admission, Bounds, Ticket};
use source::Source;

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

/// The gateway's timings and bounds. [`Settings::default`] is §12 and
/// docs/security.md; tests start a gateway with shorter intervals (no
/// config key changes them).
#[derive(Debug, Clone)]
pub struct Settings {
    /// A Ping is sent after this long without an incoming message (20 s).
    pub ping_after: Duration,
    /// After the Ping, the session is closed if nothing arrives within this (10 s).
    pub close_after: Duration,
    /// The TLS handshake must finish within this of accept; each request
    /// head must arrive within this, counted from the end of the previous
    /// answer, which also closes a connection idle that long (10 s).
    pub head_timeout: Duration,
    /// A request body must arrive within this of its head (30 s).
    pub body_timeout: Duration,
    /// A WebSocket session must bind a token (`initialize`) within this of
    /// the upgrade, or it is closed (5 s).
    pub bind_timeout: Duration,
    /// HTTP connections without a credential yet: in total (256) and per source (64).
    pub max_handshakes: usize,
    pub max_handshakes_per_source: usize,
    /// Open WebSocket sessions (512).
    pub max_sessions: usize,
    /// WebSocket sessions not bound yet: in total (128) and per source (32).
    pub max_unbound_sessions: usize,
    pub max_unbound_sessions_per_source: usize,
    /// Failed `/pair` attempts from one source before it is locked out (5).
    pub max_pairing_failures: u32,
    /// How long a locked-out source is refused (300 s).
    pub pairing_lockout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            ping_after: Duration::from_secs(20),
            close_after: Duration::from_secs(10),
            head_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            bind_timeout: Duration::from_secs(5),
            max_handshakes: 256,
            max_handshakes_per_source: 64,
            max_sessions: 512,
            max_unbound_sessions: 128,
            max_unbound_sessions_per_source: 32,
            max_pairing_failures: 5,
            pairing_lockout: Duration::from_secs(300),
        }
    }
}

impl Settings {
    fn bounds(&self) -> Bounds {
        Bounds {
            connections: self.max_handshakes,
            connections_per_source: self.max_handshakes_per_source,
            sessions: self.max_sessions,
            unbound_sessions: self.max_unbound_sessions,
            unbound_sessions_per_source: self.max_unbound_sessions_per_source,
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
    /// The places of connections and sessions, per source and in total.
    admission: Arc<Admission>,
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
        admission: Admission::new(settings.bounds()),
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

/// Accepts until the daemon stops. Every connection gets in: over a
/// bound, admission evicts an older one without a credential instead.
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
        let ticket = Arc::new(shared.admission.admit_connection(Source::of(addr.ip())));
        let _ = tcp.set_nodelay(true);
        tokio::spawn(connection(
            shared.clone(),
            router.clone(),
            tcp,
            addr,
            ticket,
            tls.clone(),
        ));
    }
    tracing::info!(event = "gateway_stopped");
}

/// The peer label of a WebSocket client (§2.5): `wss:<ip>:<port>`, an IPv6
/// address in brackets.
pub fn peer_label(addr: SocketAddr) -> String {
    format!("wss:{addr}")
}

/// One HTTP connection: TLS when configured, then HTTP/1.1 until the
/// connection is upgraded, closed, idle past the head timeout, or evicted.
/// Its place in admission is given back when it ends; an upgraded session
/// runs on in the task the upgrade spawned, with a place of its own.
async fn connection(
    shared: Arc<Shared>,
    router: axum::Router,
    tcp: TcpStream,
    addr: SocketAddr,
    ticket: Arc<Ticket>,
    tls: Option<TlsAcceptor>,
) {
    let evicted = ticket.evicted().clone();
    let stop = shared.daemon.stop.clone();
    let work = async {
        match tls {
            Some(acceptor) => {
                let accepted =
                    tokio::time::timeout(shared.settings.head_timeout, acceptor.accept(tcp)).await;
                match accepted {
                    Ok(Ok(stream)) => serve_http(&shared, router, stream, addr, ticket).await,
                    Ok(Err(e)) => {
                        tracing::debug!(peer = %peer_label(addr), error = %e, "TLS handshake failed")
                    }
                    Err(_) => {
                        tracing::info!(event = "handshake_timeout", peer = %peer_label(addr));
                    }
                }
            }
            None => serve_http(&shared, router, tcp, addr, ticket).await,
        }
    };
    tokio::select! {
        _ = work => {}
        _ = evicted.cancelled() => {}
        // `serve_http` closes gracefully on stop; this only bounds the TLS step.
        _ = async { stop.cancelled().await; tokio::time::sleep(STOP_GRACE).await } => {}
    }
}

/// How long a connection may finish its answer once the daemon stops.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Serves HTTP/1.1 on one connection until it is upgraded or closed. A
/// request head must arrive within `head_timeout` of the previous answer
/// (the slowloris defence, and the idle limit of a kept-alive connection);
/// a busy connection is never cut by its age. When the daemon stops, the
/// answer in progress is finished with `Connection: close`.
async fn serve_http<IO>(
    shared: &Shared,
    router: axum::Router,
    io: IO,
    addr: SocketAddr,
    ticket: Arc<Ticket>,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = tower::service_fn(
        move |mut req: axum::extract::Request<hyper::body::Incoming>| {
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(addr));
            req.extensions_mut().insert(ticket.clone());
            tower::ServiceExt::oneshot(router.clone(), req)
        },
    );
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(shared.settings.head_timeout);
    let served = builder
        .serve_connection(TokioIo::new(io), TowerToHyperService::new(service))
        .with_upgrades();
    let mut served = std::pin::pin!(served);
    let result = tokio::select! {
        r = served.as_mut() => r,
        _ = shared.daemon.stop.cancelled() => {
            served.as_mut().graceful_shutdown();
            match tokio::time::timeout(STOP_GRACE, served.as_mut()).await {
                Ok(r) => r,
                Err(_) => Ok(()),
            }
        }
    };
    if let Err(e) = result {
        if e.is_timeout() {
            tracing::debug!(peer = %peer_label(addr), "HTTP connection idle or slow past the head timeout: closed");
        } else {
            tracing::debug!(peer = %peer_label(addr), error = %e, "HTTP connection failed");
        }
    }
}
