//! The terminals of a turn, run for real.

use super::*;

/// A command line that prints `out` to stdout, `err` to stderr, exits 3.
#[cfg(unix)]
fn out_err_exit_3() -> Value {
    json!({"command": "sh", "args": ["-c", "echo out; echo err >&2; exit 3"]})
}
#[cfg(windows)]
fn out_err_exit_3() -> Value {
    json!({"command": "cmd.exe", "args": ["/C", "echo out&echo err>&2&exit 3"]})
}
/// What it prints (cmd.exe ends lines with CRLF).
const OUT_ERR: &str = if cfg!(windows) {
    "out\r\nerr\r\n"
} else {
    "out\nerr\n"
};

/// A command that runs 30 s unless killed.
#[cfg(unix)]
fn sleep_30() -> Value {
    json!({"command": "sleep", "args": ["30"]})
}
#[cfg(windows)]
fn sleep_30() -> Value {
    json!({"command": "ping.exe", "args": ["-n", "30", "127.0.0.1"]})
}
/// How a killed command ends: by `SIGKILL` on Unix; with the killed job's
/// exit code on Windows.
fn killed() -> Value {
    if cfg!(windows) {
        json!({"exitCode": 1, "signal": null})
    } else {
        json!({"exitCode": null, "signal": "SIGKILL"})
    }
}

#[tokio::test]
async fn runs_waits_kills_and_refuses() {
    let cwd = std::env::temp_dir().canonicalize().unwrap();
    let cancel = CancellationToken::new();
    let env = std::collections::BTreeMap::new();
    let ending_in = |secs| Turn {
        cwd: &cwd,
        env: &env,
        cancel: &cancel,
        deadline: Instant::now() + Duration::from_secs(secs),
    };
    let turn = || ending_in(30);
    let sleep_30 = sleep_30();
    let mut t = Terminals::default();
    let id = t
        .serve("terminal/create", &out_err_exit_3(), turn())
        .await
        .unwrap()["terminalId"]
        .clone();
    let by = json!({"terminalId": id});
    let st = t
        .serve("terminal/wait_for_exit", &by, turn())
        .await
        .unwrap();
    assert_eq!(st, json!({"exitCode": 3, "signal": null}));
    let out = t.serve("terminal/output", &by, turn()).await.unwrap();
    assert_eq!(
        out,
        json!({"output": OUT_ERR, "truncated": false, "exitStatus": st})
    );
    let sleeper = t.serve("terminal/create", &sleep_30, turn()).await.unwrap();
    let by2 = json!({"terminalId": sleeper["terminalId"]});
    assert!(t
        .serve("terminal/output", &by2, turn())
        .await
        .unwrap()
        .get("exitStatus")
        .is_none());
    assert_eq!(
        t.serve("terminal/kill", &by2, turn()).await.unwrap(),
        json!({})
    );
    let st = t
        .serve("terminal/wait_for_exit", &by2, turn())
        .await
        .unwrap();
    assert_eq!(st, killed());
    assert_eq!(
        t.serve("terminal/release", &by, turn()).await.unwrap(),
        json!({})
    );
    let gone = t.serve("terminal/output", &by, turn()).await.unwrap_err();
    assert_eq!(
        gone,
        (INVALID_PARAMS, "unknown terminal \"term-1\"".to_owned())
    );
    // The turn's deadline ends a wait (the command is left to the turn's end).
    let waited = t.serve("terminal/wait_for_exit", &by2, ending_in(0)).await;
    assert_eq!(waited, Ok(killed()));
    let sleeper = t.serve("terminal/create", &sleep_30, turn()).await.unwrap();
    let by3 = json!({"terminalId": sleeper["terminalId"]});
    let waited = t.serve("terminal/wait_for_exit", &by3, ending_in(0)).await;
    let why = "the turn's deadline passed while waiting".to_owned();
    assert_eq!(waited, Err((INTERNAL, why)));
    t.close_all().await;
    assert!(t.held.is_empty());
}
