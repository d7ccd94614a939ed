//! Turns of the session that another attached client started,
//! shown while this chat waits at its prompt: the stream under a one-line
//! heading, its outcome, and the approvals it asks, which `/approve`
//! answers here (first answer wins; the daemon tells every client).

use serde_json::{json, Value};

use super::super::conn::{CallError, Received};
use super::render::{notice, Outcome};
use super::{Chat, PROMPT};
use crate::shown::Shown;

/// The heading shown when another client's turn starts streaming here.
pub const HEADING: &str = "[a turn from another client]";

impl Chat {
    /// One event of another client's turn, arrived while the editor may be
    /// reading a line: on a terminal the output starts below the prompt,
    /// and the prompt is drawn again once the turn ends or asks for an
    /// approval (the person types `/approve` there).
    pub(super) fn watch_at_prompt(&mut self, ev: Received) {
        let at_prompt = self.render.tty && self.input.reading();
        if at_prompt && !self.below_prompt {
            eprintln!();
            self.below_prompt = true;
        }
        self.watch(ev);
        if at_prompt && (!self.watched_turn || self.pending_approval.is_some()) {
            self.render.flush();
            eprint!("{PROMPT}");
            self.below_prompt = false;
        }
    }

    /// One event of another client's turn, arrived at the prompt.
    fn watch(&mut self, ev: Received) {
        match ev {
            Received::Chunk { thought, text } => {
                self.watch_start();
                self.render.chunk(thought, &text);
            }
            Received::Notification { method, params } if method == "session/update" => {
                self.watch_update(&params)
            }
            _ => {}
        }
        if !self.conn.has_buffered() {
            self.render.flush();
        }
    }

    fn watch_start(&mut self) {
        if !self.watched_turn {
            self.watched_turn = true;
            self.render.finish_line();
            self.render.line(HEADING);
        }
    }

    fn watch_update(&mut self, p: &Value) {
        match p.get("type").and_then(Value::as_str) {
            Some("approval_request") => {
                self.watch_start();
                self.render.finish_line();
                let tool = p.get("toolName").and_then(Value::as_str).unwrap_or("?");
                self.render.line(&format!(
                    "[approval asked: {}; answer with /approve once|always|reject]",
                    Shown::line(tool)
                ));
                self.pending_approval = p.get("requestId").cloned();
            }
            Some("approval_resolved") => {
                self.pending_approval = None;
                let how = p.get("decision").and_then(Value::as_str).unwrap_or("?");
                self.render.finish_line();
                self.render
                    .line(&format!("[approval resolved: {}]", Shown::line(how)));
            }
            Some("elicitation_resolved") => {}
            _ => {
                self.watch_start();
                if let Some(outcome) = self.render.update(p) {
                    self.watched_turn = false;
                    self.pending_approval = None;
                    if outcome != Outcome::Completed {
                        self.render.finish_line();
                    }
                }
            }
        }
    }

    /// `/approve DECISION`: answers the pending approval of another
    /// client's turn; the lines shown.
    pub(super) async fn approve_watched(
        &mut self,
        decision: &str,
    ) -> Result<Vec<String>, CallError> {
        let Some(request_id) = self.pending_approval.take() else {
            return Ok(vec!["no approval is waiting".to_owned()]);
        };
        let r = self
            .conn
            .call(
                "session/approve",
                json!({"session_id": self.current.id, "request_id": request_id, "decision": decision}),
            )
            .await?;
        Ok(match r.get("acknowledged") {
            Some(Value::Bool(false)) => {
                notice("too late: that approval was already answered or timed out");
                Vec::new()
            }
            _ => vec![format!("answered: {decision}")],
        })
    }
}
