//! The client commands (§13): `zeroclaw rpc` and `zeroclaw status`,
//! their output streams and exit statuses.

use crate::common;

#[cfg(unix)]
use std::io::{BufRead, BufReader, Read, Write};
#[cfg(unix)]
use std::os::unix::net::UnixListener;
use std::process::Command;
use std::time::Duration;
#[cfg(unix)]
use std::time::Instant;

use common::{hermetic_env, run_cli, Daemon, TestDir, BIN};
use serde_json::{json, Value};

/// Parses stdout as exactly one JSON line.
fn one_json_line(out: &str) -> Value {
    assert!(
        out.ends_with('\n'),
        "stdout should end with a newline: {out:?}"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "stdout should be one line: {out:?}");
    serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("not JSON ({e}): {out:?}"))
}

#[test]
fn rpc_status_prints_the_result_on_stdout_and_exits_0() {
    let d = Daemon::start();
    let (code, out, err) = d.rpc_cli(&["status"]);
    assert_eq!(code, Some(0), "stdout: {out}\nstderr: {err}");
    assert_eq!(err, "", "nothing on stderr for a plain request");
    let r = one_json_line(&out);
    // The result object itself, not the envelope.
    assert!(r.get("jsonrpc").is_none() && r.get("id").is_none(), "{r}");
    assert_eq!(r["server_pid"], d.pid);
    assert_eq!(r["principal_id"], "shared-operator");
    assert_eq!(r["protocol_version"], 1);
    assert_eq!(r["server_version"], common::VERSION);
    assert_eq!(r["ephemeral"], false);
    assert_eq!(r["connections"], 1);
    assert_eq!(r["config_dir"], d.config_dir.display().to_string());
    assert_eq!(r["local_ipc_endpoint"], d.socket.display().to_string());

    // Explicit params object.
    let (code, out, err) = d.rpc_cli(&["status", "{}"]);
    assert_eq!(code, Some(0), "stdout: {out}\nstderr: {err}");
    assert_eq!(one_json_line(&out)["server_pid"], d.pid);
    let (code, out, err) = d.rpc_cli(&["status", r#"{"extra":[1,2]}"#]);
    assert_eq!(code, Some(0), "stdout: {out}\nstderr: {err}");
    assert_eq!(one_json_line(&out)["server_pid"], d.pid);
}

#[test]
fn rpc_of_an_unknown_method_prints_the_error_on_stderr_and_exits_1() {
    let d = Daemon::start();
    let (code, out, err) = d.rpc_cli(&["nope"]);
    assert_eq!(code, Some(1), "stdout: {out}\nstderr: {err}");
    assert_eq!(out, "", "nothing on stdout for an error");
    assert_eq!(
        one_json_line(&err),
        json!({"code": -32601, "message": "Unknown method: nope"})
    );
}

#[test]
fn rpc_with_params_that_are_not_an_object_exits_2() {
    let d = Daemon::start();
    for params in ["[]", "x", "null", "1", "\"s\"", "{", "[{}]"] {
        let (code, out, err) = d.rpc_cli(&["status", params]);
        assert_eq!(
            code,
            Some(2),
            "params {params:?}: stdout: {out}\nstderr: {err}"
        );
        assert_eq!(out, "", "params {params:?}");
        assert!(!err.is_empty(), "params {params:?}: a usage error says why");
    }
    // Usage errors need no daemon (and never reach one: no connection was logged).
    assert!(
        d.log.events_named("connection_accepted").is_empty(),
        "{}",
        d.log.text()
    );
    // Missing METHOD is a usage error too.
    let (code, _, _) = d.rpc_cli(&[]);
    assert_eq!(code, Some(2));
}

#[test]
fn client_commands_exit_3_without_a_daemon() {
    let dir = TestDir::new();
    for args in [&["rpc", "status"][..], &["status"], &["status", "--json"]] {
        let mut cmd = Command::new(BIN);
        hermetic_env(&mut cmd, dir.path());
        cmd.arg("--config-dir").arg(dir.config_dir()).args(args);
        let (status, out, err) = run_cli(cmd);
        assert_eq!(
            status.code(),
            Some(3),
            "{args:?}: stdout: {out}\nstderr: {err}"
        );
        assert_eq!(out, "", "{args:?}");
        assert!(!err.is_empty(), "{args:?}: says why on stderr");
    }
    // A client never creates the daemon's socket.
    assert!(!dir.config_dir().join("data/daemon.sock").exists());
}

#[test]
fn status_prints_readable_text_and_json_with_json() {
    let d = Daemon::start();
    let mut cmd = d.cli();
    cmd.arg("status");
    let (status, out, err) = run_cli(cmd);
    assert_eq!(status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    assert!(
        serde_json::from_str::<Value>(out.trim()).is_err(),
        "readable output, not JSON: {out}"
    );
    for needle in [
        format!("pid {}", d.pid),
        "shared-operator".to_owned(),
        d.socket.display().to_string(),
        d.config_dir.join("config.toml").display().to_string(),
        d.data_dir().display().to_string(),
        common::VERSION.to_owned(),
    ] {
        assert!(out.contains(&needle), "{needle:?} missing from:\n{out}");
    }

    let mut cmd = d.cli();
    cmd.args(["status", "--json"]);
    let (status, out, err) = run_cli(cmd);
    assert_eq!(status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    let r = one_json_line(&out);
    assert_eq!(r["server_pid"], d.pid);
    assert_eq!(r["principal_id"], "shared-operator");
    assert_eq!(r["local_ipc_endpoint"], d.socket.display().to_string());
}

#[test]
fn config_dir_is_accepted_after_the_subcommand() {
    let d = Daemon::start();
    let home = d.config_dir.parent().unwrap().to_owned();
    let cases: [&[&str]; 4] = [
        &["rpc", "status", "--config-dir"],
        &["rpc", "--config-dir"],
        &["status", "--json", "--config-dir"],
        &["status", "--config-dir"],
    ];
    for args in cases {
        let mut cmd = Command::new(BIN);
        hermetic_env(&mut cmd, &home);
        cmd.args(args).arg(&d.config_dir);
        if args == ["rpc", "--config-dir"] {
            cmd.arg("status");
        }
        let (status, out, err) = run_cli(cmd);
        assert_eq!(
            status.code(),
            Some(0),
            "{args:?}: stdout: {out}\nstderr: {err}"
        );
        assert!(out.contains(&d.pid.to_string()), "{args:?}: {out}");
    }
    // ZEROCLAW_CONFIG_DIR reaches the same daemon.
    let mut cmd = Command::new(BIN);
    hermetic_env(&mut cmd, &home);
    cmd.env("ZEROCLAW_CONFIG_DIR", &d.config_dir)
        .args(["rpc", "status"]);
    let (status, out, err) = run_cli(cmd);
    assert_eq!(status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    assert_eq!(one_json_line(&out)["server_pid"], d.pid);
}

#[test]
fn rpc_initializes_before_sending_its_request() {
    // `zeroclaw rpc initialize` works, and the daemon bound a principal twice
    // on the CLI's one connection: the client's own handshake, then ours.
    let d = Daemon::start();
    let (code, out, err) = d.rpc_cli(&["initialize", r#"{"protocolVersion":1}"#]);
    assert_eq!(code, Some(0), "stdout: {out}\nstderr: {err}");
    let r = one_json_line(&out);
    assert_eq!(r["protocolVersion"], 1);
    assert_eq!(r["serverPid"], d.pid);
    // The daemon logs the binding after it answers, so the second line may
    // land after the CLI has exited: wait for it rather than read once.
    let first = d
        .log
        .wait_event(0, "principal_bound", Duration::from_secs(10));
    let second = first.and_then(|(i, _)| {
        d.log
            .wait_event(i + 1, "principal_bound", Duration::from_secs(10))
    });
    assert!(
        second.is_some(),
        "initialize by the client, then ours:\n{}",
        d.log.text()
    );
    assert_eq!(d.log.events_named("principal_bound").len(), 2);
}

/// The size of the line the fake daemon below offers: eight times the
/// frame limit (8 MiB, src/limits.rs).
#[cfg(unix)]
const HUGE_LINE: usize = 64 << 20;

// A fake daemon on a Unix socket; the bound itself is the same code on Windows.
#[cfg(unix)]
#[test]
fn rpc_refuses_a_line_over_the_frame_limit_without_reading_it_whole() {
    // A fake daemon answers `initialize`, then answers `status` with one
    // endless-looking line: a client that buffers lines reads it all (and
    // would grow with it); ours reads to the frame limit, says so, and
    // hangs up, so the daemon cannot push much more than the limit into it.
    let dir = TestDir::new();
    let sock = dir.path().join("fake.sock");
    let listener = UnixListener::bind(&sock).expect("bind fake daemon");
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut w = stream.try_clone().expect("clone");
        let mut lines = BufReader::new(stream);
        let mut line = String::new();
        let mut written = 0usize;
        while lines.read_line(&mut line).unwrap_or(0) > 0 {
            let req: Value = serde_json::from_str(&line).expect("client sends JSON");
            line.clear();
            if req["method"] == "initialize" {
                let answer =
                    json!({"jsonrpc": "2.0", "result": {"protocolVersion": 1}, "id": req["id"]});
                w.write_all(format!("{answer}\n").as_bytes())
                    .expect("answer");
                continue;
            }
            let head = format!(r#"{{"jsonrpc":"2.0","id":{},"result":""#, req["id"]);
            if w.write_all(head.as_bytes()).is_err() {
                break;
            }
            let mib = vec![b'x'; 1 << 20];
            while written < HUGE_LINE && w.write_all(&mib).is_ok() {
                written += mib.len();
            }
            // No end of line and no end of stream: only the client ends this.
            let _ = lines.read_to_end(&mut Vec::new());
            break;
        }
        written
    });
    let mut cmd = Command::new(BIN);
    hermetic_env(&mut cmd, dir.path());
    cmd.env("ZEROCLAW_SOCKET", &sock)
        .arg("--config-dir")
        .arg(dir.config_dir())
        .args(["rpc", "--timeout", "20", "status"]);
    let started = Instant::now();
    let (status, out, err) = run_cli(cmd);
    let took = started.elapsed();
    let written = server.join().expect("fake daemon");
    assert_eq!(status.code(), Some(1), "stdout: {out}\nstderr: {err}");
    assert_eq!(out, "", "no result");
    assert!(
        err.starts_with("zeroclaw: ") && err.contains("over the 8388608-byte frame limit"),
        "a clear error, not a timeout: {err}"
    );
    assert!(
        err.len() < 1000,
        "the line is not echoed: {} bytes",
        err.len()
    );
    // Read no further than the limit and the socket's buffers.
    assert!(
        written < 16 << 20,
        "the client took {written} bytes of a line over the limit"
    );
    assert!(took < Duration::from_secs(15), "took {took:?}");
}
