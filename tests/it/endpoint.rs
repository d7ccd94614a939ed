//! The endpoint and the process around it (§2): claiming the socket,
//! stale sockets, modes, signals, `ZEROCLAW_SOCKET`, and the audit log.
//! On Windows the audit tests run here; the named pipe's own tests are
//! tests/it/pipe.rs.

use crate::common;

#[cfg(unix)]
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
#[cfg(unix)]
use std::path::Path;
use std::time::Duration;

use common::{own_peer_label, Daemon, MAX_FRAME};
#[cfg(unix)]
use common::{run_cli, Client, TestDir, EXIT_TIMEOUT};
use serde_json::{json, Value};

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("lstat {}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// A fresh client can initialize and get `status` from `d`.
#[cfg(unix)]
fn assert_serving(d: &Daemon) -> Value {
    let mut c = d.client();
    let s = c.status();
    assert_eq!(s["server_pid"], d.pid, "{s}");
    s
}

// Unix only: the socket file, its modes, its path and signals (Windows: tests/it/pipe.rs)
#[cfg(unix)]
#[test]
fn a_second_daemon_on_the_same_data_dir_exits_3_and_the_first_keeps_serving() {
    let first = Daemon::start();
    let before = std::fs::symlink_metadata(&first.socket).unwrap();
    let failure = Daemon::builder()
        .config_dir(&first.config_dir)
        .try_spawn()
        .expect_err("a second daemon on the same data dir must not start");
    assert_eq!(failure.status.code(), Some(3), "{}", failure.log.text());
    let text = failure.log.text();
    assert!(
        text.contains(&first.data_dir().display().to_string())
            && text.contains("is already served by another daemon"),
        "the error should name the data dir:\n{text}"
    );
    // The first daemon's socket is untouched and it still serves.
    let after = std::fs::symlink_metadata(&first.socket).unwrap();
    assert_eq!((before.dev(), before.ino()), (after.dev(), after.ino()));
    assert_serving(&first);

    // The same through ZEROCLAW_CONFIG_DIR instead of --config-dir.
    let failure = Daemon::builder()
        .config_dir(&first.config_dir)
        .config_dir_by_env()
        .try_spawn()
        .expect_err("a second daemon (by env) must not start");
    assert_eq!(failure.status.code(), Some(3), "{}", failure.log.text());
    assert_serving(&first);
}

// Unix only: the socket file, its modes, its path and signals (Windows: tests/it/pipe.rs)
#[cfg(unix)]
#[test]
fn a_second_daemon_on_the_same_socket_exits_3_and_the_first_keeps_serving() {
    let dir = TestDir::new();
    let sock = dir.path().join("shared.sock");
    let first = Daemon::builder().env("ZEROCLAW_SOCKET", &sock).spawn();
    assert_eq!(first.socket, sock);
    // Another data dir, the same socket path.
    let failure = Daemon::builder()
        .env("ZEROCLAW_SOCKET", &sock)
        .try_spawn()
        .expect_err("a second daemon on the same socket must not start");
    assert_eq!(failure.status.code(), Some(3), "{}", failure.log.text());
    assert!(sock.exists());
    assert_serving(&first);
}

// Unix only: the socket file, its modes, its path and signals (Windows: tests/it/pipe.rs)
#[cfg(unix)]
#[test]
fn a_stale_socket_left_by_kill_9_is_replaced() {
    let dir = TestDir::new();
    let mut first = Daemon::builder().config_dir(dir.config_dir()).spawn();
    let sock = first.socket.clone();
    first.kill9();
    // The socket file is left behind, and nobody is listening on it.
    let stale = std::fs::symlink_metadata(&sock).expect("kill -9 leaves the socket file");
    assert!(stale.file_type().is_socket());
    let err = Client::try_connect(&sock).expect_err("nobody listens on a stale socket");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);

    let second = Daemon::builder().config_dir(dir.config_dir()).spawn();
    assert_eq!(second.socket, sock);
    // (Inode numbers may be reused, so liveness is the proof of replacement.)
    assert!(std::fs::symlink_metadata(&sock)
        .unwrap()
        .file_type()
        .is_socket());
    assert_eq!(mode(&sock), 0o600);
    assert_serving(&second);
}

// Unix only: the socket file, its modes, its path and signals (Windows: tests/it/pipe.rs)
#[cfg(unix)]
#[test]
fn socket_and_directories_have_private_modes() {
    let d = Daemon::start();
    let sock_meta = std::fs::symlink_metadata(&d.socket).unwrap();
    assert!(sock_meta.file_type().is_socket());
    assert_eq!(mode(&d.socket), 0o600, "socket");
    assert_eq!(mode(&d.data_dir()), 0o700, "data dir");
    assert_eq!(
        mode(&d.config_dir),
        0o700,
        "config dir (created by the daemon)"
    );
    let config = d.config_dir.join("config.toml");
    assert!(std::fs::symlink_metadata(&config).unwrap().is_file());
    assert_eq!(mode(&config), 0o600, "config.toml");
    assert_eq!(d.socket, d.data_dir().join("daemon.sock"));
    // The created config file is the documented default (§2.1): loadable, echo agent.
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("schema_version = 1"), "{text}");
    assert!(text.contains("[agents.echo]"), "{text}");
    // The ready line (§2.3 step 5).
    assert_eq!(
        d.ready,
        json!({"event":"ready","endpoint":d.socket.display().to_string(),"pid":d.pid,"protocolVersion":1})
    );
}

// Unix only: the socket file, its modes, its path and signals (Windows: tests/it/pipe.rs)
#[cfg(unix)]
#[test]
fn a_regular_file_at_the_socket_path_fails_startup_with_1_and_is_left_alone() {
    let dir = TestDir::new();
    let path = dir.path().join("not-a-socket");
    std::fs::write(&path, b"precious contents\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::symlink_metadata(&path).unwrap();
    let failure = Daemon::builder()
        .env("ZEROCLAW_SOCKET", &path)
        .try_spawn()
        .expect_err("startup must fail when the socket path is a regular file");
    assert_eq!(failure.status.code(), Some(1), "{}", failure.log.text());
    let text = failure.log.text();
    assert!(
        text.contains(&path.display().to_string()) && text.contains("exists and is not a socket"),
        "the error should name the path:\n{text}"
    );
    let after = std::fs::symlink_metadata(&path).unwrap();
    assert!(after.is_file());
    assert_eq!(
        (
            after.ino(),
            after.mode(),
            after.len(),
            after.mtime(),
            after.mtime_nsec()
        ),
        (
            before.ino(),
            before.mode(),
            before.len(),
            before.mtime(),
            before.mtime_nsec()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"precious contents\n");
}

// Unix only: the socket file, its modes, its path and signals (Windows: tests/it/pipe.rs)
#[cfg(unix)]
#[test]
fn a_directory_or_symlink_at_the_socket_path_fails_startup_with_1() {
    let dir = TestDir::new();
    let sub = dir.path().join("a-dir");
    std::fs::create_dir(&sub).unwrap();
    let failure = Daemon::builder()
        .env("ZEROCLAW_SOCKET", &sub)
        .try_spawn()
        .expect_err("startup must fail when the socket path is a directory");
    assert_eq!(failure.status.code(), Some(1), "{}", failure.log.text());
    assert!(sub.is_dir());

    // A symlink, even to a live daemon's socket, is never followed or removed.
    let live = Daemon::start();
    let link = dir.path().join("link.sock");
    std::os::unix::fs::symlink(&live.socket, &link).unwrap();
    let failure = Daemon::builder()
        .env("ZEROCLAW_SOCKET", &link)
        .try_spawn()
        .expect_err("startup must fail when the socket path is a symlink");
    assert_eq!(failure.status.code(), Some(1), "{}", failure.log.text());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_serving(&live);
}

/// Bytes of `sockaddr_un.sun_path` (the NUL included).
#[cfg(unix)]
fn sun_path_len() -> usize {
    std::mem::size_of::<libc::sockaddr_un>() - std::mem::offset_of!(libc::sockaddr_un, sun_path)
}

/// `<dir>/sss…s.sock`, exactly `len` bytes long.
#[cfg(unix)]
fn socket_path_of_len(dir: &Path, len: usize) -> std::path::PathBuf {
    let base = dir.as_os_str().len() + "/".len() + ".sock".len();
    assert!(len > base, "the temp dir path is too long for this test");
    dir.join(format!("{}.sock", "s".repeat(len - base)))
}

// Unix only: the socket file, its modes, its path and signals (Windows: tests/it/pipe.rs)
#[cfg(unix)]
#[test]
fn a_socket_path_longer_than_sun_path_fails_startup_naming_it_and_the_limit() {
    let dir = TestDir::new();
    // The longest path that fits (with its NUL) works ...
    let longest = socket_path_of_len(dir.path(), sun_path_len() - 1);
    let d = Daemon::builder().env("ZEROCLAW_SOCKET", &longest).spawn();
    assert_eq!(d.socket, longest);
    assert_serving(&d);
    drop(d);

    // ... one byte more fails with status 1, naming the path and the limit.
    let long = socket_path_of_len(dir.path(), sun_path_len());
    let failure = Daemon::builder()
        .env("ZEROCLAW_SOCKET", &long)
        .try_spawn()
        .expect_err("startup must fail for a path longer than sun_path");
    assert_eq!(failure.status.code(), Some(1), "{}", failure.log.text());
    let text = failure.log.text();
    assert!(
        text.contains(&long.display().to_string()),
        "the error should name the path:\n{text}"
    );
    // The limit, as a number of its own in the message (path removed).
    let message = text
        .lines()
        .find_map(|l| l.strip_prefix("zeroclaw daemon: "))
        .unwrap_or_else(|| panic!("no error message on stderr:\n{text}"))
        .replace(&long.display().to_string(), "");
    let numbers: Vec<usize> = message
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(
        numbers.contains(&sun_path_len()) || numbers.contains(&(sun_path_len() - 1)),
        "the error should name the limit ({} or {}): {message}",
        sun_path_len() - 1,
        sun_path_len()
    );
    assert!(!long.exists());
}

// Unix only: the socket file, its modes, its path and signals (Windows: tests/it/pipe.rs)
#[cfg(unix)]
#[test]
fn sigterm_and_sigint_exit_0_and_remove_the_socket() {
    for (signal, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT")] {
        let mut d = Daemon::start();
        let mut c = d.client();
        let sock = d.socket.clone();
        d.wait_for_handler(signal);
        d.signal(signal);
        let status = d
            .wait_exit(EXIT_TIMEOUT)
            .unwrap_or_else(|| panic!("the daemon did not exit within {EXIT_TIMEOUT:?} of {name}"));
        assert_eq!(status.code(), Some(0), "{name}: {}", d.log.text());
        assert!(
            std::fs::symlink_metadata(&sock).is_err(),
            "{name}: the socket must be removed"
        );
        // The connected client sees its connection closed.
        c.expect_eof(EXIT_TIMEOUT);
        // Nothing is served at the path any more; the next daemon starts cleanly.
        assert!(Client::try_connect(&sock).is_err());
    }
}

// Unix only: the socket file, its modes, its path and signals (Windows: tests/it/pipe.rs)
#[cfg(unix)]
#[test]
fn sigterm_right_after_the_ready_line_exits_0() {
    for round in 0..20 {
        let mut d = Daemon::start();
        let sock = d.socket.clone();
        // A supervisor may stop the daemon as soon as it reports ready.
        d.signal(libc::SIGTERM);
        let status = d
            .wait_exit(EXIT_TIMEOUT)
            .expect("the daemon did not exit after SIGTERM");
        assert_eq!(
            status.code(),
            Some(0),
            "round {round}: SIGTERM right after the ready line ended the daemon with {status:?}; socket left behind: {}",
            sock.exists()
        );
        assert!(!sock.exists(), "round {round}: socket left behind");
    }
}

// Unix only: the socket file, its modes, its path and signals (Windows: tests/it/pipe.rs)
#[cfg(unix)]
#[test]
fn sighup_does_not_stop_the_daemon() {
    let mut d = Daemon::start();
    let mut c = d.client();
    let from = d.log.len();
    d.wait_for_handler(libc::SIGHUP);
    d.signal(libc::SIGHUP);
    // Logged, then still serving on the same connection and to new clients.
    d.log
        .wait_for(from, common::RECV_TIMEOUT, |v| {
            v.to_string().to_lowercase().contains("sighup")
        })
        .unwrap_or_else(|| panic!("SIGHUP was not logged:\n{}", d.log.text()));
    assert_eq!(c.status()["server_pid"], d.pid);
    assert_serving(&d);
    assert!(d.is_running());
}

// Unix only: the socket file, its modes, its path and signals (Windows: tests/it/pipe.rs)
#[cfg(unix)]
#[test]
fn zeroclaw_socket_is_honoured_by_the_daemon_and_by_zeroclaw_rpc() {
    let dir = TestDir::new();
    let sock = dir.path().join("custom.sock");
    let d = Daemon::builder().env("ZEROCLAW_SOCKET", &sock).spawn();
    assert_eq!(d.socket, sock);
    assert_eq!(d.ready["endpoint"], sock.display().to_string());
    assert_eq!(mode(&sock), 0o600);
    assert!(
        !d.data_dir().join("daemon.sock").exists(),
        "no socket at the default path"
    );
    let s = assert_serving(&d);
    assert_eq!(s["local_ipc_endpoint"], sock.display().to_string());

    // The client resolves the same endpoint from the same environment ...
    let mut cmd = d.cli();
    cmd.env("ZEROCLAW_SOCKET", &sock).args(["rpc", "status"]);
    let (status, out, err) = run_cli(cmd);
    assert_eq!(status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    let result: Value = serde_json::from_str(out.trim_end()).unwrap();
    assert_eq!(result["server_pid"], d.pid);
    assert_eq!(result["local_ipc_endpoint"], sock.display().to_string());

    // ... and without it looks at the default path, where nobody listens.
    let mut cmd = d.cli();
    cmd.args(["rpc", "status"]);
    let (status, out, err) = run_cli(cmd);
    assert_eq!(status.code(), Some(3), "stdout: {out}\nstderr: {err}");
    assert_eq!(out, "");
}

#[test]
fn audit_events_carry_the_peer_label_and_never_frame_contents_or_initialize_extras() {
    let d = Daemon::start();
    let label = own_peer_label();
    let secret = "S3CR3T-7f1e2d";
    let invalid_utf8 = |prefix: &str| -> Vec<u8> { [prefix.as_bytes(), b"\xff\"}\n"].concat() };
    {
        let mut c = d.connect();
        // Rejected frames of every kind, each carrying the secret, one at a time.
        c.send_line(&format!(
            r#"{{"jsonrpc":"2.0","method":"{secret}","params":null,"id":1}}"#
        ));
        assert!(c.recv_line().contains("\"code\":-32600"));
        c.send_line(&format!(r#"{{"jsonrpc":"2.0","result":"{secret}"}}"#));
        c.expect_nothing_before_probe();
        c.send_line(&format!(r#"{{"{secret}""#));
        assert!(c.recv_line().contains("\"code\":-32700"));
        c.send_raw(&invalid_utf8(&format!(r#"{{"x":"{secret}"#)));
        assert!(c.recv_line().contains("\"code\":-32700"));
        c.send_raw(&invalid_utf8(&format!(
            r#"{{"jsonrpc":"2.0","method":"status","id":"{secret}"#
        )));
        assert!(c.recv_line().contains("\"code\":-32700"));
        let mut big = common::sized_frame(&format!(r#"{{"s":"{secret}@PAD@"}}"#), MAX_FRAME + 1);
        big.push(b'\n');
        c.send_raw(&big);
        assert_eq!(c.recv_line(), common::FRAME_TOO_LARGE);
        // A valid response nobody waits for: response_dropped, without its id.
        c.send_line(&format!(
            r#"{{"jsonrpc":"2.0","result":1,"id":"{secret}"}}"#
        ));
        c.expect_nothing_before_probe();
        // initialize with the secret in the extra members the spec says are never logged.
        let init = c.call(
            "initialize",
            json!({"protocolVersion": 1, "env": {"API_KEY": secret, "PATH": "/bin"}, "tui_id": secret, "tui_sig": secret}),
            json!(2),
        );
        assert!(init.get("result").is_some(), "{init}");
        c.send_line(&format!(
            r#"{{"jsonrpc":"2.0","method":"status","params":"{secret}","id":3}}"#
        ));
        assert!(c.recv_line().contains("\"code\":-32600"));
        c.expect_nothing_before_probe();
    }
    // The connection is closed; wait for its event.
    let (_, closed) = d
        .log
        .wait_event(0, "connection_closed", common::RECV_TIMEOUT)
        .unwrap_or_else(|| panic!("no connection_closed:\n{}", d.log.text()));
    assert_eq!(closed["peer"], label, "{closed}");
    assert_eq!(closed["principal_id"], "shared-operator", "{closed}");
    assert_eq!(closed["level"], "INFO", "{closed}");

    let events = d.log.events();
    let named = |n: &str| -> Vec<&Value> { events.iter().filter(|e| e["event"] == n).collect() };
    let accepted = named("connection_accepted");
    assert_eq!(accepted.len(), 1, "{}", d.log.text());
    assert_eq!(accepted[0]["peer"], label);
    assert_eq!(accepted[0]["level"], "INFO");
    let bound = named("principal_bound");
    assert_eq!(bound.len(), 1, "{}", d.log.text());
    assert_eq!(bound[0]["peer"], label);
    assert_eq!(bound[0]["principal_id"], "shared-operator");
    let provider = if cfg!(windows) { "os" } else { "peercred" };
    assert_eq!(bound[0]["auth_provider"], provider);
    assert_eq!(bound[0]["level"], "INFO");
    let rejected = named("frame_rejected");
    // invalid envelope, malformed response, parse error, 2× invalid UTF-8,
    // too large, then (bound) invalid envelope.
    assert_eq!(rejected.len(), 7, "{}", d.log.text());
    for r in &rejected {
        assert_eq!(r["peer"], label, "{r}");
        assert_eq!(r["level"], "INFO", "{r}");
        assert!(r["reason"].is_string(), "{r}");
    }
    assert_eq!(rejected[5]["reason"], "frame_too_large", "{}", rejected[5]);
    assert_eq!(rejected[6]["principal_id"], "shared-operator");
    let dropped = named("response_dropped");
    assert_eq!(dropped.len(), 1, "{}", d.log.text());
    assert_eq!(dropped[0]["peer"], label);

    // The secret is nowhere: not in a frame_rejected, not from initialize.
    let log = d.log.text();
    assert!(!log.contains(secret), "the secret was logged:\n{log}");
    assert!(
        !log.contains("API_KEY"),
        "initialize extras were logged:\n{log}"
    );
    assert!(!log.contains("xxxxxxxx"), "frame contents were logged");
}

#[test]
fn audit_events_never_log_secrets_at_debug_level_either() {
    let d = Daemon::builder().env("ZEROCLAW_LOG", "debug").spawn();
    let secret = "D3BUG-S3CR3T-41";
    let mut c = d.connect();
    let init = c.call(
        "initialize",
        json!({"protocolVersion": 1, "env": {"TOKEN": secret}, "tui_sig": secret}),
        json!(1),
    );
    assert!(init.get("result").is_some(), "{init}");
    c.send_line(&format!(
        r#"{{"jsonrpc":"2.0","method":"status","params":"{secret}","id":2}}"#
    ));
    assert!(c.recv_line().contains("\"code\":-32600"));
    c.send_line(&format!(r#"{{"jsonrpc":"2.0","result":"{secret}"}}"#));
    c.expect_nothing_before_probe();
    drop(c);
    d.log
        .wait_event(0, "connection_closed", common::RECV_TIMEOUT)
        .unwrap_or_else(|| panic!("no connection_closed:\n{}", d.log.text()));
    let log = d.log.text();
    assert!(
        !log.contains(secret),
        "the secret was logged at debug level:\n{log}"
    );
}

#[test]
fn every_frame_rejected_event_has_a_line_len() {
    let d = Daemon::start();
    let mut c = d.connect();
    c.send_raw(b"{\"a\":\"\xff\"}\n");
    assert!(c.recv_line().contains("\"code\":-32700"));
    c.send_line("{");
    assert!(c.recv_line().contains("\"code\":-32700"));
    c.expect_nothing_before_probe();
    // The log is read from the daemon's stderr: wait for both lines.
    let (first, _) = d
        .log
        .wait_event(0, "frame_rejected", common::RECV_TIMEOUT)
        .unwrap_or_else(|| panic!("no frame_rejected:\n{}", d.log.text()));
    d.log
        .wait_event(first + 1, "frame_rejected", common::RECV_TIMEOUT)
        .unwrap_or_else(|| panic!("one frame_rejected only:\n{}", d.log.text()));
    let rejected = d.log.events_named("frame_rejected");
    assert_eq!(rejected.len(), 2, "{}", d.log.text());
    // The invalid UTF-8 frame is 9 bytes long; "{" is 1.
    assert_eq!(rejected[0]["line_len"], 9, "{}", rejected[0]);
    assert_eq!(rejected[1]["line_len"], 1, "{}", rejected[1]);
}

#[test]
fn the_client_count_in_status_follows_connections() {
    let (d, mut a) = Daemon::with_client();
    assert_eq!(a.status()["connections"], 1);
    let b = d.connect();
    let mut c = d.client();
    assert_eq!(c.status()["connections"], 3);
    drop(b);
    // Closing is asynchronous: poll (bounded) until the count drops.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let n = a.status()["connections"].as_u64().unwrap();
        if n == 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "count stuck at {n}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
