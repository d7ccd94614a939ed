//! `zeroclaw chat` in a tmux pane ([`super::tty::Tty`]) against a harness
//! daemon, and what the daemon recorded of it: the chat's session id (from
//! its start notice) and the prompts the daemon received, in order.

use super::tty::Tty;

// Plain-mode chats use it too, on every platform: it lives in chat.rs.
#[allow(unused_imports)]
pub use super::chat::prompts_received;
use super::{Daemon, BIN};

/// `zeroclaw chat ARGS…` for `d`, once its first prompt shows.
pub fn chat_tty(d: &Daemon, args: &[&str]) -> Tty {
    let home = d.config_dir.parent().unwrap_or(&d.config_dir).to_owned();
    let cfg = d.config_dir.display().to_string();
    let mut argv = vec![BIN, "--config-dir", &cfg, "chat"];
    argv.extend_from_slice(args);
    let home_s = home.display().to_string();
    let path = std::env::var("PATH").unwrap_or_default();
    let t = Tty::spawn(
        &argv,
        &[("HOME", &home_s), ("PATH", &path), ("ZEROCLAW_LOG", "info")],
        &home,
    );
    t.wait_for("/help for commands");
    t.wait_for("> ");
    t
}

/// The session id the chat's start notice names.
pub fn session_id(t: &Tty) -> String {
    t.wait_for(" with agent ");
    let screen = t.screen();
    screen
        .split("zeroclaw chat: session ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no session notice:\n{screen}"))
        .to_owned()
}

/// The screen's last line that starts with the prompt `> `.
pub fn last_prompt_line(t: &Tty) -> Option<String> {
    let screen = t.screen();
    screen
        .lines()
        .rev()
        .find(|l| l.starts_with("> "))
        .map(|l| l.trim_end().to_owned())
}

/// Types a multi-line prompt: every line but the last ends in `\` and waits
/// for the next prompt; the last is sent as it is.
pub fn prompt_lines(t: &Tty, lines: &[&str]) {
    let Some((last, head)) = lines.split_last() else {
        return;
    };
    for l in head {
        t.line(&format!("{l}\\"));
        t.wait_for(&format!("> {l}\\\n> "));
    }
    t.line(last);
}

/// Leaves with Ctrl-D: exit 0, and no panic was ever printed.
pub fn leave(t: &Tty) {
    assert!(!t.screen().contains("panicked"), "{}", t.screen());
    assert_eq!(t.exit_by(&["C-d"]), 0, "{}", t.screen());
}

/// `zeroclaw chat --new` in tmux against a new echo daemon, or why not
/// (tmux is not installed; for `ok_or_skip!`).
pub fn new_echo_chat() -> Result<(super::start::Env, Tty), String> {
    if !super::tty::available() {
        return Err("tmux is not installed".into());
    }
    let env = super::start::start_echo();
    let t = chat_tty(&env, &["--new"]);
    Ok((env, t))
}

/// Sends `text` as a prompt and waits for the echo agent's answer and the
/// next prompt.
pub fn echo_round(t: &Tty, text: &str) {
    t.line(text);
    t.wait_for(&format!("> {text}\n{text}\n> "));
}
