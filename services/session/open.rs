//! `session/new` and `session/prompt` (SPEC §8.3, §8.4).

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{payload, session_id};
use crate::context::Conn;
use crate::error::{Forbidden, RpcError};
use crate::jsonrpc::Payload;
use crate::request::Request;
use crate::session::lifecycle::{self, NewRequest};
use crate::session::turn::run_prompt;
use crate::session::update::Outcome;
use crate::session::{new_uuid, ChatMode};
use crate::state::Daemon;

#[derive(Deserialize)]
struct NewParams {
    agent_alias: Option<String>,
    session_id: Option<String>,
    chat_mode: Option<ChatMode>,
    cwd: Option<String>,
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
    let alias = p
        .agent_alias
        .ok_or_else(|| RpcError::invalid_params("agent_alias is required"))?;
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
    attachments: Option<&'a RawValue>,
}

pub(super) async fn prompt(
    daemon: Arc<Daemon>,
    conn: Conn,
    req: Request,
) -> Result<Payload, RpcError> {
    let notification = !req.expects_reply;
    let p: PromptParams<'_> = req.params()?;
    let id = session_id(p.session_id)?;
    let prompt = p
        .prompt
        .ok_or_else(|| RpcError::invalid_params("prompt is required"))?;
    let has_attachments = p.attachments.is_some_and(|a| a.get() != "[]");
    if has_attachments {
        return Err(RpcError::invalid_params(
            "attachments are not supported by this daemon yet",
        ));
    }
    if prompt.is_empty() {
        return Err(RpcError::invalid_params(
            "prompt may be empty only with attachments",
        ));
    }
    let principal = req.binding()?.principal.clone();
    let session =
        match lifecycle::resolve_for_prompt(&daemon.sessions, &conn, &principal, &id).await {
            Ok(s) => s,
            Err(e) => {
                // Rejected after the ownership check: a notification still hears how it ended (§3.5).
                if notification
                    && !matches!(
                        e,
                        RpcError::NotOwned | RpcError::SessionNotFound { data: None, .. }
                    )
                {
                    fail_notified(&conn, &id, &e).await;
                }
                return Err(e);
            }
        };
    let answered = run_prompt(daemon, session, conn.clone(), prompt).await;
    match answered.result {
        Ok(r) => payload(&r),
        Err(e) => {
            if notification && !answered.turn_complete_sent {
                fail_notified(&conn, &id, &e).await;
            }
            Err(e)
        }
    }
}

/// The `turn_complete` owed to a prompt sent as a notification that ended without one.
async fn fail_notified(conn: &Conn, session_id: &str, e: &RpcError) {
    let event = crate::session::update::Event::TurnComplete {
        outcome: Outcome::Failed,
        content: "",
        reason: Some(&e.to_string()),
    };
    crate::session::update::notify(conn, &crate::session::update::Update { session_id, event })
        .await;
}
