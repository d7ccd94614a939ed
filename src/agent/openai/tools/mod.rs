//! The built-in tools a model may call (docs/agents.md), each confined to
//! the session's working directory.
//!
//! A tool never fails the turn: whatever goes wrong (unknown tool, bad
//! arguments, a path outside the working directory, an I/O error) becomes
//! an `error: …` output that goes back to the model. Every output is bounded
//! at the SPEC's 16 KiB tool-output bound (§9.3).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::bounded::bound_text;
use crate::confine::pool;
use crate::limits::TOOL_OUTPUT_MAX;

mod confine;
mod fs;
mod shell;

pub use crate::config::agent_spec::Tool;

/// What running a tool came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Ran {
    /// The output (or `error: …`), bounded.
    Output(String),
    /// The turn was cancelled; a running shell command was killed.
    Cancelled,
}

impl Tool {
    /// The description offered to the model.
    pub fn description(self) -> &'static str {
        match self {
            Tool::ReadFile => "Read a text file of the working directory (at most 16 KiB are returned).",
            Tool::WriteFile => "Create or replace a file of the working directory with the given content.",
            Tool::ListDir => "List a directory of the working directory; directories end with '/'.",
            Tool::SearchText => "Find lines containing a literal text in the files under a directory of the working directory.",
            #[cfg(unix)]
            Tool::Shell => "Run a command in the working directory: a string for `sh -c`, or an argv array.",
            // The model must know which shell reads its string.
            #[cfg(windows)]
            Tool::Shell => "Run a command in the working directory: a string for `cmd.exe /C` (Windows), or an argv array.",
        }
    }

    /// The JSON schema of its arguments.
    pub fn parameters(self) -> Value {
        let path =
            json!({"type": "string", "description": "A path relative to the working directory"});
        match self {
            Tool::ReadFile => {
                json!({"type": "object", "properties": {"path": path}, "required": ["path"]})
            }
            Tool::WriteFile => json!({"type": "object", "properties": {
                "path": path, "content": {"type": "string"}}, "required": ["path", "content"]}),
            Tool::ListDir => json!({"type": "object", "properties": {"path": path}}),
            Tool::SearchText => json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "The literal text to find"},
                "path": path}, "required": ["pattern"]}),
            Tool::Shell => json!({"type": "object", "properties": {
                "command": {"description": "A shell command line, or an argv array",
                    "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
                "timeout_secs": {"type": "integer", "description": "At most 600; default 60"}},
                "required": ["command"]}),
        }
    }
}

/// Runs `tool` with `args` (a JSON object) in `cwd`; a shell command's
/// environment is the minimal base plus `env` (the agent's, without its key
/// variable).
pub async fn run(
    tool: Tool,
    args: &Value,
    (cwd, env): (&Path, &BTreeMap<String, String>),
    cancel: &CancellationToken,
) -> Ran {
    let file_tool = match tool {
        Tool::ReadFile => fs::read_file,
        Tool::WriteFile => fs::write_file,
        Tool::ListDir => fs::list_dir,
        Tool::SearchText => fs::search_text,
        Tool::Shell => {
            return match shell::run((cwd, env), args, cancel).await {
                Some(r) => Ran::Output(bounded(&r.unwrap_or_else(|e| format!("error: {e}")))),
                None => Ran::Cancelled,
            }
        }
    };
    // File system work runs in the bounded agent-files pool, off the
    // runtime's threads (a search may read many files); a cancelled turn
    // stops waiting for it.
    let (cwd, args) = (cwd.to_owned(), args.clone());
    let work = pool::run(pool::Work::AgentFiles, move || Ok(file_tool(&cwd, &args)));
    let result = tokio::select! {
        biased;
        () = cancel.cancelled() => return Ran::Cancelled,
        r = work => r.unwrap_or_else(|e| Err(e.to_string())),
    };
    let text = match result {
        Ok(out) => out,
        Err(e) => format!("error: {e}"),
    };
    Ran::Output(bounded(&text))
}

/// `text` bounded at the tool-output bound, marked when cut.
pub fn bounded(text: &str) -> String {
    bound_text(text, TOOL_OUTPUT_MAX).into_owned()
}

/// A string argument, or an error naming it.
fn str_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, String> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing string argument {name:?}"))
}

/// An optional string argument, defaulting to `default`.
fn str_arg_or<'a>(args: &'a Value, name: &str, default: &'a str) -> Result<&'a str, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("argument {name:?} must be a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_the_config_names_is_offered_with_a_description() {
        for name in Tool::NAMES {
            let tool = Tool::parse(name);
            assert!(tool.is_some_and(|t| !t.description().is_empty()), "{name}");
        }
        assert_eq!(Tool::parse("rm"), None);
    }
}
