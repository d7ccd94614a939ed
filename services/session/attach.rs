//! `session/attach` (protocol addition): a connection joins a
//! live session as a further client without replacing it.

use std::sync::Arc;

use serde::Deserialize;

use super::{payload, session_id};
use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::request::Request;
use crate::session::attach;
use crate::state::Daemon;

#[derive(Deserialize)]
struct AttachParams {
    session_id: Option<String>,
    /// Accepted and type-checked; the transcript so far is `session/messages`
    /// (docs/protocol-additions.md), so nothing is replayed here.
    #[allow(dead_code)]
    replay: Option<bool>,
}

pub(super) async fn attach(
    daemon: Arc<Daemon>,
    conn: Conn,
    req: Request,
) -> Result<Payload, RpcError> {
    let p: AttachParams = req.params()?;
    let id = session_id(p.session_id)?;
    let principal = req.binding()?.principal.clone();
    let result = attach::attach(&daemon.sessions, &conn, &principal, &id).await?;
    payload(&result)
}
