//! A request's in-flight slot is free before its answer's bytes are
//! written: with 63 of a connection's 64 slots held by prompts
//! that keep waiting, a client that sends its next request the moment it
//! reads a `session/prompt` answer is never refused `-32004
//! requests_in_flight`. (The turn writes that answer itself; the slot used
//! to be released only after, when the handler's future ended.)

use crate::common;

use std::time::Duration;

use common::start::echo_client;

/// How many answered prompts are each followed at once by a request.
const ROUNDS: usize = 200;
const WAIT: Duration = Duration::from_secs(20);

/// Reads lines until the answer to `id` (a JSON string id); returns it.
fn answer_to(c: &mut common::Client, id: &str) -> String {
    let needle = format!(r#""id":"{id}""#);
    loop {
        let line = c
            .try_recv_line(WAIT)
            .unwrap_or_else(|e| panic!("no answer to {id}: {}", common::describe(&e)));
        if line.contains(&needle) && !line.contains(r#""method""#) {
            return line;
        }
    }
}

fn prompt_frame(session: &str, text: &str, id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/prompt","params":{{"session_id":"{session}","prompt":"{text}"}},"id":"{id}"}}"#
    )
}

#[test]
fn the_next_request_after_a_prompt_answer_always_finds_a_slot() {
    let (_env, mut c) = echo_client();
    for s in ["hold-a", "hold-b", "quick"] {
        c.new_session(s, "acp");
    }
    // 63 slots: on each holding session one sleeping turn and 31 (30) queued behind it.
    let mut held = 0;
    for (session, n) in [("hold-a", 32), ("hold-b", 31)] {
        for i in 0..n {
            c.send_line(&prompt_frame(
                session,
                "::sleep 600000",
                &format!("{session}-{i}"),
            ));
            held += 1;
        }
    }
    assert_eq!(held, 63);
    // Every one of them is admitted (none answered -32004): a status answers
    // after them only once they all hold their slots (frames are read in order).
    c.send_line(r#"{"jsonrpc":"2.0","method":"status","id":"settled"}"#);
    let settled = answer_to(&mut c, "settled");
    assert!(settled.contains(r#""result""#), "{settled}");
    for round in 0..ROUNDS {
        let p = format!("p-{round}");
        c.send_line(&prompt_frame("quick", "hi", &p));
        let answer = answer_to(&mut c, &p);
        // At once: the prompt's slot must already be free.
        let s = format!("s-{round}");
        c.send_line(&format!(
            r#"{{"jsonrpc":"2.0","method":"status","id":"{s}"}}"#
        ));
        assert!(answer.contains(r#""result""#), "round {round}: {answer}");
        let status = answer_to(&mut c, &s);
        assert!(
            status.contains(r#""result""#),
            "round {round}: the request after an answer was refused: {status}"
        );
    }
}
