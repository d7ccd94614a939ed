//! Every value on a command line is checked when it is parsed: a
//! typo exits 2 at once with clap's message, naming the valid
//! values where there is a closed set, and never reaches the daemon.

use crate::common;

use std::time::{Duration, Instant};

use common::start::start_echo;

/// `rpc --approve <typo>` used to be sent as the decision: the daemon
/// refused it, the approval waited out its 120 s and the command exited 0.
#[test]
fn a_typo_in_approve_exits_2_at_once_naming_the_decisions() {
    let env = start_echo();
    env.rpc_cli(&[
        "session/new",
        r#"{"agent_alias":"echo","session_id":"s-1"}"#,
    ]);
    let began = Instant::now();
    let (code, out, err) = env.rpc_cli(&[
        "--approve",
        "allow_onse",
        "--timeout",
        "8",
        "session/prompt",
        r#"{"session_id":"s-1","prompt":"::approve rm\nend"}"#,
    ]);
    assert_eq!(code, Some(2), "stdout: {out}\nstderr: {err}");
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(out, "");
    assert!(
        err.contains("invalid value 'allow_onse' for '--approve <DECISION>'"),
        "{err}"
    );
    assert!(
        err.contains("[possible values: allow_once, allow_always, reject]"),
        "{err}"
    );
    // Nothing was prompted: the session has no message.
    let mut c = env.client();
    let page = c.ok(
        "session/messages",
        serde_json::json!({"session_id": "s-1", "chat_mode": "chat"}),
    );
    assert_eq!(page["messages"], serde_json::json!([]), "{page}");
}

/// The other valued flags of `rpc` follow the same rule: clap's message
/// names the flag and the reason, exit 2, no connection.
#[test]
fn every_rpc_value_is_checked_when_parsed() {
    let env = start_echo();
    for (args, names) in [
        (&["--timeout=-1", "status"][..], "'--timeout <SECS>'"),
        (&["--timeout", "soon", "status"], "'--timeout <SECS>'"),
        (
            &["--elicitation-reply", "{nope", "status"],
            "'--elicitation-reply <JSON>'",
        ),
        (&["status", "[1]"], "'[PARAMS]'"),
    ] {
        let (code, out, err) = env.rpc_cli(args);
        assert_eq!(code, Some(2), "{args:?}: stdout: {out}\nstderr: {err}");
        assert_eq!(out, "", "{args:?}");
        assert!(err.contains("invalid value"), "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
    }
    assert!(
        env.log.events_named("connection_accepted").is_empty(),
        "{}",
        env.log.text()
    );
    // The valid spellings still work.
    let (code, out, err) = env.rpc_cli(&["--timeout", "5", "--approve", "reject", "status"]);
    assert_eq!(code, Some(0), "stdout: {out}\nstderr: {err}");
}
