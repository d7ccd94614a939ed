//! The method services, one file per method family, and the router that
//! picks one by the method's table row: the row's [`Method`] names the
//! family and, inside it, the family's own sub-enum, which the family's
//! `route` matches exhaustively. Each handler decodes its method's params
//! struct and calls one domain verb.
//!
//! Every service answers with a [`ReplyFuture`]: methods that finish at
//! once (`status`, `config/get`) return it ready, so the connection loop
//! answers them without spawning or allocating a future; the others box
//! their future. Both shapes are `Unpin`, so the whole stack's future is.
//! A panic inside a handler becomes `-32603` for that request only.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::Service;

use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::jsonrpc::{panicked, Payload, ReplyFuture};
use crate::methods::Method;
use crate::request::Request;
use crate::state::Daemon;

pub mod additions;
pub mod config;
pub mod debug;
pub mod file;
pub mod initialize;
pub mod pairing;
pub mod session;
pub mod status;

/// Method name → service.
#[allow(missing_debug_implementations)]
pub struct Router {
    initialize: initialize::Initialize,
    status: status::Status,
    config: config::ConfigService,
    pairing: pairing::PairingService,
    session: session::SessionService,
    debug: debug::DebugService,
    file: file::FileService,
    additions: additions::AdditionsService,
}

impl Router {
    /// The services of one connection.
    pub fn new(daemon: &Arc<Daemon>, conn: &Conn) -> Self {
        Self {
            initialize: initialize::Initialize::new(daemon.clone(), conn.clone()),
            status: status::Status::new(daemon.clone()),
            config: config::ConfigService::new(daemon.clone(), conn.clone()),
            pairing: pairing::PairingService::new(daemon.clone(), conn.clone()),
            session: session::SessionService::new(daemon.clone(), conn.clone()),
            debug: debug::DebugService::new(daemon.clone()),
            file: file::FileService::new(daemon.clone(), conn.clone()),
            additions: additions::AdditionsService::new(daemon.clone(), conn.clone()),
        }
    }

    /// Every family has exactly one arm, and each family matches its own
    /// sub-enum exhaustively: a new row in the method table does not compile
    /// until it is routed, and cannot reach another family.
    fn route(&mut self, req: Request) -> ReplyFuture {
        match req.method.id {
            Method::Initialize(m) => self.initialize.route(req, m),
            Method::Status(m) => self.status.route(req, m),
            Method::Config(m) => self.config.route(req, m),
            Method::Pairing(m) => self.pairing.route(req, m),
            Method::Session(m) => self.session.route(req, m),
            Method::File(m) => self.file.route(req, m),
            Method::Additions(m) => self.additions.route(req, m),
            Method::Debug(m) => self.debug.route(req, m),
        }
    }
}

impl Service<Request> for Router {
    type Response = Payload;
    type Error = RpcError;
    type Future = ReplyFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RpcError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> ReplyFuture {
        catch_unwind(AssertUnwindSafe(|| self.route(req))).unwrap_or_else(|_| {
            tracing::error!(event = "handler_panicked");
            ReplyFuture::reject(panicked())
        })
    }
}
