//! Each ACP method the editor calls, as daemon calls, and the daemon's
//! answers turned back into the editor's answers (docs/clients.md has the
//! table). Nothing here waits for a turn: a prompt is sent and remembered,
//! and its answer arrives later through [`Bridge::answered`].

use serde_json::{json, Value};

use super::editor::Gone;
use super::history::{self, ReplayError};
use super::{code, to_daemon, Asked, Bridge, NotSent, Pending};

/// The members of an editor's message: its method, its id, its params
/// (`null` when absent) and, for an answer, `{"error": ..}` or
/// `{"result": ..}`; `None` when the line is not a JSON object.
pub(super) fn split(line: &str) -> Option<(Option<String>, Option<Value>, Value, Value)> {
    let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(line) else {
        return None;
    };
    let method = match m.remove("method") {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    let id = m.remove("id");
    let params = m.remove("params").unwrap_or(Value::Null);
    let outcome = match (m.remove("result"), m.remove("error")) {
        (_, Some(e)) => json!({"error": e}),
        (r, None) => json!({"result": r.unwrap_or(Value::Null)}),
    };
    Some((method, id, params, outcome))
}

/// The prompt of a `session/prompt`'s params: its `prompt` blocks (none
/// when absent or not an array) in our terms.
pub(super) fn prompt_of(params: &Value) -> Result<to_daemon::Prompt, String> {
    let blocks = params
        .get("prompt")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    to_daemon::prompt(&blocks)
}

/// An editor's answer (the outcome of [`split`]) as a result or an error.
pub(super) fn answer_of(outcome: &Value) -> Result<Value, Value> {
    match outcome.get("error") {
        Some(e) => Err(e.clone()),
        None => Ok(outcome.get("result").cloned().unwrap_or(Value::Null)),
    }
}

pub(super) fn str_param<'a>(params: &'a Value, k: &str) -> Option<&'a str> {
    params.get(k).and_then(Value::as_str)
}

/// The editor's `cwd` when it can be one (absolute, an existing directory).
fn usable_cwd(params: &Value) -> Option<String> {
    let cwd = str_param(params, "cwd")?;
    let p = std::path::Path::new(cwd);
    (p.is_absolute() && p.is_dir()).then(|| cwd.to_owned())
}

/// Whether a daemon error is the refusal of an admin-only `cwd`.
fn admin_only(e: &Value) -> bool {
    e.pointer("/data/reason").and_then(Value::as_str) == Some("admin_only")
}

impl Bridge {
    /// One frame of the editor's.
    pub(super) async fn on_editor(&mut self, line: &str) -> Result<(), Gone> {
        let Some((method, id, params, outcome)) = split(line) else {
            let error = json!({"code": code::PARSE, "message": "not a JSON-RPC message"});
            return self
                .out
                .send(&json!({"jsonrpc": "2.0", "id": null, "error": error}))
                .await;
        };
        match (method, id) {
            (Some(m), Some(id)) => self.request(&m, id, params).await,
            (Some(m), None) => self.notification(&m, &params).await,
            (None, Some(id)) => self.response(&id, outcome).await,
            (None, None) => Ok(()),
        }
    }

    async fn notification(&mut self, method: &str, params: &Value) -> Result<(), Gone> {
        if method == "session/cancel" {
            if let Some(sid) = str_param(params, "sessionId") {
                let p = json!({"session_id": sid});
                // No daemon: nothing runs to cancel.
                if self.daemon.is_some() {
                    let _ = self.call("session/cancel", p, Pending::Ignore).await;
                }
            }
        }
        Ok(())
    }

    async fn request(&mut self, method: &str, id: Value, params: Value) -> Result<(), Gone> {
        let sent = match method {
            "initialize" => {
                self.elicitation = params
                    .pointer("/clientCapabilities/elicitation/form")
                    .is_some_and(Value::is_object);
                return self.out.answer(&id, to_daemon::initialize_result()).await;
            }
            "authenticate" => return self.out.answer(&id, json!({})).await,
            "session/new" => self.new_session(id.clone(), &params).await,
            "session/load" | "session/resume" => {
                let Some(sid) = str_param(&params, "sessionId") else {
                    return self
                        .out
                        .fail(&id, code::INVALID_PARAMS, "sessionId is required")
                        .await;
                };
                let (sid, cwd) = (sid.to_owned(), usable_cwd(&params));
                let then = Pending::Open {
                    id: id.clone(),
                    sid: sid.clone(),
                    replay: method == "session/load",
                    cwd,
                    resuming: false,
                };
                self.call("session/attach", json!({"session_id": sid}), then)
                    .await
            }
            "session/prompt" => {
                let sid = str_param(&params, "sessionId")
                    .unwrap_or_default()
                    .to_owned();
                let prompt = match prompt_of(&params) {
                    Ok(p) => p,
                    Err(why) => return self.out.fail(&id, code::INVALID_PARAMS, &why).await,
                };
                let mut p = json!({"session_id": sid, "prompt": prompt.text});
                if !prompt.attachments.is_empty() {
                    p["attachments"] = json!(prompt.attachments);
                }
                self.call("session/prompt", p, Pending::Prompt { id: id.clone() })
                    .await
            }
            "session/close" => {
                let sid = str_param(&params, "sessionId")
                    .unwrap_or_default()
                    .to_owned();
                self.call(
                    "session/close",
                    json!({"session_id": sid}),
                    Pending::Close { id: id.clone() },
                )
                .await
            }
            "session/list" => return self.list(id, &params).await,
            _ => {
                let msg = format!("Method not found: {method}");
                return self.out.fail(&id, code::METHOD_NOT_FOUND, &msg).await;
            }
        };
        match sent {
            Ok(()) => Ok(()),
            Err(e) => self.out.fail_with(&id, e.error()).await,
        }
    }

    async fn new_session(&mut self, id: Value, params: &Value) -> Result<(), NotSent> {
        let agent = self.agent().await?;
        if params
            .get("mcpServers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            eprintln!("zeroclaw acp: mcpServers ignored: the daemon's agents use their own configured tools");
        }
        let mut p = json!({"agent_alias": agent, "chat_mode": "acp"});
        if let Some(cwd) = usable_cwd(params) {
            p["cwd"] = json!(cwd);
        }
        self.call("session/new", p.clone(), Pending::New { id, params: p })
            .await
    }

    async fn list(&mut self, id: Value, params: &Value) -> Result<(), Gone> {
        let cursor = str_param(params, "cursor").map(str::to_owned);
        let cwd = str_param(params, "cwd")
            .map(str::to_owned)
            .unwrap_or_else(|| self.cwd.clone());
        let agent = match self.agent().await {
            Ok(a) => a,
            Err(e) => return self.out.fail(&id, code::INTERNAL, &e.0).await,
        };
        let side = match self.side().await {
            Ok(s) => s,
            Err(e) => return self.out.fail(&id, code::INTERNAL, &e.0).await,
        };
        match history::list(side, &agent, cursor.as_deref(), &cwd).await {
            Ok(r) => self.out.answer(&id, r).await,
            Err(e) => {
                self.side = None;
                self.out.fail(&id, code::INTERNAL, &e.message()).await
            }
        }
    }

    /// The editor's answer to one of our requests.
    async fn response(&mut self, id: &Value, outcome: Value) -> Result<(), Gone> {
        let Some(asked) = id.as_str().and_then(|k| self.asked.remove(k)) else {
            return Ok(());
        };
        let outcome = answer_of(&outcome);
        match asked {
            Asked::Permission { sid, request_id } => {
                let decision = to_daemon::decision(&outcome);
                let p = json!({"session_id": sid, "request_id": request_id, "decision": decision});
                if self.daemon.is_some() {
                    let _ = self.call("session/approve", p, Pending::Ignore).await;
                }
            }
            Asked::Question { daemon_id } => {
                if let Some(d) = self.daemon.as_mut() {
                    if let Err(e) = d.respond(&daemon_id, outcome).await {
                        return self.lost(&e.to_string()).await;
                    }
                }
            }
        }
        Ok(())
    }

    /// The daemon's answer to a request of ours.
    pub(super) async fn answered(
        &mut self,
        p: Pending,
        outcome: Result<Value, Value>,
    ) -> Result<(), Gone> {
        match (p, outcome) {
            (Pending::Ignore, _) => Ok(()),
            (Pending::New { id, .. }, Ok(r)) => {
                let sid = r.get("session_id").cloned().unwrap_or(Value::Null);
                self.out.answer(&id, json!({"sessionId": sid})).await
            }
            (Pending::New { id, mut params }, Err(e))
                if admin_only(&e) && params.get("cwd").is_some() =>
            {
                // Only an admin may choose the working directory (the
                // daemon's own user is one): others get the agent's workspace.
                eprintln!("zeroclaw acp: cwd not granted to this user; the session uses the agent's workspace");
                if let Some(o) = params.as_object_mut() {
                    o.remove("cwd");
                }
                let again = Pending::New {
                    id: id.clone(),
                    params: params.clone(),
                };
                match self.call("session/new", params, again).await {
                    Ok(()) => Ok(()),
                    Err(e) => self.out.fail_with(&id, e.error()).await,
                }
            }
            (Pending::New { id, .. } | Pending::Close { id } | Pending::Prompt { id }, Err(e)) => {
                self.daemon_error(id, e).await
            }
            (Pending::Close { id }, Ok(_)) => self.out.answer(&id, json!({})).await,
            (Pending::Prompt { id }, Ok(r)) => {
                let stop = match r.get("stop_reason").and_then(Value::as_str) {
                    Some("cancelled") => "cancelled",
                    _ => "end_turn",
                };
                self.out.answer(&id, json!({"stopReason": stop})).await
            }
            // Not live (-32000): resume it. Any other refusal (ownership,
            // the agent selector) is the editor's answer.
            (
                Pending::Open {
                    id,
                    sid,
                    replay,
                    cwd,
                    resuming: false,
                },
                Err(e),
            ) if e.get("code") == Some(&json!(-32000)) => self.resume(id, sid, replay, cwd).await,
            (
                Pending::Open {
                    id, sid, replay, ..
                },
                Ok(_),
            ) => self.opened(id, &sid, replay).await,
            (Pending::Open { id, .. }, Err(e)) => self.daemon_error(id, e).await,
        }
    }

    /// Not live: resume it with `session/new` (recovery, the interruption
    /// marker), if it is one of the daemon's durable sessions.
    async fn resume(
        &mut self,
        id: Value,
        sid: String,
        replay: bool,
        cwd: Option<String>,
    ) -> Result<(), Gone> {
        let exists = match self.side().await {
            Ok(side) => side
                .call("session/list", json!({"chat_mode": "acp", "limit": 1000}))
                .await
                .map(|l| {
                    l.get("sessions")
                        .and_then(Value::as_array)
                        .is_some_and(|all| {
                            all.iter()
                                .any(|s| s.get("session_id").and_then(Value::as_str) == Some(&sid))
                        })
                })
                .map_err(|e| e.message()),
            Err(e) => Err(e.0),
        };
        match exists {
            Ok(true) => {}
            Ok(false) => {
                return self
                    .out
                    .fail(&id, code::NOT_FOUND, &format!("Session not found: {sid}"))
                    .await
            }
            Err(why) => {
                self.side = None;
                return self.out.fail(&id, code::INTERNAL, &why).await;
            }
        }
        let agent = match self.agent().await {
            Ok(a) => a,
            Err(e) => return self.out.fail(&id, code::INTERNAL, &e.0).await,
        };
        let mut p = json!({"agent_alias": agent, "session_id": sid, "chat_mode": "acp"});
        if let Some(cwd) = cwd {
            p["cwd"] = json!(cwd);
        }
        let then = Pending::Open {
            id: id.clone(),
            sid,
            replay,
            cwd: None,
            resuming: true,
        };
        match self.call("session/new", p, then).await {
            Ok(()) => Ok(()),
            Err(e) => self.out.fail_with(&id, e.error()).await,
        }
    }

    /// Attached or resumed: replay the transcript for `session/load`, then answer.
    async fn opened(&mut self, id: Value, sid: &str, replay: bool) -> Result<(), Gone> {
        if replay {
            if let Err(e) = self.side().await {
                return self.out.fail(&id, code::INTERNAL, &e.0).await;
            }
            let Some(side) = self.side.as_mut() else {
                return self
                    .out
                    .fail(&id, code::INTERNAL, "no daemon connection")
                    .await;
            };
            match history::replay(side, &mut self.out, sid).await {
                Ok(_) => {}
                Err(ReplayError::Editor(g)) => return Err(g),
                Err(ReplayError::Daemon(e)) => {
                    self.side = None;
                    return self.out.fail(&id, code::INTERNAL, &e.message()).await;
                }
            }
        }
        self.out.answer(&id, json!({})).await
    }

    /// The daemon's error object, passed on (its code, message and data).
    async fn daemon_error(&mut self, id: Value, e: Value) -> Result<(), Gone> {
        self.out.fail_with(&id, e).await
    }
}
