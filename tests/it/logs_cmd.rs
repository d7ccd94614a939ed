//! `zeroclaw logs [-n N] [-f] [--all]` over the real socket: the recent
//! records in readable form, then (with `-f`) new ones as the daemon logs
//! them, across a restart of the daemon; connection records only with `--all`.

// Unix only: stops the daemon and `zeroclaw logs -f` with SIGTERM.

use crate::common;

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
    cmd.args(["logs", "-n", "2048", "--all"]);
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

/// By default the records of a connection's life (accepted, bound, closed)
/// are hidden; `--all` and `-v` show them. A session's records show either way.
#[test]
fn connection_noise_is_hidden_unless_asked() {
    let (env, mut c) = echo_client();
    rpc::ok(
        &mut c,
        "session/new",
        json!({"agent_alias": "echo", "session_id": "quiet-1"}),
    );
    let logs = |extra: &[&str]| {
        let mut cmd = env.cli();
        cmd.arg("logs").args(extra);
        let (status, out, err) = run_cli(cmd);
        assert!(status.success(), "{err}");
        out
    };
    let quiet = logs(&["-n", "2048"]);
    assert!(
        quiet.contains(" INFO  session/session_created session_id=quiet-1 "),
        "{quiet}"
    );
    for noise in [
        "connection/connection_accepted",
        "connection/connection_closed",
        "initialize/principal_bound",
    ] {
        assert!(!quiet.contains(noise), "{noise} shown by default:\n{quiet}");
    }
    for flag in ["--all", "-v"] {
        let all = logs(&["-n", "2048", flag]);
        assert!(
            all.contains("connection/connection_accepted"),
            "{flag}: {all}"
        );
        assert!(all.contains("initialize/principal_bound"), "{flag}: {all}");
    }
    // -n counts the records shown, not the hidden ones.
    let last = logs(&["-n", "1"]);
    assert_eq!(last.lines().count(), 1, "{last}");
    assert!(
        last.contains("session/session_created session_id=quiet-1 "),
        "{last}"
    );
}

/// `logs -f` outlives the daemon: it says so on stderr, reconnects when a
/// daemon is back and prints what that daemon logs, each record once.
#[test]
fn follow_survives_a_daemon_restart() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(&cfg, ECHO_ONLY);
    let mut d = common::DaemonBuilder::new().config_dir(&cfg).spawn();
    let mut cmd = d.cli();
    cmd.args(["logs", "-f", "-n", "1"]);
    let mut follow = Chat::spawn(cmd);
    follow.wait_out("INFO ", 0);
    let mut c = d.client();
    rpc::ok(
        &mut c,
        "session/new",
        json!({"agent_alias": "echo", "session_id": "before"}),
    );
    follow.wait_out("session/session_created session_id=before ", 0);
    drop(c);
    d.signal(libc::SIGTERM);
    assert!(d.wait_exit(common::EXIT_TIMEOUT).is_some());
    follow.wait_err("zeroclaw: the daemon went away");
    assert!(
        follow.err().contains("; reconnecting\n"),
        "{}",
        follow.err()
    );
    let mut d2 = common::DaemonBuilder::new().config_dir(&cfg).spawn();
    follow.wait_err("zeroclaw: reconnected to daemon (pid ");
    let mut c = d2.client();
    rpc::ok(
        &mut c,
        "session/new",
        json!({"agent_alias": "echo", "session_id": "after"}),
    );
    follow.wait_out("session/session_created session_id=after ", 0);
    // The new daemon's own start is shown; nothing is shown twice.
    let out = follow.out();
    assert_eq!(out.matches("session_id=before ").count(), 1, "{out}");
    assert_eq!(out.matches("session_id=after ").count(), 1, "{out}");
    // Once for each daemon: the first one's last record (-n 1), the new one's from its start.
    assert_eq!(out.matches("daemon/listening").count(), 2, "{out}");
    assert!(!out.contains("connection/connection_accepted"), "{out}");
    // Still following: the one way out is a signal.
    follow.signal(libc::SIGTERM);
    assert!(!follow.finish().success());
    drop(c);
    d2.signal(libc::SIGTERM);
    assert!(d2.wait_exit(common::EXIT_TIMEOUT).is_some());
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
