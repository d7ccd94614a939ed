//! `session/new` and `session/prompt` (§8.3, §8.4).

use std::sync::Arc;

use serde::Deserialize;

use super::{payload, session_id};
use crate::conn_state::Conn;
use crate::error::{Forbidden, RpcError};
use crate::files;
use crate::files::attach::{check_entries, FileEntry};
use crate::jsonrpc::Payload;
use crate::request::{Request, Responder};
use crate::session::lifecycle;
use crate::session::open::{open, NewArgs};
use crate::session::turn::run_prompt;
use crate::session::update::turn_failed;
use crate::session::ChatMode;
use crate::state::Daemon;

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

pub(super) async fn prompt(
    daemon: Arc<Daemon>,
    conn: Conn,
    mut req: Request,
) -> Result<Payload, RpcError> {
    let notification = !req.expects_reply;
    let p: PromptParams<'_> = req.params()?;
    let principal = req.binding()?.principal.clone();
    let attachments = p.attachments.unwrap_or_default();
    check_entries(&attachments, conn.transport, &principal)?;
    let id = session_id(p.session_id)?;
    let mut prompt = p
        .prompt
        .ok_or_else(|| RpcError::invalid_params("prompt is required"))?;
    if prompt.is_empty() && attachments.is_empty() {
        return Err(RpcError::invalid_params(
            "prompt may be empty only with attachments",
        ));
    }
    let resolved = lifecycle::resolve_for_prompt(&daemon.sessions, &conn, &principal, &id).await;
    let session = match resolved {
        Ok(s) => s,
        Err(e) => {
            // Rejected after the ownership check: a notification still hears how it ended (§3.5).
            if notification
                && !matches!(
                    e,
                    RpcError::NotOwned | RpcError::SessionNotFound { data: None, .. }
                )
            {
                turn_failed(&conn, &id, &e, "").await;
            }
            return Err(e);
        }
    };
    // 1a. Attachments are stored before the prompt joins the queue; their markers follow it.
    if !attachments.is_empty() {
        let (handles, binding) = (daemon.file_handles(), req.binding()?);
        let method = req.method.name;
        let stored =
            files::store_attachments(handles, &conn, binding, &session, attachments, method).await;
        match stored {
            Ok(markers) => {
                for marker in markers {
                    if !prompt.is_empty() {
                        prompt.push('\n');
                    }
                    prompt.push_str(&marker);
                }
            }
            Err(e) => {
                if notification {
                    turn_failed(&conn, &id, &e, "").await;
                }
                return Err(e);
            }
        }
    }
    let responder = Responder::of(&req, &conn.outbound);
    req.release_frame();
    let answered = run_prompt(
        &daemon.sessions,
        &daemon.config,
        session,
        conn.clone(),
        prompt,
        responder,
    )
    .await;
    if notification && !answered.turn_complete_sent {
        if let Err(e) = &answered.result {
            turn_failed(&conn, &id, e, &answered.content).await;
        }
    }
    match answered.answered {
        Some(proof) => Ok(Payload::answered(proof)),
        None => answered.result.and_then(|r| payload(&r)),
    }
}
