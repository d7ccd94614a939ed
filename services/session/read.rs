//! `session/list`, `session/list-acp`, `session/messages` (§8.10, §8.11).
//! Non-admins see only the sessions they own.

use std::sync::Arc;

use serde::Deserialize;

use super::{payload, session_id};
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::request::Request;
use crate::session::listing::{ListWanted, MAX_LIST};
use crate::session::transcript::PageWanted;
use crate::session::ChatMode;
use crate::state::Daemon;

fn limit(v: Option<u32>, default: u32) -> Result<u32, RpcError> {
    match v.unwrap_or(default) {
        n @ 1..=MAX_LIST => Ok(n),
        _ => Err(RpcError::invalid_params(format!(
            "limit must be 1..={MAX_LIST}"
        ))),
    }
}

#[derive(Deserialize)]
struct ListParams {
    chat_mode: Option<ChatMode>,
    include_killed: Option<bool>,
    limit: Option<u32>,
}

pub(super) async fn list(daemon: Arc<Daemon>, req: Request) -> Result<Payload, RpcError> {
    let p: ListParams = req.params()?;
    let wanted = ListWanted {
        chat_mode: p.chat_mode,
        include_killed: p.include_killed.unwrap_or(false),
        limit: limit(p.limit, 100)?,
    };
    let principal = &req.binding()?.principal;
    let entries = daemon.sessions.list(principal, wanted).await?;
    payload(&serde_json::json!({ "sessions": entries }))
}

/// `session/list-acp` takes no params: only an object (or nothing).
#[derive(Deserialize)]
struct ListAcpParams {}

pub(super) async fn list_acp(daemon: Arc<Daemon>, req: Request) -> Result<Payload, RpcError> {
    let ListAcpParams {} = req.params()?;
    let principal = &req.binding()?.principal;
    let entries = daemon.sessions.list_durable(principal).await?;
    payload(&serde_json::json!({ "sessions": entries }))
}

#[derive(Deserialize)]
struct MessagesParams {
    session_id: Option<String>,
    chat_mode: Option<ChatMode>,
    limit: Option<u32>,
    before_index: Option<u64>,
}

pub(super) async fn messages(daemon: Arc<Daemon>, req: Request) -> Result<Payload, RpcError> {
    let p: MessagesParams = req.params()?;
    let id = session_id(p.session_id)?;
    let wanted = PageWanted {
        chat_mode: p.chat_mode,
        before_index: p.before_index,
        limit: limit(p.limit, 200)?,
    };
    let principal = &req.binding()?.principal;
    payload(&daemon.sessions.transcript(principal, &id, wanted).await?)
}
