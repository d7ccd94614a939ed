//! Logging can never take the daemon down: stderr whose reader
//! went away, stderr nobody reads (a full pipe), stdout closed or broken.
//! In each case the daemon serves new connections, never holds a request on
//! a log write, leaves `--ephemeral` when its last client goes and exits 0
//! on SIGTERM, removing its socket.

// Unix only: closes or redirects the daemon's descriptors before exec (stdio::RawDaemon), reads /proc/<pid>/fd, and stops it with SIGTERM.

use crate::common;

use common::stdio::RawDaemon;
use common::Client;

/// Connections per round: each logs at least `connection_accepted` and
/// `connection_closed`, so at `debug` a round overflows a one-page pipe many times.
const ROUND: usize = 40;

fn assert_clean_exit(d: &mut RawDaemon) {
    let status = d.terminate();
    assert_eq!(status.code(), Some(0), "exit status after SIGTERM");
    assert!(!d.socket.exists(), "the socket outlived the daemon");
}

#[test]
fn stderr_reader_gone_after_the_ready_line() {
    let mut d = RawDaemon::spawn(&[], "debug", &[]);
    d.read_ready_line();
    drop(d.stderr.take());
    d.serve_round(ROUND);
    d.serve_round(ROUND);
    assert_clean_exit(&mut d);
}

#[test]
fn stderr_reader_gone_and_ephemeral_still_exits_when_the_last_client_leaves() {
    let mut d = RawDaemon::spawn(&["--ephemeral"], "debug", &[]);
    d.read_ready_line();
    drop(d.stderr.take());
    {
        let mut c = Client::connect(&d.socket);
        c.initialize();
        c.status();
    }
    let status = d.wait_exit();
    assert_eq!(status.code(), Some(0));
    assert!(!d.socket.exists());
}

#[test]
fn stderr_full_pipe_never_holds_a_request() {
    let mut d = RawDaemon::spawn_with(&[], "trace", &[], true);
    d.read_ready_line();
    // Nobody reads stderr from here on: the pipe fills within the first
    // round, the writer's queue (1024 lines) a few rounds later.
    for _ in 0..8 {
        d.serve_round(ROUND);
    }
    // The lost lines are counted where a client can see them.
    let mut c = Client::connect(&d.socket);
    c.initialize();
    let h = c.call("health", serde_json::json!({}), serde_json::json!(1));
    let dropped = h["result"]["logging"]["dropped_lines"]
        .as_u64()
        .unwrap_or(0);
    assert!(dropped > 0, "{h}");
    drop(c);
    assert_clean_exit(&mut d);
}

#[test]
fn stdout_reader_gone_before_the_ready_line() {
    let mut d = RawDaemon::spawn(&[], "info", &[]);
    drop(d.stdout.take());
    d.wait_serving();
    d.serve_round(ROUND);
    assert_clean_exit(&mut d);
}

#[test]
fn stdout_and_stderr_closed_before_exec() {
    let mut d = RawDaemon::spawn(&[], "debug", &[1, 2]);
    d.wait_serving();
    // The daemon's first files (runtime descriptors, the socket, the
    // database) must not inherit the numbers 1 and 2: stdout and stderr
    // writes would land in them. (Rust's runtime points closed standard
    // descriptors at /dev/null before `main`; this guards that it stays so.)
    for fd in [1, 2] {
        let target = std::fs::read_link(format!("/proc/{}/fd/{fd}", d.child.id()));
        assert_eq!(
            target.ok().as_deref(),
            Some(std::path::Path::new("/dev/null")),
            "fd {fd} of the daemon"
        );
    }
    d.serve_round(ROUND);
    let mut c = Client::connect(&d.socket);
    c.initialize();
    // The session store still works: nothing was written over its descriptor.
    let v = c.call(
        "session/new",
        serde_json::json!({"agent_alias": "echo"}),
        serde_json::json!(1),
    );
    assert!(v.get("result").is_some(), "session/new: {v}");
    drop(c);
    assert_clean_exit(&mut d);
}

#[test]
fn log_format_text_and_json_and_json_by_default_on_a_pipe() {
    let text = common::Daemon::builder()
        .arg("--log-format")
        .arg("text")
        .spawn();
    text.client().status();
    let (_, line) = wait_line(&text.log, "listening");
    assert!(
        serde_json::from_str::<serde_json::Value>(&line).is_err(),
        "{line}"
    );
    assert!(
        line.contains(" INFO ") && line.contains("event=\"listening\""),
        "{line}"
    );

    for args in [&["--log-format", "json"][..], &[][..]] {
        let mut b = common::Daemon::builder();
        for a in args {
            b = b.arg(a);
        }
        let d = b.spawn();
        let (_, line) = wait_line(&d.log, "listening");
        let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
        assert_eq!(v["event"], "listening", "{args:?}");
        assert_eq!(v["level"], "INFO");
    }

    let (status, _, err) = common::run_cli({
        let mut c = std::process::Command::new(common::BIN);
        c.args(["daemon", "--log-format", "yaml"]);
        c
    });
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("--log-format"), "{err}");
}

/// The first stderr line containing `needle` (bounded).
fn wait_line(log: &common::Log, needle: &str) -> (usize, String) {
    let deadline = std::time::Instant::now() + common::RECV_TIMEOUT;
    loop {
        if let Some((i, l)) = log
            .lines()
            .into_iter()
            .enumerate()
            .find(|(_, l)| l.contains(needle))
        {
            return (i, l);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {needle} line in:\n{}",
            log.text()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
