//! `session/*` (§8.3–§8.12): one service for the family, one file per
//! concern. Handlers decode and check params here; the lifecycle and the
//! turns live in `crate::session`.

use std::sync::Arc;

use serde::Deserialize;

use super::RouteFuture;
use crate::context::Conn;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::methods::Method;
use crate::request::Request;
pub(crate) use crate::session::parse_session_id as session_id;
use crate::state::Daemon;

mod attach;
mod control;
mod open;
mod read;

/// The `session/*` service of one connection.
#[derive(Debug)]
pub struct SessionService {
    daemon: Arc<Daemon>,
    conn: Conn,
}

impl SessionService {
    /// `session/*` for `conn`.
    pub fn new(daemon: Arc<Daemon>, conn: Conn) -> Self {
        Self { daemon, conn }
    }
}

/// Params that name one session.
#[derive(Debug, Deserialize)]
struct SessionRef {
    session_id: Option<String>,
}

fn payload<T: serde::Serialize>(v: &T) -> Result<Payload, RpcError> {
    Payload::new(v, Default::default())
}

method_family!(SessionService);

impl SessionService {
    fn route(&mut self, req: Request) -> RouteFuture {
        let (d, c) = (self.daemon.clone(), self.conn.clone());
        match req.method.id {
            Method::SessionNew => RouteFuture::boxed(open::new(d, c, req)),
            Method::SessionPrompt => RouteFuture::boxed(open::prompt(d, c, req)),
            Method::SessionCancel => RouteFuture::ready(control::cancel(&d, &req)),
            Method::SessionApprove => RouteFuture::ready(control::approve(&d, &req)),
            Method::SessionClose => {
                RouteFuture::boxed(control::end(d, c, req, control::Ending::Close))
            }
            Method::SessionKill => {
                RouteFuture::boxed(control::end(d, c, req, control::Ending::Kill))
            }
            Method::SessionDelete => {
                RouteFuture::boxed(control::end(d, c, req, control::Ending::Delete))
            }
            Method::SessionAttach => RouteFuture::boxed(attach::attach(d, c, req)),
            Method::SessionList => RouteFuture::boxed(read::list(d, req)),
            Method::SessionListAcp => RouteFuture::boxed(read::list_acp(d, req)),
            Method::SessionMessages => RouteFuture::boxed(read::messages(d, req)),
            _ => crate::services::misrouted(&req),
        }
    }
}
