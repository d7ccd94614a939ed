//! `zeroclaw chat` in a real pseudo-terminal (tmux) facing bad input and a
//! failing daemon: a resize mid-stream, a non-UTF-8 paste, a paste over the 1 MiB limit,
//! the daemon restarted mid-turn. Each ends with a clear message, no panic,
//! and the session intact: the next prompt goes through and the daemon's
//! transcript holds exactly what was sent.

// Unix only: drives `zeroclaw chat` in a pseudo-terminal under tmux, and SIGTERM to the daemon.

use crate::common;

use common::chat_tty::{
    chat_tty, echo_round, leave, new_echo_chat, prompt_lines, prompts_received, session_id,
};
use common::start::{write_config, ECHO_ONLY};
use common::tty::available;
use common::{DaemonBuilder, TestDir};

#[test]
fn a_resize_mid_stream_keeps_the_answer_whole() {
    let (env, t) = ok_or_skip!(new_echo_chat());
    let sid = session_id(&t);
    let answer = "abcdefghijklmnopqrstuvwxyz0123456789";
    prompt_lines(&t, &["::chunk 1", "::delay 30", answer]);
    t.wait_for("\nabc");
    t.resize(40, 12);
    t.resize(120, 40);
    t.wait_for(&format!("\n{answer}\n> "));
    echo_round(&t, "after");
    assert_eq!(
        prompts_received(&env, &sid),
        [
            format!("::chunk 1\n::delay 30\n{answer}"),
            "after".to_owned()
        ]
    );
    leave(&t);
}

#[test]
fn a_non_utf8_paste_is_refused_and_the_session_goes_on() {
    let (env, t) = ok_or_skip!(new_echo_chat());
    let sid = session_id(&t);
    // "café ok" and Enter from a Latin-1 terminal, arriving at once as a
    // paste does: the é (0xe9) is not UTF-8, nor is any of it a prompt.
    t.keys(&["-H", "63", "61", "66", "e9", "20", "6f", "6b", "0d"]);
    t.wait_for(
        "zeroclaw chat: the typed line was not valid UTF-8 (is the terminal's encoding UTF-8?); it was dropped, with the rest of its paste",
    );
    echo_round(&t, "fine");
    assert_eq!(prompts_received(&env, &sid), ["fine"], "{}", t.screen());
    leave(&t);
}

#[test]
fn a_paste_over_the_limit_is_refused_without_a_hang() {
    let (env, t) = ok_or_skip!(new_echo_chat());
    let sid = session_id(&t);
    // 3 MiB, not 10: the editor takes a paste in linear time, about a
    // second per MiB in a debug build on a busy machine (10 MiB by hand in
    // docs/operations.md); tests/it/chat_pipe.rs sends 10 MiB in plain mode.
    let file = env.dir.path().join("paste.txt");
    std::fs::write(&file, vec![b'x'; 3 * 1024 * 1024]).expect("writing the paste");
    t.paste_file(&file);
    t.keys(&["Enter"]);
    t.wait_for_within(
        "a line of 3145728 bytes was refused: a typed prompt is at most 1048576 bytes",
        std::time::Duration::from_secs(60),
    );
    echo_round(&t, "fine");
    assert_eq!(prompts_received(&env, &sid), ["fine"]);
    leave(&t);
}

#[test]
fn a_daemon_restart_mid_turn_is_a_notice_and_a_resumed_session() {
    if !available() {
        skip_test!("tmux is not installed");
    }
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(&cfg, ECHO_ONLY);
    let mut d = DaemonBuilder::new().config_dir(&cfg).spawn();
    let t = chat_tty(&d, &["--new"]);
    let sid = session_id(&t);
    echo_round(&t, "one");
    prompt_lines(&t, &["started", "::sleep 60000"]);
    t.wait_for("\nstarted");
    d.signal(libc::SIGTERM);
    assert!(d.wait_exit(common::EXIT_TIMEOUT).is_some());
    t.wait_for("zeroclaw chat: the connection to the daemon was lost; reconnecting…");
    let d2 = DaemonBuilder::new().config_dir(&cfg).spawn();
    t.wait_for(&format!(
        "zeroclaw chat: reconnected; session {sid} resumed"
    ));
    echo_round(&t, "two");
    // The turn the stop cancelled stays in the transcript, then the next.
    assert_eq!(
        prompts_received(&d2, &sid),
        ["one", "started\n::sleep 60000", "two"]
    );
    t.wait_for("\nstarted\n[cancelled]\n");
    leave(&t);
}
