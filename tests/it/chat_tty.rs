//! `zeroclaw chat` in a real pseudo-terminal (tmux): the line editor, the
//! streamed answer, approvals and choices answered, Ctrl-C cancelling the
//! turn, a resize mid-turn, resume, and Ctrl-D leaving.

// Unix only: drives `zeroclaw chat` in a pseudo-terminal under tmux.

use crate::common;

use common::chat_tty::{chat_tty, echo_round, new_echo_chat};
use common::start::start_echo;
use common::tty::available;

#[test]
fn a_streamed_turn_then_ctrl_d_leaves() {
    let (_env, t) = ok_or_skip!(new_echo_chat());
    t.wait_for("> ");
    echo_round(&t, "hello tty");
    assert_eq!(t.exit_by(&["C-d"]), 0, "{}", t.screen());
}

/// Ctrl-C on a line with text clears it; on the empty line it leaves.
#[test]
fn ctrl_c_clears_a_typed_line_and_leaves_at_an_empty_one() {
    let (_env, t) = ok_or_skip!(new_echo_chat());
    t.wait_for("> ");
    t.type_text("not this");
    t.wait_for("> not this");
    t.keys(&["C-c"]);
    echo_round(&t, "but this");
    assert!(!t.screen().contains("not thisbut"), "{}", t.screen());
    assert_eq!(t.exit_by(&["C-c"]), 0, "{}", t.screen());
}

#[test]
fn approval_and_choice_are_answered() {
    let (_env, t) = ok_or_skip!(new_echo_chat());
    t.line("::approve rm {\"f\":1}");
    t.wait_for("approve rm {\"f\":1}? [a]llow once");
    t.wait_for(" s left): ");
    // One write: the answer and its Enter reach the editor together (the
    // editor used to leave the Enter in its buffer while it waited on the
    // countdown's redraws, and the prompt hung until the next key).
    t.type_text("a\r");
    t.wait_for("[result rm: {\"f\":1}]\n> ");
    t.line("::choose Color? | red | blue");
    t.wait_for("  2) blue\nChoice: ");
    t.line("2");
    t.wait_for("choice: blue\n> ");
    assert_eq!(
        t.exit_by(&["C-c"]),
        0,
        "Ctrl-C at an empty prompt leaves: {}",
        t.screen()
    );
}

#[test]
fn ctrl_c_cancels_the_turn_and_a_resize_is_harmless() {
    let (_env, t) = ok_or_skip!(new_echo_chat());
    t.line("before\\");
    t.wait_for("> before\\\n> ");
    t.line("::sleep 30000\\");
    t.wait_for("> ::sleep 30000\\\n> ");
    t.line("after");
    t.wait_for("\nbefore");
    t.resize(60, 20);
    t.keys(&["C-c"]);
    t.wait_for("[cancelled]");
    t.line("still here");
    // The next prompt first: a key typed before the editor owns the
    // terminal (cooked mode) is the kernel's, not the editor's.
    t.wait_for("> still here\nstill here\n> ");
    assert!(!t.screen().contains("\nafter"), "{}", t.screen());
    assert_eq!(t.exit_by(&["C-d"]), 0);
}

#[test]
fn resume_shows_the_last_messages() {
    if !available() {
        skip_test!("tmux is not installed");
    }
    let env = start_echo();
    let t = chat_tty(&env, &["--new", "--agent", "echo"]);
    echo_round(&t, "keep me");
    assert_eq!(t.exit_by(&["C-d"]), 0);
    let again = chat_tty(&env, &[]);
    again.wait_for("(resumed, 2 messages)");
    again.wait_for("you: keep me\nagent: keep me\n> ");
    assert_eq!(again.exit_by(&["C-d"]), 0);
}

/// Up recalls the previous prompt from the line editor's history.
#[test]
fn up_recalls_the_previous_prompt() {
    let (env, t) = ok_or_skip!(new_echo_chat());
    let sid = common::chat_tty::session_id(&t);
    echo_round(&t, "remember me");
    t.keys(&["Up"]);
    t.wait_for("remember me\n> remember me");
    t.keys(&["Enter"]);
    // The whole second round: the first round alone already shows
    // "remember me\nremember me\n> ", so a shorter wait would pass at once.
    t.wait_for("> remember me\nremember me\n> remember me\nremember me\n> ");
    assert_eq!(
        common::chat_tty::prompts_received(&env, &sid),
        ["remember me", "remember me"]
    );
    common::chat_tty::leave(&t);
}

/// `/upload FILE` on a terminal draws its progress as one refreshed line.
#[test]
fn an_upload_shows_its_progress_on_the_terminal() {
    let (env, t) = ok_or_skip!(new_echo_chat());
    let file = env.dir.path().join("big.bin");
    let size = 2 * 1024 * 1024 + 512 * 1024;
    std::fs::write(&file, vec![7u8; size]).expect("writing the upload");
    t.line(&format!("/upload {}", file.display()));
    t.wait_for(&format!("100.0% {size} / {size} bytes"));
    t.wait_for(&format!("uploaded {}", file.display()));
    common::chat_tty::leave(&t);
}

/// A turn another client runs on this chat's session shows at the prompt,
/// its approval is answered here with `/approve`, and the prompt comes back.
#[test]
fn another_clients_turn_shows_at_the_prompt_and_is_approved_here() {
    let (env, t) = ok_or_skip!(new_echo_chat());
    let sid = common::chat_tty::session_id(&t);
    let mut b = env.client();
    b.ok("session/attach", serde_json::json!({"session_id": sid}));
    let p = b.send(
        "session/prompt",
        serde_json::json!({"session_id": sid, "prompt": "::approve rm {\"f\":1}"}),
    );
    t.wait_for("[a turn from another client]\n");
    t.wait_for("[approval asked: rm; answer with /approve once|always|reject]\n> ");
    t.line("/approve once");
    t.wait_for("[result rm: {\"f\":1}]\n");
    b.wait(&p).expect("b's turn succeeds");
    echo_round(&t, "mine again");
    assert_eq!(t.exit_by(&["C-d"]), 0, "{}", t.screen());
}
