//! The ACP test agent of tests/it/acp_backend*.rs, tests/it/acp_terminal.rs and
//! benches/acp_agent.rs: an Agent Client Protocol (v1) agent over stdio
//! whose prompts are directives,
//! one per line, so a test says exactly what the agent does:
//!
//! - `say TEXT` / `think TEXT`: one message / thought chunk;
//! - `tool ID KIND TITLE`: a tool call, an `in_progress` update, then
//!   `completed` with `rawOutput {"ok":true}`;
//! - `ask ID [TITLE]`: a tool call then `session/request_permission` (options `yes`
//!   allow_once, `always` allow_always, `no` reject_once); says
//!   `permission: <optionId>` or `permission: cancelled`; TITLE (default
//!   `Edit ID`) is a JSON string literal, so a test types any bytes as escapes;
//! - `read PATH` / `write PATH TEXT`: `fs/*`; says `read: <content>`,
//!   `wrote` or `fs error <code>`;
//! - `unknown`: a `terminal/create` request; says `terminal error <code>`;
//! - `term JSON` / `termleave JSON` / `termout ID`: `terminal/*` (examples/acp_test_agent/
//!   terminal.rs); `caps`: says `terminal: <clientCapabilities.terminal>`;
//! - `flood N`: N message chunks `.`; `floodbig N SIZE`: N message chunks
//!   of SIZE `x`s, each line flushed, then the text bytes written so far put
//!   in `<cwd>/floodbig.written` (written whole, renamed into place), so a
//!   test sees where the pipe stopped the agent;
//! - `crash CODE`: exits with CODE at once; `garbage`: a non-JSON line;
//!   `oversized`: a 17 MiB line; `badrpc`: JSON that is not JSON-RPC;
//! - `hang`: no answer until cancelled (then `cancelled`); `deaf`: stops
//!   reading stdin and never answers; `readmany N PATH`: N `fs/read_text_file`
//!   requests for PATH, the answers not read (with `deaf` after it, the
//!   client's queue to a deaf agent fills); `sleep MS`: sleeps MS ms (deaf
//!   meanwhile);
//! - `stderr TEXT`: a line on stderr; `stderr-env NAME`: `NAME=<its value in
//!   the agent's environment>` on stderr; `history`: says how many earlier
//!   prompts the session remembers; `pid`: says the process id; `links`:
//!   says the `resource_link` URIs of the prompt;
//! - `plan`: a `plan`, an `available_commands_update`, a
//!   `current_mode_update`, a `usage_update`, a `config_option_update`, a
//!   `session_info_update` and an image chunk (the daemon forwards all but
//!   the image as its extra updates);
//! - `stop REASON`: the stop reason (default `end_turn`);
//! - `env`, `orphan FILE`, `exitkeep CODE`: the agent boundary's probes
//!   (examples/acp_test_agent/boundary.rs).
//!
//! Any other prompt is answered `you said: <prompt>`. Sessions are kept in
//! `$ACP_TEST_STATE_DIR` (default `<cwd>/.acp-test-agent`), so `session/load`
//! works across restarts and replays the history (`user_message_chunk`,
//! `agent_message_chunk`). `ACP_TEST_NO_LOAD=1` hides `loadSession`;
//! `ACP_TEST_AUTH=1` requires `authenticate` (method `test-token`, which needs
//! `ACP_TEST_TOKEN=secret` in the environment) before `session/new`.
//!
//! Plain blocking stdio and `serde_json`, not the official SDK (see
//! docs/decisions.md), so the fault directives can write what no SDK would.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;

use serde_json::{json, Value};

#[path = "acp_test_agent/boundary.rs"]
mod boundary;
#[path = "acp_test_agent/requests.rs"]
mod requests;
#[path = "acp_test_agent/terminal.rs"]
mod terminal;

struct Agent {
    out: BufWriter<std::io::Stdout>,
    lines: std::io::Lines<std::io::StdinLock<'static>>,
    next_id: i64,
    sessions: u64,
    authenticated: bool,
    state_dir: Option<PathBuf>,
    /// A `session/cancel` arrived for the current prompt.
    cancelled: bool,
    /// The client's `clientCapabilities.terminal` at `initialize`.
    client_terminal: Value,
}

type Reply = Result<Value, (i64, String)>;

fn main() {
    let mut agent = Agent {
        out: BufWriter::with_capacity(64 * 1024, std::io::stdout()),
        lines: std::io::stdin().lock().lines(),
        next_id: 0,
        sessions: 0,
        authenticated: std::env::var("ACP_TEST_AUTH").is_err(),
        state_dir: std::env::var_os("ACP_TEST_STATE_DIR").map(PathBuf::from),
        cancelled: false,
        client_terminal: Value::Null,
    };
    while let Some(Ok(line)) = agent.lines.next() {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(method), id) = (msg["method"].as_str(), msg.get("id").cloned()) else {
            continue; // a stray response
        };
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let reply = match method {
            "initialize" => agent.initialize(params),
            "authenticate" => agent.authenticate(params),
            "session/new" => agent.new_session(params),
            "session/load" => agent.load_session(params),
            "session/prompt" => agent.prompt(params),
            "session/cancel" => continue,
            other => Err((-32601, format!("{other} is not supported"))),
        };
        if let Some(id) = id {
            agent.answer(&id, reply);
        }
    }
}

impl Agent {
    fn send(&mut self, v: &Value) {
        let _ = writeln!(self.out, "{v}");
        let _ = self.out.flush();
    }

    fn answer(&mut self, id: &Value, reply: Reply) {
        let v = match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        };
        self.send(&v);
    }

    fn update(&mut self, session: &str, update: Value) {
        let v = json!({"jsonrpc": "2.0", "method": "session/update",
                       "params": {"sessionId": session, "update": update}});
        let _ = writeln!(self.out, "{v}");
    }

    fn chunk(&mut self, session: &str, kind: &str, text: &str) {
        self.update(
            session,
            json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}),
        );
    }

    /// Sends a request and reads until its answer, noting cancellations.
    fn request(&mut self, method: &str, params: Value) -> Option<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        while let Some(Ok(line)) = self.lines.next() {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if msg["method"] == "session/cancel" {
                self.cancelled = true;
            } else if msg["id"] == id && msg.get("method").is_none() {
                return Some(msg);
            }
        }
        None
    }

    fn initialize(&mut self, params: Value) -> Reply {
        let version = params["protocolVersion"].clone();
        self.client_terminal = params["clientCapabilities"]["terminal"].clone();
        let load = std::env::var("ACP_TEST_NO_LOAD").is_err();
        let auth = if std::env::var("ACP_TEST_AUTH").is_ok() {
            json!([{"id": "test-token", "name": "Test token"}])
        } else {
            json!([])
        };
        Ok(json!({
            "protocolVersion": version,
            "agentCapabilities": {"loadSession": load},
            "authMethods": auth,
            "agentInfo": {"name": "acp-test-agent", "version": "1"}
        }))
    }

    fn authenticate(&mut self, params: Value) -> Reply {
        let ok = params["methodId"] == "test-token"
            && std::env::var("ACP_TEST_TOKEN").as_deref() == Ok("secret");
        if !ok {
            return Err((-32000, "authentication failed".into()));
        }
        self.authenticated = true;
        Ok(json!({}))
    }

    fn state_file(&self, cwd: &str, session: &str) -> PathBuf {
        let dir = self
            .state_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(cwd).join(".acp-test-agent"));
        let _ = std::fs::create_dir_all(&dir);
        dir.join(format!("{session}.json"))
    }

    fn new_session(&mut self, params: Value) -> Reply {
        if !self.authenticated {
            return Err((-32000, "Authentication required".into()));
        }
        self.sessions += 1;
        let id = format!("ts-{}-{}", std::process::id(), self.sessions);
        let cwd = params["cwd"]
            .as_str()
            .ok_or((-32602, "cwd".to_owned()))?
            .to_owned();
        let state = json!({"cwd": cwd, "history": []});
        let _ = std::fs::write(self.state_file(&cwd, &id), state.to_string());
        Ok(json!({"sessionId": id}))
    }

    fn load_state(&self, session: &str, cwd: &str) -> Option<Value> {
        let text = std::fs::read_to_string(self.state_file(cwd, session)).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn load_session(&mut self, params: Value) -> Reply {
        let session = params["sessionId"].as_str().unwrap_or("").to_owned();
        let cwd = params["cwd"].as_str().unwrap_or("").to_owned();
        let state = self
            .load_state(&session, &cwd)
            .ok_or((-32002, format!("unknown session {session}")))?;
        let history = state["history"].as_array().cloned().unwrap_or_default();
        for turn in history {
            let (user, agent) = (
                turn[0].as_str().unwrap_or(""),
                turn[1].as_str().unwrap_or(""),
            );
            self.chunk(&session, "user_message_chunk", user);
            self.chunk(&session, "agent_message_chunk", agent);
        }
        let _ = self.out.flush();
        Ok(Value::Null)
    }

    fn prompt(&mut self, params: Value) -> Reply {
        let session = params["sessionId"].as_str().unwrap_or("").to_owned();
        let text: String = params["prompt"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"].as_str())
            .collect();
        self.cancelled = false;
        let mut said = String::new();
        let mut stop = "end_turn".to_owned();
        let cwd = std::env::current_dir()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut state = self
            .load_state(&session, &cwd)
            .unwrap_or(json!({"history": []}));
        let mut directives = 0;
        for line in text.lines() {
            let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
            directives += 1;
            let say = match word {
                "say" => Some(rest.to_owned()),
                "think" => {
                    self.chunk(&session, "agent_thought_chunk", rest);
                    None
                }
                "tool" => {
                    self.tool(&session, rest);
                    None
                }
                "ask" => Some(self.ask(&session, rest)),
                "read" => Some(self.read(&session, rest)),
                "write" => Some(self.write(&session, rest)),
                "unknown" => {
                    let r = self.request(
                        "terminal/create",
                        json!({"sessionId": session, "command": "ls"}),
                    );
                    let code = r.map(|r| r["error"]["code"].clone()).unwrap_or(Value::Null);
                    Some(format!("terminal error {code}"))
                }
                "term" | "termleave" | "termout" => {
                    Some(terminal::directive(self, &session, word, rest))
                }
                "caps" => Some(format!("terminal: {}", self.client_terminal)),
                "flood" => {
                    for _ in 0..rest.parse::<u64>().unwrap_or(0) {
                        self.chunk(&session, "agent_message_chunk", ".");
                    }
                    None
                }
                "floodbig" => {
                    self.flood_big(&session, rest);
                    None
                }
                "readmany" => {
                    let (n, path) = rest.split_once(' ').unwrap_or((rest, ""));
                    for _ in 0..n.parse::<u64>().unwrap_or(0) {
                        self.next_id += 1;
                        let params = json!({"sessionId": session, "path": path});
                        let _ = writeln!(
                            self.out,
                            "{}",
                            json!({"jsonrpc": "2.0",
                            "id": self.next_id, "method": "fs/read_text_file", "params": params})
                        );
                    }
                    None
                }
                "sleep" => {
                    let _ = self.out.flush();
                    let ms = rest.parse().unwrap_or(0);
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                    None
                }
                "crash" => {
                    let _ = self.out.flush();
                    std::process::exit(rest.parse().unwrap_or(1));
                }
                "garbage" => {
                    let _ = writeln!(self.out, "this is not json");
                    None
                }
                "badrpc" => {
                    let _ = writeln!(self.out, "{{\"hello\":1}}");
                    None
                }
                "oversized" => {
                    let big = "x".repeat(17 * 1024 * 1024);
                    let _ = writeln!(self.out, "{{\"jsonrpc\":\"2.0\",\"method\":\"{big}\"}}");
                    None
                }
                "hang" => {
                    let _ = self.out.flush();
                    while !self.cancelled {
                        match self.lines.next() {
                            Some(Ok(l)) if l.contains("session/cancel") => self.cancelled = true,
                            Some(Ok(_)) => {}
                            _ => std::process::exit(0),
                        }
                    }
                    None
                }
                "deaf" => {
                    let _ = self.out.flush();
                    loop {
                        std::thread::sleep(std::time::Duration::from_secs(3600));
                    }
                }
                "plan" => {
                    let plan = json!({"sessionUpdate": "plan", "entries": [
                        {"content": "step", "priority": "high", "status": "pending"}]});
                    self.update(&session, plan);
                    let cmds = json!({"sessionUpdate": "available_commands_update",
                        "availableCommands": [{"name": "web", "description": "Search",
                                               "input": {"hint": "query"}}]});
                    self.update(&session, cmds);
                    for u in [
                        json!({"sessionUpdate": "current_mode_update", "currentModeId": "ask"}),
                        json!({"sessionUpdate": "usage_update", "used": 1200, "size": 200000,
                               "cost": {"amount": 0.25, "currency": "USD"}}),
                        json!({"sessionUpdate": "config_option_update", "configOptions": []}),
                        json!({"sessionUpdate": "session_info_update", "title": "Fix it"}),
                    ] {
                        self.update(&session, u);
                    }
                    let image = json!({"sessionUpdate": "agent_message_chunk",
                        "content": {"type": "image", "data": "", "mimeType": "image/png"}});
                    self.update(&session, image);
                    None
                }
                "stderr" => {
                    eprintln!("{rest}");
                    None
                }
                // Its own environment's value of `rest`, on stderr (a credential leaking).
                "stderr-env" => {
                    eprintln!("{rest}={}", std::env::var(rest).unwrap_or_default());
                    None
                }
                "history" => {
                    let n = state["history"].as_array().map_or(0, Vec::len);
                    Some(format!("history: {n}"))
                }
                "pid" => Some(format!("pid: {}", std::process::id())),
                "links" => {
                    let uris: Vec<&str> = params["prompt"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|b| b["type"] == "resource_link")
                        .filter_map(|b| b["uri"].as_str())
                        .collect();
                    Some(format!("links: {}", uris.join(" ")))
                }
                "stop" => {
                    stop = rest.to_owned();
                    None
                }
                w @ ("env" | "orphan" | "exitkeep") => {
                    let _ = self.out.flush();
                    boundary::directive(w, rest)
                }
                _ => {
                    directives -= 1;
                    None
                }
            };
            if let Some(s) = say {
                self.chunk(&session, "agent_message_chunk", &s);
                said.push_str(&s);
            }
            if self.cancelled {
                break;
            }
        }
        if directives == 0 {
            said = format!("you said: {text}");
            self.chunk(&session, "agent_message_chunk", &said);
        }
        let _ = self.out.flush();
        if let Some(h) = state["history"].as_array_mut() {
            h.push(json!([text, said]));
        }
        let _ = std::fs::write(self.state_file(&cwd, &session), state.to_string());
        if self.cancelled {
            stop = "cancelled".into();
        }
        Ok(json!({"stopReason": stop}))
    }

    /// `floodbig N SIZE`: one line built once, written N times.
    fn flood_big(&mut self, session: &str, rest: &str) {
        let (n, size) = rest.split_once(' ').unwrap_or((rest, "0"));
        let (n, size): (u64, usize) = (n.parse().unwrap_or(0), size.parse().unwrap_or(0));
        let content = json!({"type": "text", "text": "x".repeat(size)});
        let update = json!({"sessionUpdate": "agent_message_chunk", "content": content});
        let line = json!({"jsonrpc": "2.0", "method": "session/update",
                          "params": {"sessionId": session, "update": update}});
        let (line, file) = (format!("{line}\n"), PathBuf::from("floodbig.written"));
        for i in 1..=n {
            if self
                .out
                .write_all(line.as_bytes())
                .and_then(|()| self.out.flush())
                .is_err()
            {
                std::process::exit(1);
            }
            let _ = std::fs::write("floodbig.tmp", (i * size as u64).to_string());
            let _ = std::fs::rename("floodbig.tmp", &file);
        }
    }
}
