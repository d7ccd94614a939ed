//! One sanitizer between the daemon and a terminal: the
//! same hostile text — OSC 52 (clipboard), OSC 0 (window title), a CSI erase
//! and a `\r` overwrite forging `ls -la (read only)`, C1 CSI, a bidi
//! override, NUL, DEL — sent by an agent down every path `zeroclaw chat`,
//! `zeroclaw rpc` and `zeroclaw logs` print, reaches the terminal only made
//! visible (docs/decisions.md, "What a client shows of the daemon's text").

// Unix only: drives `zeroclaw chat` in a pseudo-terminal under tmux.

use crate::common;

use common::acp_agent::acp_config;
use common::chat::{plain_chat as chat, Chat};
use common::chat_tty::chat_tty;
use common::start::{start, start_args, start_echo};
use common::tty::available;
use common::{run_cli, Daemon};

/// What an agent writes.
const HOSTILE: &str = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\x1b[2K\rls -la (read only)\u{9b}2J\u{202e}exe.txt\0\x7f";
/// What a person sees of it.
const SHOWN: &str =
    "␛]52;c;cm0gLXJmIH4=␇␛]0;pwned␇␛[2K␍ls -la (read only)<U+009B>2J<U+202E>exe.txt␀␡";
/// A tool's input: JSON strings may hold C1, bidi and DEL raw.
const INPUT: &str = "{\"c\":\"\u{9b}\u{202e}\u{7f}\"}";
const INPUT_SHOWN: &str = "{\"c\":\"<U+009B><U+202E>␡\"}";

/// A character a terminal would act on or that reorders or hides text.
fn acts_on_a_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

#[track_caller]
fn assert_inert(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let found: Vec<char> = text.chars().filter(|c| acts_on_a_terminal(*c)).collect();
    assert!(found.is_empty(), "{what} wrote {found:?}:\n{text}");
}

#[track_caller]
fn assert_chat_inert(c: &Chat) {
    assert_inert("chat's stdout", &c.stdout.lock().unwrap());
    assert_inert("chat's stderr", &c.stderr.lock().unwrap());
}

/// A tool name (no spaces) carrying the hostile text, and how it shows.
fn hostile_name() -> (String, String) {
    (HOSTILE.replace(' ', "_"), SHOWN.replace(' ', "_"))
}

/// The approval prompt (title and arguments), tool and result lines, the
/// streamed answer, `[failed: …]` (a failed turn's one line: its error
/// answer is not printed again), `/resume` of an unknown id, an
/// elicitation's question and
/// choices, `/history` and the history a resumed chat shows: every one
/// shows the hostile text inert (pipes: the raw bytes are checked).
#[test]
fn every_chat_output_path_shows_hostile_text_inert() {
    let env = start_echo();
    let (name, name_shown) = hostile_name();
    let mut c = chat(&env, &["--new"]);
    let sid = c.session_id();
    c.send(HOSTILE);
    let end = c.wait_out(&format!("{SHOWN}\n"), 0);
    c.send(&format!("::approve {name} {INPUT}"));
    let end = c.wait_out(&format!("[tool {name_shown} {INPUT_SHOWN}]\n"), end);
    let end = c.wait_out(
        &format!("approve {name_shown} {INPUT_SHOWN}? [a]llow once"),
        end,
    );
    c.send("a");
    let end = c.wait_out(&format!("[result {name_shown}: {INPUT_SHOWN}]\n"), end);
    c.send(&format!("::fail {HOSTILE}"));
    let end = c.wait_out(&format!("[failed: {SHOWN}]\n"), end);
    c.send(&format!("/resume {HOSTILE}"));
    let end = c.wait_out(
        &format!("no session \"{SHOWN}\" (/sessions lists them)\n"),
        end,
    );
    c.send(&format!("::choose {HOSTILE} | {HOSTILE} | plain"));
    let end = c.wait_out(&format!("question: {SHOWN}  (Enter"), end);
    let end = c.wait_out(&format!("  1) {SHOWN}\n  2) plain\nChoice:\n"), end);
    c.send("1");
    let end = c.wait_out(&format!("choice: {SHOWN}\n"), end);
    c.send(&format!("::ask {HOSTILE}"));
    let end = c.wait_out(&format!("question: {SHOWN}  (Enter"), end);
    c.send("fine");
    let end = c.wait_out("answer: fine\n", end);
    c.send("/history 50");
    c.wait_out(&format!("you: {SHOWN}\nagent: {SHOWN}\n"), end);
    assert!(c.finish().success());
    assert_chat_inert(&c);

    // Resumed: the last messages shown as the chat opens.
    let mut again = chat(&env, &["--resume", &sid]);
    again.wait_out(&format!("choice: {SHOWN}\n"), 0);
    assert!(again.finish().success());
    assert_chat_inert(&again);
}

/// The forged prompt on a real terminal: the agent's title erases the line
/// and writes `approve ls -la (read only)?`; the screen shows the whole
/// request instead, the window title and the clipboard stay untouched.
#[test]
fn a_forged_approval_prompt_shows_the_real_request() {
    if !available() {
        skip_test!("tmux is not installed");
    }
    let env = start(&acp_config("", ""));
    let t = chat_tty(&env, &["--new", "--agent", "acp"]);
    t.allow_clipboard_writes();
    let title_before = t.title();
    let forged = ascii_json(&format!(
        "rm -rf ~ {HOSTILE}\x1b[2K\rapprove ls -la (read only)"
    ));
    t.line(&format!("ask p1 {forged}"));
    t.wait_for(" s left): ");
    let screen = t.screen();
    let asked = screen
        .lines()
        .find(|l| l.contains("[a]llow once"))
        .unwrap_or_else(|| panic!("no approval prompt:\n{screen}"));
    assert!(
        asked.starts_with("approve ") && asked.contains(" rm -rf ~ ␛]52;c;"),
        "the prompt does not show the real request:\n{screen}"
    );
    assert!(
        asked.contains("␛[2K␍approve ls -la (read only)? [a]llow once"),
        "{screen}"
    );
    assert!(
        !screen.lines().any(|l| l.starts_with("approve ls -la")),
        "{screen}"
    );
    assert_eq!(t.title(), title_before, "OSC 0 set the window title");
    assert_eq!(t.buffers(), "", "OSC 52 wrote the clipboard");
    t.line("r");
    t.wait_for("permission: no");
    common::chat_tty::leave(&t);
}

/// `s` as a JSON string literal of ASCII only (typed into the editor; the
/// test agent decodes it).
fn ascii_json(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => out.extend(['\\', c]),
            ' '..='~' => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

/// `zeroclaw rpc --approve`: the daemon's notifications on stderr and the
/// result on stdout are the same JSON with C1, bidi and DEL escaped.
#[test]
fn rpc_prints_json_without_terminal_controls() {
    let env = start_echo();
    let (name, _) = hostile_name();
    let rpc = |method: &str, params: serde_json::Value, approve: bool| {
        let mut cmd = env.cli();
        cmd.args(["rpc", method, &params.to_string()]);
        if approve {
            cmd.args(["--approve", "allow_once"]);
        }
        let (status, out, err) = run_cli(cmd);
        assert!(status.success(), "{out}\n{err}");
        assert_inert("rpc's stdout", out.as_bytes());
        assert_inert("rpc's stderr", err.as_bytes());
        (out, err)
    };
    rpc(
        "session/new",
        serde_json::json!({"agent_alias": "echo", "session_id": "s-1", "chat_mode": "chat"}),
        false,
    );
    let prompt = format!("{HOSTILE}\n::approve {name} {INPUT}");
    let (_, err) = rpc(
        "session/prompt",
        serde_json::json!({"session_id": "s-1", "prompt": prompt}),
        true,
    );
    assert!(
        err.contains(r#""argumentsSummary":"{\"c\":\"\u009b\u202e\u007f\"}""#),
        "{err}"
    );
    let (out, _) = rpc(
        "session/messages",
        serde_json::json!({"session_id": "s-1", "chat_mode": "chat"}),
        false,
    );
    let page: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(page["messages"][0]["content"], prompt, "the same value");
}

/// `zeroclaw logs`: an agent's stderr line, logged by the daemon, prints
/// inert; so does the daemon's own text log (its stderr, often a terminal).
#[test]
fn logs_print_an_agents_stderr_inert() {
    let env = start_args(&acp_config("", ""), &["--log-format", "text"]);
    let mut rpc = env.client();
    common::acp_agent::new_acp_session(&mut rpc, "s-1", "chat");
    rpc.prompt_ok("s-1", &format!("stderr {HOSTILE}"));
    let out = logs_until(&env, "acp_agent_stderr");
    assert_inert("logs' stdout", out.as_bytes());
    assert!(out.contains(SHOWN), "{out}");
    let log = env.log.text();
    assert!(log.contains("acp_agent_stderr"), "{log}");
    assert_inert("the daemon's stderr", log.as_bytes());
}

/// `zeroclaw logs` until its output holds `what` (the stderr line is logged
/// as the agent writes it, maybe after the turn's answer).
fn logs_until(d: &Daemon, what: &str) -> String {
    let deadline = std::time::Instant::now() + common::RECV_TIMEOUT;
    loop {
        let mut cmd = d.cli();
        cmd.args(["logs", "-n", "1000"]);
        let (status, out, err) = run_cli(cmd);
        assert!(status.success(), "{err}");
        if out.contains(what) || std::time::Instant::now() > deadline {
            return out;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
