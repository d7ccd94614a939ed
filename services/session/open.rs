//! `session/new` and `session/prompt` (§8.3, §8.4).

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use super::{payload, session_id};
use crate::conn_state::Conn;
use crate::error::{Forbidden, RpcError};
use crate::files::attach::{check_entries, read_entries, FileEntry};
use crate::files::{self, UploadTarget};
use crate::jsonrpc::Payload;
use crate::request::{Request, Responder};
use crate::session::lifecycle::{self, NewRequest};
use crate::session::turn::run_prompt;
use crate::session::update::Completion;
use crate::session::{new_uuid, ChatMode};
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
    // Without `agent_alias`, the configured `default_agent` (docs/config.md);
    // without either, the parameter is required as §8.3 says.
    let alias = match p.agent_alias {
        Some(a) => a,
        None => daemon
            .config
            .current()
            .default_agent
            .clone()
            .ok_or_else(|| RpcError::invalid_params("agent_alias is required"))?,
    };
    let id = match p.session_id {
        Some(id) => session_id(Some(id))?,
        None => new_uuid(),
    };
    let cwd = match p.cwd {
        Some(c) => {
            let path = PathBuf::from(&c);
            if !path.is_absolute() || !path.is_dir() {
                return Err(RpcError::invalid_params(
                    "cwd must be an absolute path to an existing directory",
                ));
            }
            Some(path)
        }
        None => None,
    };
    let config = daemon.config.current();
    if !config.agents.contains_key(&alias) {
        return Err(RpcError::invalid_params(format!(
            "Agent {alias} is not configured"
        )));
    }
    let request = NewRequest {
        id,
        agent_alias: alias,
        mode: p.chat_mode.unwrap_or_default(),
        cwd,
        replace: p.replace,
    };
    let result = lifecycle::new_session(
        &daemon.sessions,
        &config,
        &daemon.paths.config_dir,
        &conn,
        &principal,
        request,
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
                fail_notified(&conn, &id, &e, "").await;
            }
            return Err(e);
        }
    };
    // 1a. Attachments are stored before the prompt joins the queue; their markers follow it.
    if !attachments.is_empty() {
        let stored = async {
            let incoming = read_entries(attachments)?;
            files::store_all(
                daemon.file_handles(),
                &conn,
                req.binding()?,
                &UploadTarget::of(&session),
                incoming,
                req.method.name,
            )
            .await
        };
        match stored.await {
            Ok(files) => {
                for f in files {
                    if !prompt.is_empty() {
                        prompt.push('\n');
                    }
                    prompt.push_str(&f.marker);
                }
            }
            Err(e) => {
                if notification {
                    fail_notified(&conn, &id, &e, "").await;
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
            fail_notified(&conn, &id, e, &answered.content).await;
        }
    }
    match answered.answered {
        Some(proof) => Ok(Payload::answered(proof)),
        None => answered.result.and_then(|r| payload(&r)),
    }
}

/// The `turn_complete` owed to a prompt sent as a notification that ended without one.
async fn fail_notified(conn: &Conn, session_id: &str, e: &RpcError, content: &str) {
    let event = crate::session::update::Event::TurnComplete {
        outcome: Completion::Failed,
        content,
        reason: Some(&e.to_string()),
    };
    let never = tokio_util::sync::CancellationToken::new();
    let update = crate::session::update::Update { session_id, event };
    crate::session::update::notify(conn, &update, &never).await;
}
