//! `session/*` (§8.3–§8.12): one service for the family, one file per
//! concern. Handlers decode params here and call one domain verb; the
//! lifecycle and the turns live in `crate::session`, and `session/prompt`'s
//! checks in `Daemon::prompt` (`crate::state`), which also stores its files.

use std::sync::Arc;

use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::jsonrpc::ReplyFuture;
use crate::methods::SessionMethod;
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

fn payload<T: serde::Serialize>(v: &T) -> Result<Payload, RpcError> {
    Payload::new(v, Default::default())
}

impl SessionService {
    pub(super) fn route(&mut self, req: Request, m: SessionMethod) -> ReplyFuture {
        let (d, c) = (self.daemon.clone(), self.conn.clone());
        match m {
            SessionMethod::New => ReplyFuture::boxed(open::new(d, c, req)),
            SessionMethod::Prompt => ReplyFuture::boxed(open::prompt(d, c, req)),
            SessionMethod::Cancel => ReplyFuture::ready(control::cancel(&d, &req)),
            SessionMethod::Approve => ReplyFuture::ready(control::approve(&d, &req)),
            SessionMethod::Close => ReplyFuture::boxed(control::close(d, c, req)),
            SessionMethod::Kill => ReplyFuture::boxed(control::kill(d, c, req)),
            SessionMethod::Delete => ReplyFuture::boxed(control::delete(d, c, req)),
            SessionMethod::Attach => ReplyFuture::boxed(attach::attach(d, c, req)),
            SessionMethod::List => ReplyFuture::boxed(read::list(d, req)),
            SessionMethod::ListAcp => ReplyFuture::boxed(read::list_acp(d, req)),
            SessionMethod::Messages => ReplyFuture::boxed(read::messages(d, req)),
        }
    }
}
