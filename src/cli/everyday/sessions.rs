//! `zeroclaw sessions [list]`, `sessions show ID`, `sessions kill ID` and
//! `sessions delete ID`: `session/list`, `session/messages`,
//! `session/kill` and `session/delete` (docs/protocol.md §8.8–8.11).

use std::ffi::OsStr;

use serde_json::{json, Value};

use super::{call_and_finish, entries, listing};
use crate::cli::chat::session::row_line;
use crate::shown::Shown;

/// What `zeroclaw sessions` does.
#[derive(Debug, Clone)]
pub enum Action {
    /// The table of sessions (killed ones too).
    List,
    /// The transcript of one session.
    Show(String),
    Kill(String),
    Delete(String),
}

/// Runs the command; the exit status.
pub async fn run(config_dir: Option<&OsStr>, action: Action, json: bool) -> i32 {
    match action {
        Action::List => {
            let params = json!({"include_killed": true, "limit": 1000});
            call_and_finish(config_dir, json, "session/list", params, list_text).await
        }
        Action::Show(id) => {
            let params = json!({"session_id": id, "limit": 1000});
            call_and_finish(config_dir, json, "session/messages", params, transcript).await
        }
        Action::Kill(id) => {
            let params = json!({"session_id": id});
            call_and_finish(config_dir, json, "session/kill", params, |_| {
                format!("killed {}\n", Shown::line(&id))
            })
            .await
        }
        Action::Delete(id) => {
            let params = json!({"session_id": id});
            call_and_finish(config_dir, json, "session/delete", params, |v| {
                let verb = if v["deleted"] == json!(true) {
                    "deleted"
                } else {
                    "nothing to delete for"
                };
                format!("{verb} {}\n", Shown::line(&id))
            })
            .await
        }
    }
}

/// The table of a `session/list` result.
pub fn list_text(v: &Value) -> String {
    let columns = [
        ("ID", "session_id"),
        ("AGENT", "agent_alias"),
        ("MODE", "chat_mode"),
        ("STATE", "state"),
        ("MESSAGES", "message_count"),
        ("LAST ACTIVITY", "last_activity"),
    ];
    listing(v, "sessions", &columns, "no sessions")
}

/// A `session/messages` page as the transcript a person reads: one entry
/// per row, sanitized (an agent's text may span lines).
fn transcript(v: &Value) -> String {
    let mut out = String::new();
    let total = v.get("total").and_then(Value::as_u64).unwrap_or(0);
    let rows = entries(v, "messages");
    if (rows.len() as u64) < total {
        out.push_str(&format!("(the last {} of {total} messages)\n", rows.len()));
    }
    for row in rows {
        out.push_str(&Shown::text(&row_line(row)).to_string());
        out.push('\n');
    }
    out
}
