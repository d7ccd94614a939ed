//! Keys a person types while a turn streams (no editor reads the terminal
//! then) are the next prompt's, as with bash and readline: a typed line and
//! Enter is the next prompt sent, a line without Enter is waiting, editable,
//! at the next prompt. Nothing of it is lost.

// Unix only: drives `zeroclaw chat` in a pseudo-terminal under tmux.

use crate::common;

use common::chat_tty::{
    last_prompt_line, leave, new_echo_chat, prompt_lines, prompts_received, session_id,
};

#[test]
fn keys_typed_during_a_turn_are_the_next_prompts() {
    let (env, t) = ok_or_skip!(new_echo_chat());
    let sid = session_id(&t);
    prompt_lines(&t, &["started", "::sleep 1500", "done"]);
    // The turn runs (its first line shows); type ahead of it.
    t.wait_for("\nstarted");
    t.type_text("first ahead");
    t.keys(&["Enter"]);
    t.type_text("second ahead");
    // The typed line went as the next prompt, the unfinished one waits.
    t.wait_for("> first ahead\nfirst ahead\n> second ahead");
    assert_eq!(
        last_prompt_line(&t).as_deref(),
        Some("> second ahead"),
        "{}",
        t.screen()
    );
    t.keys(&["Enter"]);
    t.wait_for("> second ahead\nsecond ahead\n> ");
    assert_eq!(
        prompts_received(&env, &sid),
        ["started\n::sleep 1500\ndone", "first ahead", "second ahead"],
        "{}",
        t.screen()
    );
    leave(&t);
}

/// Keys typed ahead are meant for the prompt: a question the daemon asks
/// after them (an approval) drops them with a notice and waits for a fresh
/// answer; before, a typed-ahead "a" approved the tool.
#[test]
fn keys_typed_ahead_never_answer_an_approval() {
    let (_env, t) = ok_or_skip!(new_echo_chat());
    prompt_lines(&t, &["started", "::sleep 1500", "::approve rm {\"f\":1}"]);
    t.wait_for("\nstarted");
    t.line("a");
    t.wait_for("zeroclaw chat: keys typed before this question were dropped: answer it afresh");
    t.wait_for(" s left): ");
    t.line("r");
    t.wait_for("[result rm: denied: rejected]\n> ");
    assert!(!t.screen().contains("[result rm: {"), "{}", t.screen());
    leave(&t);
}
