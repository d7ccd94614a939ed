//! `zeroclaw logs [-n N] [-f]` over the real socket: the recent records in
//! readable form, then (with `-f`) new ones as the daemon logs them.

// Not in the Windows suite (run on Unix; docs/operations.md lists what runs under Wine).
#![cfg(unix)]

#[macro_use]
mod common;

use common::chat::Chat;
use common::rpc;
use common::start::{echo_client, write_config, ECHO_ONLY};
use common::{run_cli, TestDir};
use serde_json::json;

#[test]
fn shows_recent_records_readably() {
    let (env, mut c) = echo_client();
    rpc::ok(
        &mut c,
        "session/new",
        json!({"agent_alias": "echo", "session_id": "logs-1"}),
    );
    let mut cmd = env.cli();
    cmd.args(["logs", "-n", "2048"]);
    let (status, out, err) = run_cli(cmd);
    assert!(status.success(), "{err}");
    let line = out
        .lines()
        .find(|l| l.contains("session/session_created"))
        .unwrap_or_else(|| panic!("no session_created line:\n{out}"));
    // TIMESTAMP LEVEL category/action key=value…
    let mut words = line.split(' ');
    assert!(
        words
            .next()
            .is_some_and(|t| t.ends_with('Z') && t.contains('T')),
        "{line}"
    );
    assert!(
        line.contains(" INFO  session/session_created session_id=logs-1 "),
        "{line}"
    );
    // Oldest first: the connection was accepted before the session was made.
    let accepted = out
        .find("connection/connection_accepted")
        .expect("accepted line");
    assert!(
        accepted < out.find("session/session_created").unwrap_or(0),
        "{out}"
    );
}

#[test]
fn follows_new_records_until_the_daemon_goes() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(&cfg, ECHO_ONLY);
    let mut d = common::DaemonBuilder::new().config_dir(&cfg).spawn();
    let mut cmd = d.cli();
    cmd.args(["logs", "-f", "-n", "1"]);
    let follow = Chat::spawn(cmd);
    follow.wait_out("INFO ", 0);
    let mut c = d.client();
    rpc::ok(
        &mut c,
        "session/new",
        json!({"agent_alias": "echo", "session_id": "followed"}),
    );
    follow.wait_out("session/session_created session_id=followed ", 0);
    drop(c);
    d.signal(libc::SIGTERM);
    assert!(d.wait_exit(common::EXIT_TIMEOUT).is_some());
    let mut follow = follow;
    assert_eq!(follow.finish().code(), Some(1), "{}", follow.err());
    assert!(
        follow.err().contains("zeroclaw: the daemon went away"),
        "{}",
        follow.err()
    );
    // Each record once, even though the query and the subscription overlap.
    assert_eq!(
        follow.out().matches("session_id=followed ").count(),
        1,
        "{}",
        follow.out()
    );
}

#[test]
fn no_daemon_is_exit_3() {
    let dir = TestDir::new();
    let mut cmd = std::process::Command::new(common::BIN);
    common::hermetic_env(&mut cmd, dir.path());
    cmd.arg("--config-dir").arg(dir.config_dir()).arg("logs");
    let (status, _, err) = run_cli(cmd);
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(err.contains("no daemon answers at"), "{err}");
}
