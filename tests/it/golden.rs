//! Golden transcripts (the design card's "Testing"): each `tests/golden/*.transcript`
//! is replayed against a fresh daemon over the real socket.
//!
//! # Transcript format
//!
//! One directive per line; blank lines and lines starting with `#` are ignored.
//!
//! | Line | Meaning |
//! |---|---|
//! | `--> FRAME` | send `FRAME` exactly as written, then `\n` |
//! | `-->raw BYTES` | send `BYTES` with escapes `\xHH`, `\r`, `\n`, `\t`, `\\` and nothing added (write `\n` yourself) |
//! | `-->sized N TEMPLATE` | send `TEMPLATE` with `@PAD@` replaced by `x`s so the frame is exactly `N` bytes, then `\n` |
//! | `--> (eof)` | half-close the client's write side |
//! | `<-- JSON` | the next frame equals `JSON` as a JSON value (objects need the same members), with the patterns below |
//! | `<--= LINE` | the next frame is byte for byte `LINE` |
//! | `<--id RAW` | the next frame is a response whose `id` is exactly the JSON text `RAW` |
//! | `<-- (nothing)` | nothing is answered: a probe request (unknown method) must get the very next frame; after `--> (eof)`, no byte within 300 ms |
//! | `<-- (eof)` | the daemon closes the connection without sending more |
//! | `<~~ JSON` | a later daemon log line (JSON on stderr) contains the members of `JSON` (subset match, patterns allowed); the search continues after it |
//! | `!~~ TEXT` | no daemon log line so far contains `TEXT` |
//! | `@@ reconnect` | close this connection and open a new one |
//!
//! Patterns (JSON strings inside expected values): `"$any"` matches any
//! value; `"$starts:TEXT"` a string starting with `TEXT`; `"$uint"` a
//! non-negative integer; `"$pid"` the daemon's pid (a number); `"$version"`
//! the package version; `"$peer"` this test process's peer label
//! `unix:pid=<pid>,uid=<uid>` (`pipe:local` on Windows); `"$config_dir"`, `"$config_file"`,
//! `"$data_dir"`, `"$socket"` the daemon's paths.
//!
//! At the end of a file whose connection is still writable, a final probe
//! checks that the daemon owes no further frame.
//!
//! Each file of the one list (`common::golden::transcripts!`) has a test
//! below (`golden!`); `every_transcript_is_listed` keeps the list and the
//! directory in step.
//!
//! On Windows a transcript that half-closes (`--> (eof)`) is skipped with
//! its reason: a named pipe has no half-close; and `peercred` reads as the
//! Windows daemon answers (`authMethods` `["native"]`, provider `os`).

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::golden::{self, unescape, Vars};
use common::{describe, sized_frame, Client, Daemon, RecvError, RECV_TIMEOUT};
use serde_json::value::RawValue;
use serde_json::Value;

/// Lets the caller name the file and line of a failing directive.
struct Ctx<'a> {
    file: &'a str,
    line_no: usize,
    line: &'a str,
    daemon: &'a Daemon,
}

impl Ctx<'_> {
    fn fail(&self, msg: impl std::fmt::Display) -> ! {
        let log = self.daemon.log.lines();
        let tail = &log[log.len().saturating_sub(15)..];
        panic!(
            "\n{}:{}: {}\n    directive: {}\n    daemon log (last {} lines):\n      {}\n",
            self.file,
            self.line_no,
            msg,
            self.line,
            tail.len(),
            tail.join("\n      ")
        );
    }
}

fn parse_json(ctx: &Ctx<'_>, text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| ctx.fail(format!("bad expected JSON: {e}")))
}

fn recv(ctx: &Ctx<'_>, client: &mut Client) -> String {
    match client.try_recv_line(RECV_TIMEOUT) {
        Ok(l) => l,
        Err(e) => ctx.fail(format!("expected a frame, got {}", describe(&e))),
    }
}

/// The transcript as this platform's daemon answers it: on Windows a pipe
/// peer has no credentials, so `authMethods` is `["native"]` (§10.1's
/// table) and the shared operator is bound by the `os` provider.
fn platform(text: String) -> String {
    if cfg!(windows) {
        text.replace(r#"["native","peercred"]"#, r#"["native"]"#)
            .replace(r#""auth_provider":"peercred""#, r#""auth_provider":"os""#)
    } else {
        text
    }
}

/// Replays one transcript against a fresh daemon.
fn run_file(name: &str) {
    let text = platform(golden::read(name));
    if cfg!(windows) && text.lines().any(|l| l.trim() == "--> (eof)") {
        common::skip(&format!(
            "tests/golden/{name} half-closes its connection; a named pipe cannot"
        ));
        return;
    }
    let display = format!("tests/golden/{name}");
    let daemon = Daemon::start();
    let vars = Vars::of(&daemon);
    let mut client = daemon.connect();
    let mut log_cursor = 0usize;
    let mut last = (0usize, String::new());

    for (line_no, line, op, arg) in golden::directives(&text) {
        let ctx = Ctx {
            file: &display,
            line_no,
            line,
            daemon: &daemon,
        };
        last = (line_no, line.to_owned());
        match op {
            "-->" if arg == "(eof)" => client.shutdown_write(),
            "-->" => client.send_line(arg),
            "-->raw" => {
                let bytes = unescape(arg).unwrap_or_else(|e| ctx.fail(e));
                client.send_raw(&bytes);
            }
            "-->sized" => {
                let (n, template) = arg
                    .split_once(' ')
                    .unwrap_or_else(|| ctx.fail("usage: -->sized N TEMPLATE"));
                let n: usize = n
                    .parse()
                    .unwrap_or_else(|_| ctx.fail(format!("bad size {n:?}")));
                let mut frame = sized_frame(template, n);
                frame.push(b'\n');
                client.send_raw(&frame);
            }
            "<--" if arg == "(nothing)" => {
                if client.write_closed() {
                    match client.try_recv_line(Duration::from_millis(300)) {
                        Err(RecvError::Timeout(p)) if p.is_empty() => {}
                        Err(RecvError::Eof(p)) if p.is_empty() => {}
                        Ok(l) => ctx.fail(format!("expected nothing, got {l}")),
                        Err(e) => ctx.fail(format!("expected nothing, got {}", describe(&e))),
                    }
                } else {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        client.expect_nothing_before_probe()
                    }));
                    if let Err(p) = r {
                        let msg = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        ctx.fail(format!("expected nothing: {msg}"));
                    }
                }
            }
            "<--" if arg == "(eof)" => match client.try_recv_line(RECV_TIMEOUT) {
                Err(RecvError::Eof(p)) if p.is_empty() => {}
                Ok(l) => ctx.fail(format!("expected end of stream, got {l}")),
                Err(e) => ctx.fail(format!("expected end of stream, got {}", describe(&e))),
            },
            "<--" => {
                let expected = parse_json(&ctx, arg);
                let got = recv(&ctx, &mut client);
                let actual: Value = serde_json::from_str(&got)
                    .unwrap_or_else(|e| ctx.fail(format!("frame is not JSON ({e}): {got}")));
                if !vars.matches(&expected, &actual, false) {
                    ctx.fail(format!("frame mismatch\n    got:      {got}"));
                }
            }
            "<--=" => {
                let got = recv(&ctx, &mut client);
                if got != arg {
                    ctx.fail(format!("frame differs\n    got:      {got}"));
                }
            }
            "<--id" => {
                // Raw members only: a number id such as 1e400 fits no f64.
                let got = recv(&ctx, &mut client);
                let members: BTreeMap<String, &RawValue> = serde_json::from_str(&got)
                    .unwrap_or_else(|e| {
                        ctx.fail(format!("frame is not a JSON object ({e}): {got}"))
                    });
                if members.contains_key("method")
                    || members.contains_key("result") == members.contains_key("error")
                {
                    ctx.fail(format!("not a response: {got}"));
                }
                match members.get("id") {
                    Some(id) if id.get() == arg => {}
                    Some(id) => ctx.fail(format!("id differs: got {} in\n    {got}", id.get())),
                    None => ctx.fail(format!("no id member: {got}")),
                }
            }
            "<~~" => {
                let expected = parse_json(&ctx, arg);
                match daemon.log.wait_for(log_cursor, RECV_TIMEOUT, |v| {
                    vars.matches(&expected, v, true)
                }) {
                    Some((i, _)) => log_cursor = i + 1,
                    None => ctx.fail(format!(
                        "no log line after line {log_cursor} of the daemon log matches"
                    )),
                }
            }
            "!~~" => {
                if let Some(l) = daemon.log.lines().iter().find(|l| l.contains(arg)) {
                    ctx.fail(format!("the daemon log contains it: {l}"));
                }
            }
            "@@" if arg == "reconnect" => {
                client = daemon.connect();
            }
            _ => ctx.fail("unknown directive"),
        }
    }
    if !client.write_closed() {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            client.expect_nothing_before_probe()
        }));
        if r.is_err() {
            panic!(
                "{display}: after the last directive (line {}: {}), the daemon sent an unexpected frame",
                last.0, last.1
            );
        }
    }
}

/// How many times a file is replayed, each against a fresh daemon: more
/// than once for races that show only some of the time.
fn replays(file: &str) -> usize {
    match file {
        "eof.transcript" => 12,
        _ => 1,
    }
}

macro_rules! golden {
    ($($name:ident => $file:literal;)*) => {
        $(
            #[test]
            fn $name() {
                for _ in 0..replays($file) {
                    run_file($file);
                }
            }
        )*
        /// Every transcript that has a test above.
        const LISTED: &[&str] = &[$($file),*];
    };
}

golden::transcripts!(golden);

#[test]
fn every_transcript_is_listed() {
    golden::assert_every_transcript_listed(LISTED);
}

/// Every client→daemon method of protocol version 1, in the order of the
/// §6.4 table (the order `capabilities` must follow), and the
/// protocol additions served the same way.
const METHOD_TABLE: &[&str] = &[
    "initialize",
    "status",
    "session/new",
    "session/prompt",
    "session/cancel",
    "session/close",
    "session/approve",
    "session/kill",
    "session/delete",
    "session/list",
    "session/list-acp",
    "session/messages",
    "config/get",
    "config/set",
    "config/set-many",
    "file/attach",
    "file/upload/begin",
    "file/upload/chunk",
    "file/upload/commit",
    "pairing/list",
    "pairing/create",
    "pairing/revoke",
    // Protocol additions (docs/protocol-additions.md), after version 1's methods.
    "config/sections",
    "config/templates",
    "config/list",
    "config/map-keys",
    "agents/status",
    "session/git_branch",
    "session/attach",
    "health",
    "logs/subscribe",
    "logs/query",
    "pairing/code",
    "config/replace",
    "debug/set-faults",
];

/// `capabilities` (§8.1) lists exactly the methods served, in table order.
fn check_capabilities(test_faults: bool) {
    let d = if test_faults {
        Daemon::builder().arg("--test-faults").spawn()
    } else {
        Daemon::start()
    };
    let mut probe = d.connect();
    let caps: Vec<String> = {
        let mut c = d.connect();
        let r = c.initialize();
        serde_json::from_value(r["capabilities"].clone()).expect("capabilities is a string array")
    };
    assert_eq!(&caps[..2], ["initialize", "status"], "{caps:?}");
    // A subsequence of the table: known names, table order, no repeats.
    let mut at = 0;
    for c in &caps {
        match METHOD_TABLE[at..].iter().position(|m| m == c) {
            Some(i) => at += i + 1,
            None => panic!("{c:?} is unknown or out of the §6.4 order in {caps:?}"),
        }
    }
    // Served means known to the method table: before initialize a served
    // method is -32010, an unserved one -32601.
    for (i, m) in METHOD_TABLE.iter().enumerate().skip(1) {
        let v = probe.call(m, serde_json::json!({}), serde_json::json!(i));
        let code = v["error"]["code"].as_i64();
        if caps.iter().any(|c| c == m) {
            assert_eq!(code, Some(-32010), "{m} is in capabilities: {v}");
        } else {
            assert_eq!(code, Some(-32601), "{m} is not in capabilities: {v}");
        }
    }
    if !test_faults {
        assert!(!caps.iter().any(|c| c == "debug/set-faults"), "{caps:?}");
    }
}

#[test]
fn capabilities_list_the_served_methods_in_table_order() {
    check_capabilities(false);
}

#[test]
fn capabilities_with_test_faults_list_the_served_methods_in_table_order() {
    check_capabilities(true);
}

#[test]
fn unescape_handles_every_escape() {
    assert_eq!(
        unescape(r"a\x00\xff\r\n\t\\b").unwrap(),
        b"a\x00\xff\r\n\t\\b".to_vec()
    );
    assert!(unescape(r"\q").is_err());
    assert!(unescape(r"\x4").is_err());
}
