//! `zeroclaw chat` without a terminal (stdin and stdout are pipes): prompts
//! line by line, plain text out, against the real daemon and its echo agent.

// Unix only: sends SIGINT to the chat and SIGTERM to the daemon, and a fake daemon listens on a UnixListener.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;

use common::chat::{plain_chat as chat, Chat};
use common::start::{start_echo, write_config, ECHO_ONLY};
use common::{run_cli, DaemonBuilder, TestDir};

#[test]
fn streams_a_turn_with_tool_lines() {
    let env = start_echo();
    let mut c = chat(&env, &["--new"]);
    c.send("::chunk 2");
    c.send("hello world");
    let end = c.wait_out("hello world\n", 0);
    c.send("::tool bash {\"command\":\"ls\"}");
    c.wait_out(
        "[tool bash {\"command\":\"ls\"}]\n[result bash: {\"command\":\"ls\"}]\n",
        end,
    );
    assert!(c.finish().success());
    assert_eq!(
        c.out(),
        "hello world\n[tool bash {\"command\":\"ls\"}]\n[result bash: {\"command\":\"ls\"}]\n"
    );
}

#[test]
fn approvals_are_asked_and_answered() {
    let env = start_echo();
    let mut c = chat(&env, &["--new"]);
    c.send("::approve rm {\"f\":1}");
    let end = c.wait_out("[r]eject (Enter), [e]dit TEXT (", 0);
    c.send("a");
    let end = c.wait_out("[result rm: {\"f\":1}]\n", end);
    // Enter alone rejects.
    c.send("::approve rm {\"f\":2}");
    let end = c.wait_out("s left):\n", end);
    c.send("");
    let end = c.wait_out("[result rm: denied: rejected]\n", end);
    c.send("::approve rm {\"f\":3}");
    let end = c.wait_out("s left):\n", end);
    c.send("e use ls instead");
    c.wait_out("[result rm: denied: replaced: use ls instead]\n", end);
    assert!(c.finish().success());
}

#[test]
fn choices_are_a_menu_and_questions_a_form() {
    let env = start_echo();
    let mut c = chat(&env, &["--new"]);
    c.send("::choose Color? | red | blue");
    let end = c.wait_out("question: Color?", 0);
    let end = c.wait_out("  1) red\n  2) blue\nChoice:\n", end);
    c.send("2");
    let end = c.wait_out("choice: blue\n", end);
    c.send("::ask Name?");
    let end = c.wait_out("Answer:\n", end);
    c.send("Ada");
    let end = c.wait_out("answer: Ada\n", end);
    // Declining is Enter on the required field.
    c.send("::ask Again?");
    let end = c.wait_out("Answer:\n", end);
    c.send("");
    c.wait_out("answer: declined\n", end);
    assert!(c.finish().success());
}

#[test]
fn ctrl_c_cancels_the_running_turn_only() {
    let env = start_echo();
    let mut c = chat(&env, &["--new"]);
    c.send("before\\\n::sleep 30000\\\nafter");
    let end = c.wait_out("before", 0);
    c.signal(libc::SIGINT);
    let end = c.wait_out("[cancelled]\n", end);
    c.wait_err("cancelling the turn");
    c.send("still here");
    c.wait_out("still here\n", end);
    assert!(c.finish().success(), "{}", c.err());
    assert!(!c.out().contains("after"), "{}", c.out());
}

#[test]
fn resuming_shows_the_last_messages() {
    let env = start_echo();
    let mut first = chat(&env, &["--new"]);
    first.send("remember this");
    first.wait_out("remember this\n", 0);
    let id = first.session_id();
    assert!(first.finish().success());

    let mut again = chat(&env, &["--resume", &id]);
    again.wait_err(&format!(
        "session {id} with agent echo (resumed, 2 messages)"
    ));
    again.wait_out("you: remember this\nagent: remember this\n", 0);
    again.send("/history 1");
    again.wait_out("agent: remember this\nagent: remember this\n", 0);
    assert!(again.finish().success());
    // Without an id or --new, the most recent chat session is resumed.
    let mut recent = chat(&env, &[]);
    recent.wait_err(&format!("session {id} with agent echo (resumed"));
    assert!(recent.finish().success());
}

#[test]
fn reconnects_when_the_daemon_restarts() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(&cfg, ECHO_ONLY);
    let d = DaemonBuilder::new().config_dir(&cfg).spawn();
    let mut c = chat(&d, &["--new"]);
    c.send("one");
    let end = c.wait_out("one\n", 0);
    let id = c.session_id();
    d.signal(libc::SIGTERM);
    let mut d = d;
    assert!(d.wait_exit(common::EXIT_TIMEOUT).is_some());
    let d2 = DaemonBuilder::new().config_dir(&cfg).spawn();
    c.send("two");
    c.wait_err("the connection to the daemon was lost; reconnecting…");
    c.wait_err(&format!("reconnected; session {id} resumed"));
    c.wait_out("two\n", end);
    assert!(c.finish().success());
    drop(d2);
}

#[test]
fn no_daemon_is_exit_3() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(&cfg, ECHO_ONLY);
    let mut cmd = std::process::Command::new(common::BIN);
    common::hermetic_env(&mut cmd, dir.path());
    cmd.arg("--config-dir").arg(&cfg).arg("chat");
    let (status, out, err) = run_cli(cmd);
    assert_eq!(status.code(), Some(3), "{err}");
    assert_eq!(out, "");
    assert!(err.contains("no daemon answers at "), "{err}");
    assert!(err.contains("start one with `zeroclaw daemon`"), "{err}");
}

#[test]
fn bad_input_is_refused_or_repaired_never_a_hang() {
    let env = start_echo();
    let mut c = chat(&env, &["--new"]);
    // A 10 MiB paste: refused, read to its end, the chat goes on.
    let mut big = vec![b'x'; 10 * 1024 * 1024];
    big.push(b'\n');
    c.send_bytes(&big);
    c.wait_err("a line of 10485760 bytes was refused: a typed prompt is at most 1048576 bytes");
    c.send_bytes(b"caf\xe9 ok\n");
    c.wait_err("the input was not valid UTF-8; invalid bytes were replaced by U+FFFD");
    let end = c.wait_out("caf\u{fffd} ok\n", 0);
    c.send("/nope");
    c.wait_out("unknown command `/nope`; /help lists them\n", end);
    assert!(c.finish().success());
}

/// A fake daemon that speaks just enough JSON-RPC, then answers a prompt
/// with a garbage line among real updates.
#[test]
fn a_daemon_answering_garbage_is_survived() {
    let dir = TestDir::new();
    let sock = dir.path().join("fake.sock");
    let listener = UnixListener::bind(&sock).expect("bind fake daemon");
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut w = stream.try_clone().expect("clone");
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let req: serde_json::Value = serde_json::from_str(&line).expect("client sends JSON");
            let id = req["id"].clone();
            let result = match req["method"].as_str().unwrap_or_default() {
                "initialize" => serde_json::json!({"protocolVersion": 1}),
                "session/list" => serde_json::json!({"sessions": []}),
                "config/get" => serde_json::json!({"agents": {"echo": {}}}),
                "session/new" => serde_json::json!({"session_id": "s-1", "resumed": false}),
                "session/prompt" => {
                    let _ = w.write_all(b"\xff\xfe this is not json\n");
                    let _ = w.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s-1\",\"type\":\"agent_message_chunk\",\"text\":\"fine\"}}\n");
                    let _ = w.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s-1\",\"type\":\"turn_complete\",\"outcome\":\"completed\",\"content\":\"fine\"}}\n");
                    serde_json::json!({"session_id": "s-1", "stop_reason": "end_turn", "content": "fine"})
                }
                _ => serde_json::json!({}),
            };
            let answer = serde_json::json!({"jsonrpc": "2.0", "result": result, "id": id});
            let _ = w.write_all(format!("{answer}\n").as_bytes());
        }
    });
    let mut cmd = std::process::Command::new(common::BIN);
    common::hermetic_env(&mut cmd, dir.path());
    cmd.env("ZEROCLAW_SOCKET", &sock)
        .arg("--config-dir")
        .arg(dir.config_dir())
        .arg("chat");
    let mut c = Chat::spawn(cmd);
    c.send("hi");
    c.wait_err(
        "the daemon sent a line that is not JSON-RPC (ignored): a line of 19 bytes that is not UTF-8\n",
    );
    c.wait_out("fine\n", 0);
    assert!(c.finish().success(), "{}", c.err());
    assert!(!c.err().contains("panicked"), "{}", c.err());
    let _ = server.join();
}

#[test]
fn slash_commands_list_sessions_and_upload() {
    let env = start_echo();
    let mut c = chat(&env, &["--new"]);
    let id = c.session_id();
    c.send("/sessions");
    let end = c.wait_out(&format!("{id}  acp  echo  live  0 messages  "), 0);
    let file = env.dir.path().join("notes.txt");
    std::fs::write(&file, b"twelve bytes").expect("writing the upload");
    c.send(&format!("/upload {}", file.display()));
    let end = c.wait_out(&format!("uploaded {}: stored at ", file.display()), end);
    let end = c.wait_out("; your next prompt tells the agent\n", end);
    c.send("/help");
    c.wait_out(
        "/upload FILE     upload FILE into the agent's workspace\n",
        end,
    );
    c.send("/quit");
    assert!(c.finish().success());
    let out = c.out();
    let stored = out
        .split(": stored at ")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .unwrap_or_else(|| panic!("no upload line:\n{out}"));
    assert_eq!(
        std::fs::read(stored).ok().as_deref(),
        Some(&b"twelve bytes"[..]),
        "{out}"
    );
}
