//! Everyday frictions of `zeroclaw chat`, each on a real
//! pseudo-terminal (tmux): a failed turn says so once, `/resume` of an id
//! that does not exist creates nothing, a first prompt on the command line,
//! Ctrl-C at an approval ends the turn, the approval countdown counts down,
//! thoughts stand apart from the answer.

// Unix only: drives `zeroclaw chat` in a pseudo-terminal under tmux.

use crate::common;

use common::chat_tty::{
    echo_round, leave, new_echo_chat, prompt_lines, prompts_received, session_id,
};
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
    assert_eq!(
        screen.matches("boom").count(),
        2,
        "the prompt and one failure line:\n{screen}"
    );
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
}

/// `zeroclaw chat hello` used to open a session named "hello" (the ollama
/// habit: the person meant a prompt). The positional is the first prompt,
/// sent at once; the chat goes on; `--session ID` names the session.
#[test]
fn the_positional_argument_is_a_first_prompt() {
    if !common::tty::available() {
        skip_test!("tmux is not installed");
    }
    let env = common::start::start_echo();
    let t = common::chat_tty::chat_tty(&env, &["hello there"]);
    let sid = session_id(&t);
    t.wait_for("> hello there\nhello there\n> ");
    echo_round(&t, "and then");
    assert_eq!(prompts_received(&env, &sid), ["hello there", "and then"]);
    assert_ne!(sid, "hello there");
    leave(&t);

    let named = common::chat_tty::chat_tty(&env, &["--session", "s-named", "first"]);
    assert_eq!(session_id(&named), "s-named");
    named.wait_for("> first\nfirst\n> ");
    leave(&named);
    assert_eq!(prompts_received(&env, "s-named"), ["first"]);
}

/// `--resume ID` resumes an existing session and refuses an unknown id,
/// creating nothing.
#[test]
fn resume_flag_refuses_an_unknown_session() {
    let env = common::start::start_echo();
    let mut cmd = env.cli();
    cmd.args(["chat", "--resume", "s-nope"]);
    let (code, out, err) = common::run_cli_code(cmd);
    assert_eq!(code, Some(1), "stdout: {out}\nstderr: {err}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        "zeroclaw chat: no session \"s-nope\" (/sessions lists them)\n"
    );
    let mut c = env.client();
    let list = c.ok("session/list", json!({}));
    assert_eq!(list["sessions"], json!([]), "{list}");
}

/// Ctrl-C at an approval prompt used to reject only that call: a turn that
/// keeps calling tools asked again, once per Ctrl-C. Now it rejects the
/// call and cancels the turn; no later call of that turn is asked.
#[test]
fn ctrl_c_at_an_approval_rejects_and_cancels_the_turn() {
    let (env, t) = ok_or_skip!(new_echo_chat());
    let sid = session_id(&t);
    prompt_lines(&t, &["::approve rm", "::approve cp", "::approve mv", "end"]);
    t.wait_for("approve rm {}? [a]llow once");
    t.keys(&["C-c"]);
    t.wait_for("zeroclaw chat: Ctrl-C: the call is rejected; cancelling the turn…");
    t.wait_for("[cancelled]\n> ");
    let screen = t.screen();
    assert!(!screen.contains("approve cp {}?"), "{screen}");
    assert!(!screen.contains("approve mv {}?"), "{screen}");
    assert!(!screen.contains("\nend"), "{screen}");
    echo_round(&t, "after");
    assert_eq!(prompts_received(&env, &sid).len(), 2);
    leave(&t);
}

/// The approval prompt's seconds left used to be drawn once and never
/// change. They count down in place: the same one prompt line, redrawn.
#[test]
fn the_approval_countdown_counts_down_in_place() {
    let (_env, t) = ok_or_skip!(new_echo_chat());
    t.line("::approve rm");
    t.wait_for("[e]dit TEXT (120 s left): ");
    t.type_text("a");
    // The countdown moved on with the typed key kept: how far depends on
    // how busy the machine is, so any second below 119 counts.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let screen = loop {
        let screen = t.screen();
        if (100..=118).any(|n| screen.contains(&format!("[e]dit TEXT ({n} s left): a"))) {
            break screen;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the countdown never moved on with the key kept:\n{screen}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(screen.matches("approve rm {}?").count(), 1, "{screen}");
    assert!(!screen.contains("(120 s left)"), "{screen}");
    // What was typed meanwhile is kept and answers.
    t.keys(&["Enter"]);
    t.wait_for("[result rm: {}]\n> ");
    leave(&t);
}

/// A thought used to be glued to the answer text before it (`axyz`); it
/// stands apart now: on its own prefixed line, the answer after it on a new line.
#[test]
fn thoughts_stand_apart_from_the_answer() {
    let (_env, t) = ok_or_skip!(new_echo_chat());
    prompt_lines(&t, &["a", "::think xyz", "b"]);
    t.wait_for("\nb\n> ");
    let screen = t.screen();
    assert!(screen.contains("\na\n│ xyz\n"), "{screen}");
    assert!(!screen.contains("axyz"), "{screen}");
    leave(&t);
}
