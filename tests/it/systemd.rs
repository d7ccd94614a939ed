//! systemd without systemd (docs/operations.md): the daemon serves a
//! listening socket passed as fd 3 (`LISTEN_FDS`/`LISTEN_PID`), still takes
//! its locks and checks the socket, never unlinks it, and reports
//! `READY=1`, `STATUS=` and `STOPPING=1` on `NOTIFY_SOCKET`, in that order.

// Unix only: systemd socket activation and notify sockets.

use crate::common;

use std::os::unix::net::UnixStream;
use std::time::Duration;

use common::activation::{default_socket, listen_at, spawn, Notify};
use common::start::{write_config, ECHO_ONLY};
use common::{Client, TestDir};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

/// The echo-only config in `dir` and the socket path the daemon will resolve.
fn echo_config(dir: &TestDir) -> (std::path::PathBuf, std::path::PathBuf) {
    let cfg = dir.config_dir();
    write_config(&cfg, ECHO_ONLY);
    let socket = default_socket(&cfg);
    (cfg, socket)
}

#[test]
fn serves_passed_socket_and_notifies_in_order() {
    let dir = TestDir::new();
    let (cfg, socket) = echo_config(&dir);
    let listener = listen_at(&socket, 0o600);
    let notify = Notify::at(&dir.path().join("notify"));
    // Connected before the daemon even runs: the kernel queues it, as with systemd.
    let mut early = Client::over(UnixStream::connect(&socket).expect("connect"));
    let mut d = spawn(&cfg, &listener, Some(&notify), &[]);
    drop(listener);
    let answer = early.call("initialize", json!({"protocolVersion": 1}), json!(1));
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["result"].is_object(), "{answer}");
    // READY was sent before the accept loop, so it is queued by now.
    let ready = notify.try_recv().expect("READY=1 before the first answer");
    assert_eq!(
        ready,
        format!("READY=1\nSTATUS=serving on {}\n", socket.display())
    );
    let line = d.ready_line();
    assert!(line.contains(r#""event":"ready""#), "{line}");
    assert!(
        d.log.text().contains("socket_activated"),
        "{}",
        d.log.text()
    );
    // A second connection through the same passed socket.
    let mut c = Client::connect(&socket);
    c.initialize();
    assert!(c.status().is_object());
    drop(c);
    drop(early);

    d.signal(libc::SIGTERM);
    let stopping = notify.recv(WAIT).expect("STOPPING=1 on SIGTERM");
    assert_eq!(stopping, "STOPPING=1\nSTATUS=shutting down\n");
    assert!(d.wait_exit().success(), "{}", d.log.text());
    assert_eq!(notify.try_recv(), None, "nothing after STOPPING=1");
    // The socket file belongs to the service manager: still there.
    let meta = std::fs::symlink_metadata(&socket).expect("socket left in place");
    assert!(std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()));
}

#[cfg(target_os = "linux")]
#[test]
fn notifies_abstract_socket_without_activation() {
    let name = format!("zeroclaw-test-{}-abstract", std::process::id());
    let notify = Notify::abstract_named(&name);
    let d = common::Daemon::builder()
        .env("NOTIFY_SOCKET", &notify.address)
        .spawn();
    let ready = notify.recv(WAIT).expect("READY=1");
    assert_eq!(
        ready,
        format!("READY=1\nSTATUS=serving on {}\n", d.socket.display())
    );
    d.signal(libc::SIGTERM);
    assert_eq!(
        notify.recv(WAIT).as_deref(),
        Some("STOPPING=1\nSTATUS=shutting down\n")
    );
}

/// Runs an activated daemon that must refuse to start; returns its stderr.
fn refused(
    cfg: &std::path::Path,
    listener: &std::os::unix::net::UnixListener,
    envs: &[(&str, &str)],
) -> String {
    let mut d = spawn(cfg, listener, None, envs);
    let status = d.wait_exit();
    assert_eq!(status.code(), Some(1), "{}", d.log.text());
    d.log.text()
}

#[test]
fn refuses_a_socket_others_can_reach() {
    let dir = TestDir::new();
    let (cfg, socket) = echo_config(&dir);
    let listener = listen_at(&socket, 0o666);
    let err = refused(&cfg, &listener, &[]);
    let want = format!(
        "passed socket refused: `{}` has mode 666; set SocketMode=0600",
        socket.display()
    );
    assert!(err.contains(&want), "{err}");
}

/// Read bits give no one a way in (connecting needs write permission), so a
/// 0644 socket, as `systemd-socket-activate -l` binds it, is served.
#[test]
fn serves_a_socket_only_its_owner_can_write() {
    let dir = TestDir::new();
    let (cfg, socket) = echo_config(&dir);
    let listener = listen_at(&socket, 0o644);
    let d = spawn(&cfg, &listener, None, &[]);
    let mut c = Client::connect(&socket);
    c.initialize();
    assert!(c.status().is_object(), "{}", d.log.text());
}

#[test]
fn refuses_a_socket_bound_elsewhere() {
    let dir = TestDir::new();
    let (cfg, expected) = echo_config(&dir);
    let other = dir.path().join("other.sock");
    let listener = listen_at(&other, 0o600);
    let err = refused(&cfg, &listener, &[]);
    let want = format!(
        "passed socket refused: descriptor 3 is bound to {:?}, not to the endpoint `{}`",
        other.display().to_string(),
        expected.display()
    );
    assert!(err.contains(&want), "{err}");
}

#[test]
fn passed_socket_still_takes_the_data_dir_lock() {
    let dir = TestDir::new();
    let (cfg, socket) = echo_config(&dir);
    let listener = listen_at(&socket, 0o600);
    let mut first = spawn(&cfg, &listener, None, &[]);
    first.ready_line();
    let mut second = spawn(&cfg, &listener, None, &[]);
    assert_eq!(second.wait_exit().code(), Some(3), "{}", second.log.text());
    assert!(
        second
            .log
            .text()
            .contains("is already served by another daemon"),
        "{}",
        second.log.text()
    );
    first.signal(libc::SIGTERM);
    assert!(first.wait_exit().success());
}

/// Fills `notify`'s receive queue from a nonblocking sender until the
/// kernel answers EAGAIN: the next blocking send to it would wait forever.
fn fill_queue(notify: &Notify) -> usize {
    let sender = std::os::unix::net::UnixDatagram::unbound().expect("sender");
    sender.set_nonblocking(true).expect("nonblocking sender");
    let mut sent = 0;
    loop {
        match sender.send_to(b"FILLER=1\n", &notify.address) {
            Ok(_) => sent += 1,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return sent,
            Err(e) => panic!("filling the notify queue: {e}"),
        }
    }
}

/// A supervisor that never reads its notify socket (its queue full) must
/// cost the notifications, never the daemon: it serves, and SIGTERM stops
/// it with status 0 (the blocking send parked the start-up forever).
#[test]
fn a_full_notify_queue_neither_stops_serving_nor_stopping() {
    let dir = TestDir::new();
    let notify = Notify::at(&dir.path().join("notify"));
    let queued = fill_queue(&notify);
    assert!(queued > 0, "nothing could be queued");
    let mut d = common::Daemon::builder()
        .env("NOTIFY_SOCKET", &notify.address)
        .spawn();
    let mut c = Client::connect(&d.socket);
    c.send_json(&json!({"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": 1}, "id": 1}));
    let answer = c.try_recv_line(WAIT).unwrap_or_else(|e| {
        panic!(
            "initialize unanswered ({}); stderr:\n{}",
            common::describe(&e),
            d.log.text()
        )
    });
    assert!(answer.contains(r#""result""#), "{answer}");
    assert!(c.status().is_object());
    d.signal(libc::SIGTERM);
    let status = d
        .wait_exit(WAIT)
        .unwrap_or_else(|| panic!("SIGTERM did not stop the daemon; stderr:\n{}", d.log.text()));
    assert_eq!(status.code(), Some(0), "{}", d.log.text());
    assert!(
        d.log.text().contains("sd_notify_failed"),
        "{}",
        d.log.text()
    );
}
