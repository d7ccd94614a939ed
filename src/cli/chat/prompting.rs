//! One turn of the chat: the prompt sent, its updates rendered as they
//! arrive, the daemon's questions (approvals, elicitations) asked, Ctrl-C
//! turned into `session/cancel`, a lost connection into a reconnect; and
//! the Ctrl-C watcher itself.

use serde_json::{json, Value};
use std::time::Duration;

use super::super::conn::{CallError, Received};
use super::render::{notice, Outcome};
use super::{ask, garbage, Chat};

impl Chat {
    /// One turn: stream it, answer its questions, Ctrl-C cancels it.
    pub(super) async fn turn(&mut self, prompt: &str) -> Option<i32> {
        // A connection that died while idle is noticed before the prompt goes.
        while let Some(ev) = self.conn.try_next() {
            if let Received::Closed(_) = ev {
                if let Err(status) = self.reconnect().await {
                    return Some(status);
                }
            }
        }
        let prompt = match self.uploads.is_empty() {
            true => prompt.to_owned(),
            false => format!(
                "{prompt}\n\n{}",
                std::mem::take(&mut self.uploads).join("\n")
            ),
        };
        let params = json!({"session_id": self.current.id, "prompt": prompt});
        let id = match self.conn.request("session/prompt", params.clone()).await {
            Ok(id) => id,
            // Gone before we knew it: once more on a fresh connection.
            Err(CallError::Lost(_)) => {
                if let Err(status) = self.reconnect().await {
                    return Some(status);
                }
                match self.conn.request("session/prompt", params).await {
                    Ok(id) => id,
                    Err(e) => return self.failed(e).await,
                }
            }
            Err(e) => return self.failed(e).await,
        };
        let mut cancelling = false;
        // A failed turn_complete was shown: the prompt's error answer is the
        // same failure and is not printed again (one failure, one line).
        let mut failure_shown = false;
        // Buffered output is due on the screen when `frame` fires (see
        // `Render::flush_soon`). One timer, reset once per frame: a timer
        // made per line re-armed the runtime's clock (a wake-up) per line.
        let frame = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(frame);
        let mut due = false;
        loop {
            let ev = tokio::select! {
                ev = self.conn.next() => ev,
                () = &mut frame, if due => {
                    self.render.flush();
                    due = false;
                    continue;
                }
                _ = self.interrupts.next() => {
                    if let Err(e) = self.cancel(&mut cancelling, "cancelling the turn…").await {
                        return self.failed(e).await;
                    }
                    continue;
                }
            };
            match ev {
                Some(Received::Chunk { thought, text }) => self.render.chunk(thought, &text),
                Some(Received::Notification { method, params }) if method == "session/update" => {
                    if params.get("type").and_then(Value::as_str) == Some("approval_request") {
                        if let Err(e) = self.approval(&params, &mut cancelling).await {
                            return self.failed(e).await;
                        }
                    } else if let Some(Outcome::Failed(_)) = self.render.update(&params) {
                        failure_shown = true;
                    }
                }
                Some(Received::Notification { .. }) => {}
                Some(Received::Request {
                    id,
                    method,
                    params,
                    line,
                }) => {
                    let sent = if method == "elicitation/create" {
                        self.render.finish_line();
                        self.render.flush();
                        let result = ask::elicitation(&mut self.input, &params, &line).await;
                        self.conn.respond(&id, result).await
                    } else {
                        self.conn.refuse(&id, &method).await
                    };
                    if let Err(e) = sent {
                        return self.failed(e).await;
                    }
                }
                Some(Received::Answer { id: got, outcome }) if got == id => {
                    match outcome {
                        Err(e) if !failure_shown => {
                            self.render.finish_line();
                            self.render.error(&CallError::Rpc(e).message());
                        }
                        _ => {}
                    }
                    return None;
                }
                Some(Received::Answer { outcome, .. }) => {
                    // session/approve or session/cancel answers.
                    if let Ok(r) = &outcome {
                        if r.get("acknowledged") == Some(&Value::Bool(false)) {
                            notice("too late: that approval had already timed out");
                        }
                    }
                }
                Some(Received::Garbage(line)) => {
                    self.render.flush();
                    garbage(&line);
                }
                Some(Received::Closed(_)) | None => {
                    self.render
                        .line("[turn interrupted: the connection to the daemon was lost]");
                    return self.reconnect().await.err();
                }
            }
            if !due && !self.conn.has_buffered() {
                if let Some(at) = self.render.flush_soon() {
                    frame.as_mut().reset(at);
                    due = true;
                }
            }
        }
    }
}

impl Chat {
    /// Asks about one `approval_request` and answers it. Ctrl-C there
    /// rejects the call and cancels the turn, as Ctrl-C while it streams
    /// does; a request of a turn being cancelled is rejected unasked.
    async fn approval(&mut self, params: &Value, cancelling: &mut bool) -> Result<(), CallError> {
        let answer = if *cancelling {
            ask::Answer::Interrupted
        } else {
            self.render.finish_line();
            self.render.flush();
            ask::approval(&mut self.input, params).await
        };
        let (d, interrupted) = match answer {
            ask::Answer::Decided(d) => (d, false),
            ask::Answer::Interrupted => (ask::Decision::reject(), true),
        };
        let mut approve = json!({
            "session_id": self.current.id,
            "request_id": params.get("requestId"),
            "decision": d.decision,
        });
        if let Some(r) = d.replacement {
            approve["replacement"] = json!(r);
        }
        self.conn.request("session/approve", approve).await?;
        if interrupted {
            self.cancel(
                cancelling,
                "Ctrl-C: the call is rejected; cancelling the turn…",
            )
            .await?;
        }
        Ok(())
    }

    /// `session/cancel` for the running turn, once, saying `why` on screen.
    async fn cancel(&mut self, cancelling: &mut bool, why: &str) -> Result<(), CallError> {
        if *cancelling {
            return Ok(());
        }
        *cancelling = true;
        notice(why);
        let cancel = json!({"session_id": self.current.id});
        self.conn
            .request("session/cancel", cancel)
            .await
            .map(|_| ())
    }
}

/// Ctrl-C (SIGINT) while no line editor owns the terminal.
pub(super) struct Interrupts {
    #[cfg(unix)]
    sig: tokio::signal::unix::Signal,
}

impl Interrupts {
    #[cfg(unix)]
    pub(super) fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Self {
            sig: signal(SignalKind::interrupt())?,
        })
    }

    #[cfg(not(unix))]
    pub(super) fn install() -> std::io::Result<Self> {
        Ok(Self {})
    }

    #[cfg(unix)]
    pub(super) async fn next(&mut self) {
        if self.sig.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }

    #[cfg(not(unix))]
    pub(super) async fn next(&mut self) {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
