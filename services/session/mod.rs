//! `session/*` (SPEC §8.3–§8.12): one service for the family, one file per
//! concern. Handlers decode and check params here; the lifecycle and the
//! turns live in `crate::session`.

use std::sync::Arc;

use serde::Deserialize;

use super::RouteFuture;
use crate::context::Conn;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::request::Request;
pub(crate) use crate::session::parse_session_id as session_id;
use crate::state::Daemon;

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
        match req.method.name {
            "session/new" => RouteFuture::boxed(open::new(d, c, req)),
            "session/prompt" => RouteFuture::boxed(open::prompt(d, c, req)),
            "session/cancel" => RouteFuture::ready(control::cancel(&d, &req)),
            "session/approve" => RouteFuture::ready(control::approve(&d, &req)),
            "session/close" => RouteFuture::boxed(control::close(d, c, req)),
            "session/kill" => RouteFuture::boxed(control::kill(d, c, req)),
            "session/delete" => RouteFuture::boxed(control::delete(d, c, req)),
            "session/list" => RouteFuture::boxed(read::list(d, req)),
            "session/list-acp" => RouteFuture::boxed(read::list_acp(d, req)),
            _ => RouteFuture::boxed(read::messages(d, req)),
        }
    }
}
