//! Entry point for the fuzz target `bridge_input` (`fuzz/`), not an API:
//! everything the bridge reads of one editor line before it does any I/O,
//! run as the bridge runs it. The parsing is private to the bridge; the
//! fuzz crate is another crate and sees only `pub` items, so this one
//! function makes exactly that code callable. Nothing in the bridge calls it.

use serde_json::Value;

use super::requests::{answer_of, prompt_of, split, str_param};
use super::to_daemon;

/// What the bridge makes of one editor line, in the order `on_editor`
/// dispatches it.
#[derive(Debug)]
pub enum EditorLine {
    /// Not a JSON object: answered with a parse error.
    NotJsonRpc,
    /// A request: its method, id, `sessionId` param when it is a string,
    /// and for `session/prompt` the prompt text and attachments (or why refused).
    Request {
        method: String,
        id: Value,
        session_id: Option<String>,
        prompt: Option<Result<(String, Vec<Value>), String>>,
    },
    /// A notification (only `session/cancel` with a `sessionId` is acted on).
    Notification {
        method: String,
        session_id: Option<String>,
    },
    /// An answer to one of our requests: the `session/approve` decision it
    /// would carry, and the answer as a question's response.
    Response {
        id: Value,
        decision: &'static str,
        answer: Result<Value, Value>,
    },
    /// An object without a method or id: ignored.
    Ignored,
}

/// Runs one editor line through the bridge's parsing.
pub fn editor_line(line: &str) -> EditorLine {
    let Some((method, id, params, outcome)) = split(line) else {
        return EditorLine::NotJsonRpc;
    };
    let session_id = str_param(&params, "sessionId").map(str::to_owned);
    match (method, id) {
        (Some(method), Some(id)) => {
            let prompt = (method == "session/prompt")
                .then(|| prompt_of(&params).map(|p| (p.text, p.attachments)));
            EditorLine::Request {
                method,
                id,
                session_id,
                prompt,
            }
        }
        (Some(method), None) => EditorLine::Notification { method, session_id },
        (None, Some(id)) => {
            let answer = answer_of(&outcome);
            EditorLine::Response {
                id,
                decision: to_daemon::decision(&answer),
                answer,
            }
        }
        (None, None) => EditorLine::Ignored,
    }
}
