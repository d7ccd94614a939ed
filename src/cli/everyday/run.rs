//! `zeroclaw run [--agent A] [--session ID] [--approve D] [--json] PROMPT`:
//! one turn for a script. It opens a fresh durable session (or talks to
//! `--session`), sends the prompt, streams the answer's text to stdout and
//! exits with the outcome: 0 when the turn completed, 1 when it failed or
//! was cancelled (the reason on stderr). Approvals are refused (answered
//! `reject`, said on stderr) unless `--approve` names the decision; the
//! agent's questions are declined. A session `run` opened is closed after
//! the turn (persisted, not live). With `--json` nothing streams: the
//! prompt's result is the one document on stdout.

use std::ffi::OsStr;
use std::io::Write;

use serde_json::{json, Value};

use super::{connect, fail, finish};
use crate::cli::args::Decision;
use crate::cli::chat::session::{default_agent, no_session};
use crate::cli::conn::{CallError, ClientPeer, Received};
use crate::cli::exit;
use crate::shown::Shown;

/// The command line of `run`.
#[derive(Debug, Clone)]
pub struct Options {
    pub prompt: String,
    pub agent: Option<String>,
    pub session: Option<String>,
    pub approve: Option<Decision>,
    pub json: bool,
}

/// Runs the command; the exit status.
pub async fn run(config_dir: Option<&OsStr>, opts: Options) -> i32 {
    let mut conn = match connect(config_dir).await {
        Ok(c) => c,
        Err(status) => return status,
    };
    let id = match open(&mut conn, &opts).await {
        Ok(id) => id,
        Err(Opened::Call(e)) => return finish(opts.json, Err(e), |_| String::new()),
        Err(Opened::Refused(why)) => return fail(&why, exit::RPC_ERROR),
    };
    let outcome = turn(&mut conn, &id, &opts).await;
    if opts.session.is_none() {
        // Its own fresh session is closed (it stays persisted, resumable
        // with `--session`), so a script's runs do not fill the 64 live
        // slots until the idle reclaim.
        let _ = conn.call("session/close", json!({"session_id": id})).await;
    }
    if opts.json {
        return finish(true, outcome, |_| String::new());
    }
    match outcome {
        Ok(v) if v.get("stop_reason").and_then(Value::as_str) == Some("end_turn") => exit::OK,
        Ok(v) => {
            let reason = crate::cli::field::field_text(&v, "stop_reason");
            fail(&format!("the turn ended: {reason}"), exit::RPC_ERROR)
        }
        Err(e) => fail(
            &format!("the turn failed: {}", e.message()),
            exit::RPC_ERROR,
        ),
    }
}

/// Why no session could be opened.
enum Opened {
    Call(CallError),
    Refused(String),
}

impl From<CallError> for Opened {
    fn from(e: CallError) -> Self {
        Opened::Call(e)
    }
}

/// The session to prompt: `--session` as it is when live (never replaced:
/// another client may be in it), resumed with `session/new` when only
/// persisted; else a fresh durable session of `--agent` or the default.
async fn open(conn: &mut ClientPeer, opts: &Options) -> Result<String, Opened> {
    if let Some(id) = &opts.session {
        let list = conn
            .call(
                "session/list",
                json!({"include_killed": true, "limit": 1000}),
            )
            .await?;
        let found = super::entries(&list, "sessions")
            .iter()
            .find(|s| s.get("session_id").and_then(Value::as_str) == Some(id.as_str()))
            .cloned();
        let Some(entry) = found else {
            return Err(Opened::Refused(no_session(id)));
        };
        let f = |k: &str| crate::cli::field::field_text(&entry, k);
        match f("state").as_str() {
            "live" => return Ok(id.clone()),
            "killed" => {
                return Err(Opened::Refused(format!(
                    "session {} was killed",
                    Shown::line(id)
                )))
            }
            _ => {}
        }
        let params =
            json!({"agent_alias": f("agent_alias"), "session_id": id, "chat_mode": f("chat_mode")});
        conn.call("session/new", params).await?;
        return Ok(id.clone());
    }
    let agent = match &opts.agent {
        Some(a) => a.clone(),
        None => match default_agent(conn).await? {
            Some(a) => a,
            None => return Err(Opened::Refused("no agent is configured".to_owned())),
        },
    };
    let made = conn
        .call(
            "session/new",
            json!({"agent_alias": agent, "chat_mode": "acp"}),
        )
        .await?;
    match made.get("session_id").and_then(Value::as_str) {
        Some(id) => Ok(id.to_owned()),
        None => Err(Opened::Refused(
            "session/new answered no session_id".to_owned(),
        )),
    }
}

/// Sends the prompt and follows the turn until its answer.
async fn turn(conn: &mut ClientPeer, id: &str, opts: &Options) -> Result<Value, CallError> {
    let prompt_id = conn
        .request(
            "session/prompt",
            json!({"session_id": id, "prompt": opts.prompt}),
        )
        .await?;
    let mut out = std::io::stdout().lock();
    let mut mid_line = false;
    let outcome = loop {
        match conn.next().await {
            Some(Received::Answer { id: got, outcome }) if got == prompt_id => {
                break outcome.map_err(CallError::Rpc)
            }
            Some(Received::Chunk {
                thought: false,
                text,
            }) if !opts.json => {
                let _ = out.write_all(Shown::text(&text).as_str().as_bytes());
                if !text.is_empty() {
                    mid_line = !text.ends_with('\n');
                }
                if !conn.has_buffered() {
                    let _ = out.flush();
                }
            }
            Some(Received::Notification { method, params }) if method == "session/update" => {
                approval(conn, &params, opts.approve).await?;
            }
            Some(Received::Request { id, method, .. }) if method == "elicitation/create" => {
                conn.respond(&id, json!({"action": "decline"})).await?;
            }
            Some(Received::Request { id, method, .. }) => conn.refuse(&id, &method).await?,
            Some(Received::Closed(why)) => break Err(CallError::Lost(why)),
            None => break Err(CallError::Lost("connection closed".into())),
            Some(_) => {}
        }
    };
    if mid_line {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
    outcome
}

/// Answers an `approval_request` with `--approve`'s decision, else
/// `reject` (said on stderr); other updates are not shown.
async fn approval(
    conn: &mut ClientPeer,
    params: &Value,
    approve: Option<Decision>,
) -> Result<(), CallError> {
    let field = |camel: &str, snake: &str| params.get(camel).or_else(|| params.get(snake)).cloned();
    if field("type", "type") != Some(json!("approval_request")) {
        return Ok(());
    }
    let decision = approve.unwrap_or(Decision::Reject);
    if approve.is_none() {
        let tool = field("toolName", "tool_name").unwrap_or(Value::Null);
        let tool = tool.as_str().unwrap_or("a tool");
        let _ = writeln!(
            std::io::stderr(),
            "zeroclaw: refused {} (pass --approve allow_once|allow_always|reject to answer approvals)",
            Shown::line(tool)
        );
    }
    let params = json!({
        "session_id": field("sessionId", "session_id"),
        "request_id": field("requestId", "request_id"),
        "decision": decision.wire(),
    });
    conn.request("session/approve", params).await.map(|_| ())
}
