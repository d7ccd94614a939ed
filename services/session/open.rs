//! `session/new` and `session/prompt` (§8.3, §8.4).

use std::sync::Arc;

use serde::Deserialize;

use super::payload;
use crate::conn_state::Conn;
use crate::error::{Forbidden, RpcError};
use crate::files::attach::FileEntry;
use crate::jsonrpc::Payload;
use crate::request::Request;
use crate::session::open::{open, NewArgs};
use crate::session::ChatMode;
use crate::state::{Daemon, PromptArgs};

#[derive(Deserialize)]
struct NewParams {
    agent_alias: Option<String>,
    session_id: Option<String>,
    chat_mode: Option<ChatMode>,
    cwd: Option<String>,
    /// Replace the live session even while another connection uses it.
    #[serde(default)]
    replace: bool,
}

pub(super) async fn new(
    daemon: Arc<Daemon>,
    conn: Conn,
    req: Request,
) -> Result<Payload, RpcError> {
    let p: NewParams = req.params()?;
    let principal = req.binding()?.principal.clone();
    // Admin-only parameters come right after decoding (§3.5).
    if p.cwd.is_some() && !principal.admin {
        return Err(RpcError::Forbidden(Forbidden::AdminOnlyParam {
            param: "cwd",
        }));
    }
    let args = NewArgs {
        agent_alias: p.agent_alias,
        session_id: p.session_id,
        mode: p.chat_mode,
        cwd: p.cwd,
        replace: p.replace,
    };
    let (sessions, config_dir) = (&daemon.sessions, &daemon.paths.config_dir);
    let result = open(
        sessions,
        &daemon.config,
        config_dir,
        &conn,
        &principal,
        args,
    )
    .await?;
    payload(&result)
}

#[derive(Deserialize)]
struct PromptParams<'a> {
    session_id: Option<String>,
    prompt: Option<String>,
    #[serde(borrow)]
    attachments: Option<Vec<FileEntry<'a>>>,
}

/// `session/prompt`'s params, decoded for the daemon's prompt verb.
fn decode_prompt(req: &Request) -> Result<PromptArgs<'_>, RpcError> {
    let p: PromptParams<'_> = req.params()?;
    Ok(PromptArgs {
        session_id: p.session_id,
        prompt: p.prompt,
        attachments: p.attachments.unwrap_or_default(),
    })
}

pub(super) async fn prompt(
    daemon: Arc<Daemon>,
    conn: Conn,
    req: Request,
) -> Result<Payload, RpcError> {
    daemon.prompt(&conn, req, decode_prompt).await
}
