//! `zeroclaw acp`: the bridge editors launch, driven by a real
//! third-party ACP client, the official Python SDK (tests/acp_bridge/editor.py,
//! installed by tests/it/common/py_editor.rs), over the bridge's stdio, in
//! front of a real daemon with real SQLite: new, a streamed prompt, the
//! permission round trip, cancel, load with its exact replay, resume, list,
//! two editors on one session, the editor killed mid-turn, the daemon
//! killed mid-turn, and the whole chain to a hosted ACP agent. Every
//! scenario checks that the bridge's stdout held nothing but JSON-RPC
//! frames and that it exited 0 when the editor closed stdin. One test
//! without the SDK gives the bridge a pipe, a socket and a file as stdout.

// Unix only: the official Python ACP SDK in a venv (tests/it/common/py_editor.rs) and `zeroclaw stop` (SIGTERM).

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::acp::{echo_config, AcpEnv};
use common::acp_agent::acp_config;
use common::py_editor::{self, Played};
use serde_json::{json, Value};

/// The venv's python, or skip the test.
macro_rules! python {
    () => {
        match py_editor::python() {
            Ok(p) => p,
            Err(why) => skip_test!("no Python ACP SDK ({why})"),
        }
    };
}

fn play(py: &Path, env: &AcpEnv, agent: &str, scenario: &str, args: &[&str]) -> Played {
    py_editor::play(py, &env.config_dir(), agent, scenario, args, |tag| {
        panic!("unexpected WAIT {tag}")
    })
}

fn chunk(kind: &str, text: &str) -> Value {
    json!([kind, text])
}

/// The transcript rows of `sid` as (role, kind, content), read on the daemon's socket.
fn rows(env: &AcpEnv, sid: &str) -> Vec<(String, String, String)> {
    let mut c = env.rpc();
    let r = c.ok(
        "session/messages",
        json!({"session_id": sid, "chat_mode": "acp"}),
    );
    r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let s = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
            (s("role"), s("kind"), s("content"))
        })
        .collect()
}

#[test]
fn initialize_new_streamed_prompt_and_list() {
    let py = python!();
    let env = AcpEnv::new(&echo_config(""));
    let p = play(&py, &env, "echo", "basic", &[]);
    assert_eq!(
        p.get("init")["result"],
        json!({
            "protocolVersion": 1,
            "agentCapabilities": {
                "auth": {},
                "loadSession": true,
                "mcpCapabilities": {"acp": false, "http": false, "sse": false},
                "promptCapabilities": {"audio": false, "embeddedContext": true, "image": true},
                "sessionCapabilities": {"close": {}, "list": {}, "resume": {}},
            },
            "agentInfo": {"name": "zeroclaw", "title": "ZeroClaw", "version": common::VERSION},
            "authMethods": [],
        })
    );
    let sid = p.get("new")["session"].as_str().unwrap().to_owned();
    let turn = p.get("turn");
    assert_eq!(turn["stop"], "end_turn");
    assert_eq!(
        turn["updates"],
        json!([
            chunk("agent_message_chunk", "Hello"),
            chunk("agent_thought_chunk", "hm"),
            ["tool_call", "tc_1", "echo", "in_progress", {"text": "x"}],
            ["tool_call_update", "tc_1", "completed", "{\"text\":\"x\"}"],
            chunk("agent_message_chunk", "\nBye"),
        ])
    );
    // Titled by the first line of the first prompt.
    assert_eq!(p.get("list")["sessions"], json!([[sid, "Hello"]]));
    p.assert_stdout_clean(1);
    // A durable session of the daemon's: what `zeroclaw chat --resume` and
    // every other client read.
    let prompt = "Hello\n::think hm\n::tool echo {\"text\":\"x\"}\nBye";
    let r = rows(&env, &sid);
    let kinds: Vec<(&str, &str)> = r.iter().map(|(a, b, _)| (a.as_str(), b.as_str())).collect();
    assert_eq!(
        kinds,
        [
            ("user", "message"),
            ("assistant", "message"),
            ("assistant", "tool_call"),
            ("tool", "tool_result"),
            ("assistant", "message"),
        ]
    );
    assert_eq!(r[0].2, prompt);
}

#[test]
fn permission_round_trip() {
    let py = python!();
    let env = AcpEnv::new(&echo_config(""));
    let p = play(&py, &env, "echo", "permission", &[]);
    let options = json!([
        ["allow_once", "allow_once"],
        ["allow_always", "allow_always"],
        ["reject", "reject_once"]
    ]);
    let allowed = p.get("allowed");
    assert_eq!(allowed["stop"], "end_turn");
    assert_eq!(
        allowed["permissions"],
        json!([{"tool": "write_file", "toolCallId": "tc_1", "options": options}])
    );
    assert_eq!(
        allowed["updates"],
        json!([
            ["tool_call", "tc_1", "write_file", "in_progress", {"path": "a"}],
            ["tool_call_update", "tc_1", "completed", "{\"path\":\"a\"}"],
        ])
    );
    let rejected = p.get("rejected");
    assert_eq!(rejected["permissions"][0]["tool"], "rm");
    assert_eq!(
        rejected["updates"][1],
        json!(["tool_call_update", "tc_1", "completed", "denied: rejected"])
    );
    // A cancelled permission request is a rejection, never a yes.
    assert_eq!(
        p.get("cancelled")["updates"][1],
        json!(["tool_call_update", "tc_1", "completed", "denied: rejected"])
    );
    p.assert_stdout_clean(1);
}

#[test]
fn questions_reach_an_editor_that_answers_forms_and_never_hang_the_others() {
    let py = python!();
    let env = AcpEnv::new(&echo_config(""));
    let p = play(&py, &env, "echo", "ask", &[]);
    let asks = p.all("ask");
    assert_eq!(
        asks[0],
        &json!({"k": "ask", "editor": "form", "stop": "end_turn", "questions": ["Continue?"],
                "updates": [chunk("agent_message_chunk", "answer: yes")]})
    );
    assert_eq!(
        asks[1],
        &json!({"k": "ask", "editor": "plain", "stop": "end_turn", "questions": [],
                // Echo's 16-character chunks.
                "updates": [chunk("agent_message_chunk", "answer: unavaila"), chunk("agent_message_chunk", "ble")]})
    );
    p.assert_stdout_clean(2);
}

#[test]
fn cancel_mid_turn() {
    let py = python!();
    let env = AcpEnv::new(&echo_config(""));
    let p = play(&py, &env, "echo", "cancel", &[]);
    assert_eq!(
        p.get("cancel"),
        &json!({"k": "cancel", "stop": "cancelled", "partial": true})
    );
    assert_eq!(
        p.get("after"),
        &json!({"k": "after", "stop": "end_turn", "updates": [chunk("agent_message_chunk", "after")]})
    );
    p.assert_stdout_clean(1);
}

/// The replay of the session `prepare` makes, in order.
fn prepared_replay() -> Value {
    json!([
        chunk("user_message_chunk", "first prompt\nsecond line"),
        chunk("agent_message_chunk", "first prompt\nsecond line"),
        chunk("user_message_chunk", "::tool echo {\"text\":\"x\"}\ndone"),
        ["tool_call", "tc_1", "echo", "in_progress", {"text": "x"}],
        ["tool_call_update", "tc_1", "completed", "{\"text\":\"x\"}"],
        chunk("agent_message_chunk", "done"),
    ])
}

#[test]
fn load_replays_the_transcript_in_order_exactly_once() {
    let py = python!();
    let mut env = AcpEnv::new(&echo_config(""));
    let prep = play(&py, &env, "echo", "prepare", &[]);
    prep.assert_stdout_clean(1);
    let sid = prep.get("prepared")["session"].as_str().unwrap().to_owned();
    // Still live (the first editor quit, the session did not): attached.
    let p = play(&py, &env, "echo", "load", &[&sid]);
    assert_eq!(
        p.get("load"),
        &json!({"k": "load", "result": {}, "updates": prepared_replay()})
    );
    assert_eq!(
        p.get("again")["updates"],
        json!([chunk("agent_message_chunk", "again")])
    );
    p.assert_stdout_clean(1);
    // After a restart the session is not live: resumed by session/new,
    // replayed the same, each load once.
    env.restart();
    let p = play(&py, &env, "echo", "load_twice", &[&sid]);
    let mut replay = prepared_replay();
    let more = replay.as_array_mut().unwrap();
    more.push(chunk("user_message_chunk", "again"));
    more.push(chunk("agent_message_chunk", "again"));
    let loads = p.all("load");
    assert_eq!(loads.len(), 2);
    for (n, l) in loads.iter().enumerate() {
        assert_eq!(l["n"], n + 1);
        assert_eq!(l["updates"], replay, "load {}", n + 1);
    }
    // ACP's "resource not found" for an unknown id, and nothing created.
    assert_eq!(p.get("missing")["error"], -32002);
    let list = env.rpc().ok("session/list", json!({"chat_mode": "acp"}));
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1, "{list}");
    p.assert_stdout_clean(1);
}

#[test]
fn resume_without_replay_and_list_with_titles() {
    let py = python!();
    let env = AcpEnv::new(&echo_config(""));
    let sid = play(&py, &env, "echo", "prepare", &[]).get("prepared")["session"]
        .as_str()
        .unwrap()
        .to_owned();
    let p = play(&py, &env, "echo", "resume_list", &[&sid]);
    assert_eq!(p.get("resume")["updates"], json!([]));
    assert_eq!(p.get("list")["sessions"], json!([[sid, "first prompt"]]));
    p.assert_stdout_clean(1);
}

#[test]
fn two_editors_see_the_same_stream() {
    let py = python!();
    let env = AcpEnv::new(&echo_config(""));
    let p = play(&py, &env, "echo", "two_editors", &[]);
    let s = p.get("streams");
    assert_eq!(s["stop"], "end_turn");
    let expected = json!([
        chunk("agent_message_chunk", "one"),
        ["tool_call", "tc_1", "echo", "in_progress", {"n": 1}],
        ["tool_call_update", "tc_1", "completed", "{\"n\":1}"],
        chunk("agent_message_chunk", "\ntwo"),
    ]);
    assert_eq!(s["a"], expected);
    assert_eq!(s["c"], expected);
    p.assert_stdout_clean(2);
}

/// Waits until `sid`'s transcript has `n` rows (a turn the daemon finishes alone).
fn wait_rows(env: &AcpEnv, sid: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = rows(env, sid).len();
        if got >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the turn did not finish ({got} rows)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn editor_killed_mid_turn_then_load_shows_everything() {
    let py = python!();
    let env = AcpEnv::new(&echo_config(""));
    let p = play(&py, &env, "echo", "editor_killed", &[]);
    let sid = p.get("killed")["session"].as_str().unwrap().to_owned();
    // The turn went on in the daemon without its editor.
    wait_rows(&env, &sid, 2);
    let p = play(&py, &env, "echo", "load", &[&sid]);
    assert_eq!(
        p.get("load")["updates"],
        json!([
            chunk("user_message_chunk", "::delay 50\n::chunk 1\n0123456789"),
            chunk("agent_message_chunk", "0123456789"),
        ])
    );
    p.assert_stdout_clean(1);
}

#[test]
fn daemon_killed_mid_turn_fails_the_prompt_then_load_shows_the_marker_once() {
    let py = python!();
    let mut env = AcpEnv::new(&echo_config(""));
    let config_dir = env.config_dir();
    let p = py_editor::play(
        &py,
        &config_dir,
        "echo",
        "daemon_killed",
        &[],
        |tag| match tag {
            "kill" => env.kill9(),
            "restarted" => env.start(),
            other => panic!("unexpected WAIT {other}"),
        },
    );
    let failed = p.get("failed");
    assert_eq!(failed["result"]["error"], -32603, "{failed}");
    let msg = failed["result"]["message"].as_str().unwrap();
    assert!(msg.contains("the daemon stopped during the turn"), "{msg}");
    let seen = failed["seen"].as_str().unwrap();
    let prompt = "::delay 100\n::chunk 1\n0123456789";
    let loads = p.all("load");
    assert_eq!(loads.len(), 2);
    for l in &loads {
        let u = l["updates"].as_array().unwrap();
        assert_eq!(u.len(), 3, "{l}");
        assert_eq!(u[0], chunk("user_message_chunk", prompt));
        // What was saved: at least what the editor saw (saved before it is
        // sent), a prefix of the whole reply.
        assert_eq!(u[1][0], "agent_message_chunk");
        let saved = u[1][1].as_str().unwrap();
        assert!(
            saved.starts_with(seen) && "0123456789".starts_with(saved),
            "{saved} / {seen}"
        );
        assert_eq!(u[2], chunk("agent_message_chunk", "[Turn interrupted]"));
    }
    assert_eq!(loads[0]["updates"], loads[1]["updates"]);
    assert_eq!(p.get("again")["stop"], "end_turn");
    p.assert_stdout_clean(1);
}

#[test]
fn the_whole_chain_to_a_hosted_acp_agent() {
    let py = python!();
    let env = AcpEnv::new(&acp_config("", ""));
    let p = play(&py, &env, "acp", "hosted", &[]);
    let h = p.get("hosted");
    assert_eq!(h["stop"], "end_turn");
    assert_eq!(
        h["permissions"],
        json!([{"tool": "edit", "toolCallId": "e1", "options": [["allow_once", "allow_once"], ["allow_always", "allow_always"], ["reject", "reject_once"]]}])
    );
    assert_eq!(
        h["updates"],
        json!([
            chunk("agent_message_chunk", "hello"),
            chunk("agent_thought_chunk", "hmm"),
            ["tool_call", "t1", "read", "in_progress", {"kind": "read", "rawInput": {"arg": 1}, "status": "pending", "title": "Reading"}],
            ["tool_call_update", "t1", "completed", "{\"content\":[{\"content\":{\"text\":\"done\",\"type\":\"text\"},\"type\":\"content\"}],\"rawOutput\":{\"ok\":true},\"status\":\"completed\"}"],
            ["tool_call", "e1", "edit", "in_progress", {"kind": "edit", "status": "pending", "title": "Edit e1"}],
            ["tool_call_update", "e1", "completed", "{\"status\":\"completed\"}"],
            chunk("agent_message_chunk", "permission: yes"),
            ["plan", {"entries": [{"content": "step", "priority": "high", "status": "pending"}]}],
            ["available_commands_update", {"availableCommands": [{"description": "Search", "input": {"hint": "query"}, "name": "web"}]}],
            ["current_mode_update", {"currentModeId": "ask"}],
            ["usage_update", {"cost": {"amount": 0.25, "currency": "USD"}, "size": 200000, "used": 1200}],
            ["config_option_update", {"configOptions": []}],
            ["session_info_update", {"title": "Fix it"}],
        ])
    );
    p.assert_stdout_clean(1);
}

/// Stops the daemon the bridge started (`zeroclaw stop`), also when the test fails.
struct StopOnDrop(PathBuf);

impl StopOnDrop {
    fn stop(&self) -> (Option<i32>, String, String) {
        let mut cmd = std::process::Command::new(common::BIN);
        common::hermetic_env(&mut cmd, &self.0);
        cmd.arg("--config-dir").arg(&self.0).arg("stop");
        common::run_cli_code(cmd)
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[test]
fn the_bridge_starts_a_daemon_that_outlives_it() {
    let py = python!();
    let mut env = AcpEnv::new(&echo_config(""));
    env.kill9();
    let started = StopOnDrop(env.config_dir());
    // No daemon: the bridge starts one (detached, not ephemeral).
    let p = play(&py, &env, "echo", "prepare", &[]);
    p.assert_stdout_clean(1);
    assert!(
        p.stderr.contains("no daemon answered; started one"),
        "{}",
        p.stderr
    );
    // It is still there after the editor and the bridge are gone.
    let (code, out, err) = started.stop();
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("stopped the daemon"), "{out}");
}

/// A prompt whose frame to the daemon would be over the daemon's 8 MiB
/// frame limit (a 7.5 MiB embedded file grows by a third as base64) is not
/// sent: the editor's request fails at once with invalid params naming the
/// limit, and the session goes on.
#[test]
fn a_prompt_over_the_daemons_frame_limit_fails_at_once() {
    let py = python!();
    let env = AcpEnv::new(&echo_config(""));
    let size = (7 * 1024 + 512) * 1024;
    let p = play(&py, &env, "echo", "too_large", &[&size.to_string()]);
    let big = p.get("big");
    assert_eq!(big["error"], -32602, "{big}\nstderr:\n{}", p.stderr);
    let msg = big["message"].as_str().unwrap_or_default();
    assert!(msg.contains("prompt too large"), "{msg}");
    assert!(msg.contains("8388608"), "{msg}");
    assert_eq!(big["data"]["reason"], "frame_too_large", "{big}");
    assert_eq!(big["data"]["max_frame_bytes"], 8388608, "{big}");
    assert!(big["seconds"].as_f64().is_some_and(|s| s < 10.0), "{big}");
    assert_eq!(p.get("after")["stop"], "end_turn");
    p.assert_stdout_clean(1);
}

/// A daemon the bridge starts that cannot come up (config.toml does not
/// parse): the editor's request fails with the daemon's own reason, not
/// only "no daemon answers".
#[test]
fn a_daemon_that_cannot_start_tells_the_editor_why() {
    let py = python!();
    let env = AcpEnv::stopped("schema_version = 1\n\n[agents.echo\nbackend = \"echo\"\n");
    let started = StopOnDrop(env.config_dir());
    let p = play(&py, &env, "echo", "new_fails", &[]);
    let new = p.get("new");
    assert_eq!(new["error"], -32603, "{new}\nstderr:\n{}", p.stderr);
    let msg = new["message"].as_str().unwrap_or_default();
    assert!(msg.contains("the daemon could not start"), "{msg}");
    // Not the exact wording of the parse error: that it names the file and the place.
    assert!(msg.contains("config.toml") && msg.contains("line"), "{msg}");
    assert!(!msg.chars().any(char::is_control), "{msg:?}");
    assert!(msg.len() < 4096, "{msg}");
    p.assert_stdout_clean(1);
    drop(started);
}

/// `zeroclaw acp` writing to `stdout`, asked for a 1,000-chunk turn; its
/// stdin stays open (closing it ends the bridge) until the caller saw the
/// answer.
fn bridge_with_stdout(
    env: &AcpEnv,
    stdout: std::process::Stdio,
) -> (std::process::Child, std::process::ChildStdin) {
    use std::io::Write;
    let mut child = std::process::Command::new(common::BIN)
        .arg("--config-dir")
        .arg(env.config_dir())
        .args(["acp", "--agent", "echo"])
        .stdin(std::process::Stdio::piped())
        .stdout(stdout)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"/\",\"mcpServers\":[]}}\n")
        .unwrap();
    // The prompt needs the session id: it is the only one this daemon has.
    let deadline = Instant::now() + Duration::from_secs(20);
    let sid = loop {
        if let Some(sid) = env.rpc().live_ids().into_iter().next() {
            break sid;
        }
        assert!(Instant::now() < deadline, "no session was created");
        std::thread::sleep(Duration::from_millis(20));
    };
    let prompt = json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId": sid, "prompt":[{"type":"text","text":"::chunk 1\n::repeat 1000 x"}]}});
    stdin.write_all(format!("{prompt}\n").as_bytes()).unwrap();
    (child, stdin)
}

/// The prompt's answer is in `out`.
fn answered(out: &str) -> bool {
    out.lines().any(|l| l.starts_with(r#"{"id":3,"#))
}

/// Every line is a frame; the turn's 1,000 chunks, then its answer.
fn assert_streamed(out: &str) {
    let frames: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a frame: {l:?}: {e}")))
        .collect();
    let chunks = frames
        .iter()
        .filter(|f| f["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|f| f["params"]["update"]["content"]["text"].as_str().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(chunks, vec!["x"; 1000]);
    let answer = frames.iter().position(|f| f["id"] == 3).expect("no answer");
    assert_eq!(frames[answer]["result"]["stopReason"], "end_turn");
    let last_chunk = frames
        .iter()
        .rposition(|f| f["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .unwrap();
    assert!(last_chunk < answer, "the answer overtook a chunk");
}

/// Reads `r` to the prompt's answer.
fn read_to_answer(r: impl std::io::Read) -> String {
    use std::io::BufRead;
    let mut r = std::io::BufReader::new(r);
    let mut out = String::new();
    while !answered(&out) {
        assert!(r.read_line(&mut out).unwrap() > 0, "stdout ended: {out}");
    }
    out
}

/// Stdout is written the fast way when it is a pipe or a socket (Node
/// gives its children socket pairs) and through the blocking pool when it
/// is a file; each carries the whole stream, in order.
#[test]
fn a_pipe_a_socket_and_a_file_as_stdout_carry_the_whole_stream() {
    for kind in ["pipe", "socket", "file"] {
        let env = AcpEnv::new(&echo_config(""));
        let (out, mut child) = match kind {
            "pipe" => {
                let (mut child, stdin) = bridge_with_stdout(&env, std::process::Stdio::piped());
                let out = read_to_answer(child.stdout.take().unwrap());
                drop(stdin);
                (out, child)
            }
            "socket" => {
                let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
                let fd = std::os::fd::OwnedFd::from(theirs);
                let (child, stdin) = bridge_with_stdout(&env, fd.into());
                let out = read_to_answer(ours);
                drop(stdin);
                (out, child)
            }
            _ => {
                let path = env.config_dir().join("bridge-stdout");
                let file = std::fs::File::create(&path).unwrap();
                let (child, stdin) = bridge_with_stdout(&env, file.into());
                let deadline = Instant::now() + Duration::from_secs(20);
                let out = loop {
                    let out = std::fs::read_to_string(&path).unwrap();
                    if answered(&out) {
                        break out;
                    }
                    assert!(Instant::now() < deadline, "no answer: {out}");
                    std::thread::sleep(Duration::from_millis(20));
                };
                drop(stdin);
                (out, child)
            }
        };
        assert!(child.wait().unwrap().success(), "{kind}");
        assert_streamed(&out);
    }
}
