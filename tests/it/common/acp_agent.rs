//! Helpers of the hosted-ACP-agent tests (tests/it/acp_backend*.rs): the test
//! agent binary (examples/acp_test_agent.rs), configs that host it, and the
//! session calls those tests make.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{json, Value};

use super::acp::{AcpEnv, Rpc, Turn};
use super::BIN;

// Its configs were the first to need it; it lives in mod.rs now.
#[allow(unused_imports)]
pub use super::toml_str;

/// `target/debug/examples/acp_test_agent`, built once if `cargo test` did
/// not build it already (`cargo test --test NAME` builds no examples) or
/// built it from an older source (a stale agent fails tests it should pass).
/// Where the test cannot run cargo (a Windows build under Wine, which
/// cannot start a Linux program), the agent must be built ahead, as
/// scripts/windows.sh does.
pub fn agent_bin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let bin = PathBuf::from(BIN);
            let path = bin
                .parent()
                .expect("target dir")
                .join("examples")
                .join(format!("acp_test_agent{}", std::env::consts::EXE_SUFFIX));
            let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
            let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
            let newest = [
                "acp_test_agent.rs",
                "acp_test_agent/boundary.rs",
                "acp_test_agent/requests.rs",
                "acp_test_agent/terminal.rs",
            ]
            .iter()
            .map(|s| modified(&examples.join(s)))
            .max()
            .flatten();
            if modified(&path) < newest {
                let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
                let st = Command::new(cargo)
                    .args(["build", "--example", "acp_test_agent"])
                    .current_dir(env!("CARGO_MANIFEST_DIR"))
                    .status()
                    .unwrap_or_else(|e| {
                        panic!(
                            "{} is missing or older than its source, and cargo cannot be \
                             run here to build it ({e}): build it first with \
                             `cargo build --example acp_test_agent`",
                            path.display()
                        )
                    });
                assert!(st.success(), "building the ACP test agent failed");
            }
            path
        })
        .clone()
}

/// A config with the `echo` agent and the test agent as `acp`, with `extra`
/// lines in its table (`env = {…}`, `timeout_secs = …`) and `daemon` lines.
pub fn acp_config(agent_lines: &str, daemon_lines: &str) -> String {
    acp_config_for(&agent_bin(), agent_lines, daemon_lines)
}

/// Like [`acp_config`], hosting the agent binary `agent` as `acp`.
pub fn acp_config_for(agent: &std::path::Path, agent_lines: &str, daemon_lines: &str) -> String {
    format!(
        "schema_version = 1\n\n[daemon]\n{daemon_lines}\n\n[agents.echo]\nbackend = \"echo\"\n\n\
         [agents.acp]\nbackend = \"acp\"\ncommand = [{}]\n{agent_lines}\n",
        toml_str(&agent.to_string_lossy())
    )
}

/// `session/new` of the `acp` agent in `mode` (`chat` or `acp`).
pub fn new_acp_session(rpc: &mut Rpc, id: &str, mode: &str) -> Value {
    rpc.ok(
        "session/new",
        json!({"agent_alias": "acp", "session_id": id, "chat_mode": mode}),
    )
}

/// A client of `env` that opened session `s-1` of agent `acp` in `mode`.
pub fn acp_client(env: &AcpEnv, mode: &str) -> Rpc {
    let mut rpc = env.rpc();
    new_acp_session(&mut rpc, "s-1", mode);
    rpc
}

/// A daemon hosting the test agent with `agent_lines`, a client and the
/// workspace of its session `s-1` (chat mode).
pub fn open_acp(agent_lines: &str) -> (AcpEnv, Rpc, String) {
    let e = AcpEnv::new(&acp_config(agent_lines, ""));
    let mut rpc = e.rpc();
    let ws = new_acp_session(&mut rpc, "s-1", "chat")["workspace_dir"]
        .as_str()
        .expect("workspace_dir")
        .to_owned();
    (e, rpc, ws)
}

/// The update params of `turn` without `turn_complete`.
pub fn events(turn: &Turn) -> Vec<Value> {
    turn.updates()
        .into_iter()
        .filter(|u| u["type"] != "turn_complete")
        .collect()
}

/// `{"sessionId": sid, "type": "agent_message_chunk", "text": text}`.
pub fn say(sid: &str, text: &str) -> Value {
    json!({"sessionId": sid, "type": "agent_message_chunk", "text": text})
}

/// The `plan` update both test agents send for their `plan` directive.
pub fn plan_step(sid: &str) -> Value {
    json!({"sessionId": sid, "type": "plan",
           "entries": [{"content": "step", "priority": "high", "status": "pending"}]})
}

/// Reads frames (stashing them) until a `session/update` whose params
/// satisfy `pred`; returns those params.
pub fn wait_update(rpc: &mut Rpc, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + super::RECV_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = rpc.try_recv_line(left).unwrap_or_else(|e| {
            panic!(
                "no such update: {}; stashed {:?}",
                super::describe(&e),
                rpc.stash
            )
        });
        let f = super::rpc::Frame::parse(line);
        let hit = f.is_update() && pred(f.params());
        let params = f.params().clone();
        rpc.stash.push_back(f);
        if hit {
            return params;
        }
    }
}

/// Asserts that `turn` failed `agent_failed` with exactly `message` (its
/// error and its `turn_complete`).
#[track_caller]
pub fn turn_agent_failed(turn: &Turn, message: &str) {
    super::errors::agent_failed(turn.error(), message);
    assert_eq!(turn.turn_complete()["outcome"], "failed");
    assert_eq!(turn.turn_complete()["reason"], message);
}

/// What the test agent's `pid` directive says (`pid: <n>`) in session `sid`.
#[track_caller]
pub fn pid_of(rpc: &mut Rpc, sid: &str) -> String {
    rpc.prompt_ok(sid, "pid").text()
}
