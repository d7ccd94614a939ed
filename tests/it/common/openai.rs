//! Daemons whose agent `m` is `backend = "openai"` against a scripted
//! [`OpenAiServer`], and the approval round trip of its tool calls.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::openai_server::OpenAiServer;
use super::sessions::Frame;
use super::start::{write_config, Env};
use super::{Client, DaemonBuilder, TestDir};

/// The API key variable the test daemons get, and its value.
pub const KEY_ENV: &str = "ZC_TEST_OPENAI_KEY";
pub const KEY: &str = "sk-zc-test-0123456789";

/// `[agents.m]` against `server`, with `extra` keys (TOML lines).
pub fn config(server: &OpenAiServer, extra: &str) -> String {
    format!(
        "schema_version = 1\n\n[agents.m]\nbackend = \"openai\"\nmodel = \"test-model\"\n\
         base_url = \"{}\"\napi_key_env = \"{KEY_ENV}\"\nretry_backoff_ms = 10\n{extra}\n",
        server.base_url()
    )
}

/// A daemon with this config and the API key in its environment.
pub fn start(config: &str) -> Env {
    start_in(TestDir::new(), config)
}

/// [`start`] in `dir` (a restart reuses the directory).
pub fn start_in(dir: TestDir, config: &str) -> Env {
    let cfg = dir.config_dir();
    write_config(&cfg, config);
    let daemon = DaemonBuilder::new()
        .config_dir(&cfg)
        .env(KEY_ENV, KEY)
        .spawn();
    Env { daemon, dir }
}

/// A scripted server, a daemon whose agent `m` is against it (`extra`
/// keys), and a client of it that opened session `s-1` of `m` in `mode`;
/// the last is the session's workspace dir.
pub fn session(extra: &str, mode: &str) -> (OpenAiServer, Env, Client, PathBuf) {
    let server = OpenAiServer::start();
    let d = start(&config(&server, extra));
    let mut c = d.client();
    let r = c.new_session_of("m", "s-1", mode);
    let ws = PathBuf::from(r["workspace_dir"].as_str().expect("a workspace_dir"));
    (server, d, c, ws)
}

/// Reads up to the next `approval_request`; returns the frames and its params.
pub fn until_approval(c: &mut Client) -> (Vec<Frame>, Value) {
    let frames = c.until_update(|u| u["type"] == "approval_request");
    let req = frames
        .last()
        .map(|f| f.params().clone())
        .unwrap_or_default();
    (frames, req)
}

/// Answers approval `req`; returns the id of the `session/approve` request.
pub fn decide(c: &mut Client, sid: &str, req: &Value, decision: &str, edit: Option<&str>) -> Value {
    let mut params =
        json!({"session_id": sid, "request_id": req["requestId"], "decision": decision});
    if let Some(r) = edit {
        params["replacement"] = json!(r);
    }
    c.send("session/approve", params)
}

/// The `role`s and `content`s of a recorded request's messages.
pub fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

/// `updates` with consecutive chunks of one stream joined: the backend
/// sends the deltas it has already received as one chunk, so where chunks
/// split depends on timing; their text and order do not.
pub fn merged(updates: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(updates.len());
    for u in updates {
        let joinable = |t: &Value| t == "agent_message_chunk" || t == "agent_thought_chunk";
        if let Some(last) = out.last_mut() {
            if joinable(&u["type"]) && last["type"] == u["type"] {
                let text = format!(
                    "{}{}",
                    last["text"].as_str().unwrap_or_default(),
                    u["text"].as_str().unwrap_or_default()
                );
                last["text"] = json!(text);
                continue;
            }
        }
        out.push(u);
    }
    out
}
