//! `session/prompt` (§8.4) as one verb: the session it names, the files it
//! attaches, and its turn.
//!
//! It lives with the daemon's handles because it spans two rooms: the
//! attachments are stored by `crate::files` (which stands on sessions) and
//! the turn is run by `crate::session`. The verb owns the request, so the
//! frame its attachments borrow is released as soon as they are stored:
//! a prompt waiting in its session's queue holds its text once.

use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::files::attach::{check_entries, FileEntry};
use crate::jsonrpc::Payload;
use crate::request::{Request, Responder};
use crate::session::lifecycle;
use crate::session::parse_session_id;
use crate::session::turn::run_prompt;
use crate::session::update::turn_failed;

use super::Daemon;

/// The members of a `session/prompt`, as its service decoded them; the
/// attachments' data still borrow the request's frame.
#[derive(Debug)]
pub struct PromptArgs<'f> {
    pub session_id: Option<String>,
    pub prompt: Option<String>,
    pub attachments: Vec<FileEntry<'f>>,
}

/// How a service decodes `session/prompt`'s params from its request.
pub type DecodePrompt = for<'r> fn(&'r Request) -> Result<PromptArgs<'r>, RpcError>;

impl Daemon {
    /// Runs the prompt of `req` (decoded by `decode`) on `conn`: checks its
    /// members, resolves its session, stores its attachments (their
    /// markers follow the text), then queues and runs the turn. The answer
    /// of a request leaves through its responder, in order with the turn's
    /// updates; a notification that fails after the ownership check hears
    /// how it ended through `turn_failed` (§3.5).
    pub async fn prompt(
        &self,
        conn: &Conn,
        mut req: Request,
        decode: DecodePrompt,
    ) -> Result<Payload, RpcError> {
        let notification = !req.expects_reply;
        let args = decode(&req)?;
        let binding = req.binding()?.clone();
        check_entries(&args.attachments, conn.transport, &binding.principal)?;
        let id = parse_session_id(args.session_id)?;
        let mut prompt = args
            .prompt
            .ok_or_else(|| RpcError::invalid_params("prompt is required"))?;
        if prompt.is_empty() && args.attachments.is_empty() {
            return Err(RpcError::invalid_params(
                "prompt may be empty only with attachments",
            ));
        }
        let resolved =
            lifecycle::resolve_for_prompt(&self.sessions, conn, &binding.principal, &id).await;
        let session = match resolved {
            Ok(s) => s,
            Err(e) => {
                // Rejected after the ownership check: a notification still hears how it ended.
                if notification
                    && !matches!(
                        e,
                        RpcError::NotOwned | RpcError::SessionNotFound { data: None, .. }
                    )
                {
                    turn_failed(conn, &id, &e, "").await;
                }
                return Err(e);
            }
        };
        // 1a. Attachments are stored before the prompt joins the queue; their markers follow it.
        if !args.attachments.is_empty() {
            let (handles, method) = (self.file_handles(), req.method.name);
            let stored = crate::files::store_attachments(
                handles,
                conn,
                &binding,
                &session,
                args.attachments,
                method,
            )
            .await;
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
                        turn_failed(conn, &id, &e, "").await;
                    }
                    return Err(e);
                }
            }
        }
        let responder = Responder::of(&req, conn);
        req.release_frame();
        let answered = run_prompt(
            &self.sessions,
            &self.config,
            session,
            conn.clone(),
            prompt,
            responder,
        )
        .await;
        if notification && !answered.turn_complete_sent {
            if let Err(e) = &answered.result {
                turn_failed(conn, &id, e, &answered.content).await;
            }
        }
        match answered.answered {
            Some(proof) => Ok(Payload::answered(proof)),
            None => answered
                .result
                .and_then(|r| Payload::new(&r, Default::default())),
        }
    }
}
