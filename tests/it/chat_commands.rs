//! `zeroclaw chat`'s own commands and toggles in plain mode (stdin and
//! stdout are pipes), against the real daemon and its echo agent: thoughts
//! hidden until `/thoughts`, `/resume ID` switching sessions with their last
//! messages, `/cancel` with no turn running, and a failed turn shown.

use crate::common;

use common::chat::{plain_chat as chat, prompts_received};
use common::start::start_echo;

#[test]
fn thoughts_are_hidden_in_plain_mode_until_toggled() {
    let env = start_echo();
    let mut c = chat(&env, &["--new"]);
    c.send("::think pondering\\");
    c.send("first");
    let end = c.wait_out("first\n", 0);
    c.send("/thoughts");
    let end = c.wait_out("thoughts shown\n", end);
    c.send("::think pondering\\");
    c.send("second");
    let end = c.wait_out("second\n", end);
    c.send("/thoughts");
    c.wait_out("thoughts hidden\n", end);
    assert!(c.finish().success(), "{}", c.err());
    assert_eq!(
        c.out(),
        "first\nthoughts shown\n(thinking) pondering\nsecond\nthoughts hidden\n"
    );
}

#[test]
fn resume_switches_to_a_session_and_shows_its_last_messages() {
    let env = start_echo();
    let mut first = chat(&env, &["--new"]);
    first.send("kept in the first");
    first.wait_out("kept in the first\n", 0);
    let id = first.session_id();
    assert!(first.finish().success());

    let mut c = chat(&env, &["--new"]);
    let other = c.session_id();
    assert_ne!(other, id);
    c.send(&format!("/resume {id}"));
    c.wait_err(&format!(
        "session {id} with agent echo (resumed, 2 messages)"
    ));
    let end = c.wait_out("you: kept in the first\nagent: kept in the first\n", 0);
    c.send("now here");
    c.wait_out("now here\n", end);
    c.send("/resume");
    c.wait_out("unknown command `/resume`; /help lists them\n", end);
    assert!(c.finish().success(), "{}", c.err());
    // The prompt went to the resumed session.
    assert_eq!(
        prompts_received(&env, &id),
        ["kept in the first", "now here"]
    );
}

/// The daemon's answer is said as it is; the chat goes on.
#[test]
fn cancel_with_no_turn_running_is_harmless() {
    let env = start_echo();
    let mut c = chat(&env, &["--new"]);
    c.send("/cancel");
    let end = c.wait_out(
        "error: No active turn for this session (no_active_turn)\n",
        0,
    );
    c.send("after");
    c.wait_out("after\n", end);
    assert!(c.finish().success(), "{}", c.err());
    assert_eq!(
        c.out(),
        "error: No active turn for this session (no_active_turn)\nafter\n"
    );
}

#[test]
fn a_failed_turn_shows_its_reason_and_the_chat_goes_on() {
    let env = start_echo();
    let mut c = chat(&env, &["--new"]);
    c.send("partial\\");
    c.send("::fail no");
    let end = c.wait_out("[failed: no]\n", 0);
    c.send("after");
    c.wait_out("after\n", end);
    assert!(c.finish().success(), "{}", c.err());
    // One failure, one line: the prompt's error answer is not printed again.
    assert_eq!(c.out(), "partial\n[failed: no]\nafter\n");
}
