//! `config.toml` is a file nobody vouches for, over a real daemon and socket: a FIFO put in its
//! place is refused at once and no client waits behind it, a link to `/dev/zero` is refused
//! without the daemon's memory growing, a syntax error is told by line, column and key but never
//! by the text of the line (a secret with a missing quote, the environment block a link points
//! at), and a write keeps a byte-order mark and CRLF line ends (docs/reliability.md, "Files the
//! daemon reads on its own").

// Unix only: FIFOs, symlinks, /dev/zero, /proc.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::start::{write_config, Env, ECHO_ONLY};
use common::users::config_bytes;
use common::{Daemon, TestDir, RECV_TIMEOUT};
use serde_json::{json, Value};

/// A daemon on `text` that polls config.toml every 50 ms; `build` adds to its builder.
fn start(text: &str, build: impl FnOnce(common::DaemonBuilder) -> common::DaemonBuilder) -> Env {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(&cfg, text);
    let b = Daemon::builder()
        .config_dir(&cfg)
        .env("ZEROCLAW_CONFIG_POLL_MS", "50");
    Env {
        daemon: build(b).spawn(),
        dir,
    }
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL");
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// The `errors` of the next `config_reload_refused` from log line `from` on.
#[track_caller]
fn refused_after(env: &Env, from: usize) -> String {
    let (_, ev) = env
        .log
        .wait_event(from, "config_reload_refused", RECV_TIMEOUT)
        .expect("config_reload_refused logged");
    ev["errors"].as_str().unwrap_or_default().to_owned()
}

fn set(c: &mut common::Client, prop: &str, value: Value) -> Result<Value, Value> {
    c.request("config/set", json!({"prop": prop, "value": value}))
}

#[test]
fn a_fifo_at_config_toml_is_refused_at_once_and_no_client_waits_behind_it() {
    let env = start(ECHO_ONLY, |b| b);
    let mut c = env.client();
    let file = env.config_dir.join("config.toml");
    let aside = env.config_dir.join("config.toml.real");
    let from = env.log.len();
    std::fs::rename(&file, &aside).expect("moving config.toml aside");
    mkfifo(&file);

    // The poll sees the change; the reload is refused instead of waiting for a writer.
    let errors = refused_after(&env, from);
    assert!(errors.contains("not a regular file"), "{errors}");
    // A write reads the file under the config write lock: answered at once, naming the problem.
    let started = Instant::now();
    let e = set(&mut c, "agents.echo.chunk_chars", json!(3)).expect_err("refused");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(e["code"], -32603, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not a regular file"),
        "{e}"
    );
    // Pairing commits a token through the same write: answered at once too.
    let e = c.request("pairing/create", json!({})).expect_err("refused");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not a regular file"),
        "{e}"
    );
    // SIGHUP takes the same road.
    let from = env.log.len();
    env.wait_for_handler(libc::SIGHUP);
    env.signal(libc::SIGHUP);
    assert!(refused_after(&env, from).contains("not a regular file"));
    c.status();

    // The real file back: everything works again, without a restart.
    std::fs::remove_file(&file).expect("removing the FIFO");
    std::fs::rename(&aside, &file).expect("putting config.toml back");
    set(&mut c, "agents.echo.chunk_chars", json!(3)).expect("a write after the file is back");
    c.ok("pairing/create", json!({}));
    let text = String::from_utf8(config_bytes(&env.config_dir)).expect("UTF-8");
    assert!(text.contains("chunk_chars = 3"), "{text}");
}

#[test]
fn a_config_toml_linked_to_dev_zero_is_refused_and_memory_stays_small() {
    // Were the file read whole, the allocation would fail here instead of the machine swapping.
    let env = start(ECHO_ONLY, |b| b.address_space_limit(2 << 30));
    let mut c = env.client();
    let file = env.config_dir.join("config.toml");
    let aside = env.config_dir.join("config.toml.real");
    let from = env.log.len();
    std::fs::rename(&file, &aside).expect("moving config.toml aside");
    std::os::unix::fs::symlink("/dev/zero", &file).expect("linking /dev/zero");

    let errors = refused_after(&env, from);
    assert!(errors.contains("not a regular file"), "{errors}");
    let e = set(&mut c, "agents.echo.chunk_chars", json!(3)).expect_err("refused");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not a regular file"),
        "{e}"
    );
    // A few more polls' worth of time: nothing is being read in the background.
    std::thread::sleep(Duration::from_millis(500));
    c.status();
    match env.rss_kib() {
        Some(kib) => assert!(kib < 200 * 1024, "the daemon holds {kib} KiB"),
        None => common::skip("no /proc: the daemon's memory was not measured"),
    }
    std::fs::remove_file(&file).expect("removing the link");
    std::fs::rename(&aside, &file).expect("putting config.toml back");
    set(&mut c, "agents.echo.chunk_chars", json!(3)).expect("a write after the file is back");
}

const SECRET: &str = "hunter2-do-not-log";

/// An edit whose secret lost its closing quote.
fn broken_text() -> String {
    format!("{ECHO_ONLY}\n[agents.tool]\nbackend = \"command\"\ncommand = [\"cat\"]\nenv = {{ TOKEN = \"{SECRET} }}\n")
}

#[test]
fn a_syntax_error_is_told_by_line_column_and_key_never_by_its_text() {
    let env = start(ECHO_ONLY, |b| b.env("ZC_TEST_ENV_SECRET", "envsecret-4242"));
    let mut c = env.client();
    let file = env.config_dir.join("config.toml");
    let from = env.log.len();
    let tmp = env.config_dir.join("config.toml.hand");
    std::fs::write(&tmp, broken_text()).expect("writing the edit");
    std::fs::rename(&tmp, &file).expect("renaming the edit into place");
    let errors = refused_after(&env, from);
    assert!(!errors.contains(SECRET), "{errors}");
    assert!(errors.contains("line 9, column "), "{errors}");
    assert!(errors.contains("(key agents.tool.env)"), "{errors}");

    // The first line of whatever a link points at: the daemon's own environment block.
    let from = env.log.len();
    std::fs::remove_file(&file).expect("removing the edit");
    std::os::unix::fs::symlink("/proc/self/environ", &file).expect("linking environ");
    let errors = refused_after(&env, from);
    assert!(errors.contains("line 1, column "), "{errors}");
    assert!(!errors.contains("envsecret-4242"), "{errors}");

    // Neither the stderr log nor `logs/query` holds either text.
    let logs = c.ok("logs/query", json!({"limit": 2048})).to_string();
    let stderr = env.log.text();
    for (what, text) in [("logs/query", &logs), ("the stderr log", &stderr)] {
        assert!(text.contains("config_reload_refused"), "{what}: {text}");
        for secret in [SECRET, "envsecret-4242"] {
            assert!(!text.contains(secret), "{what} shows {secret}:\n{text}");
        }
    }
}

#[test]
fn a_start_refused_for_a_syntax_error_does_not_print_the_line() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(&cfg, &broken_text());
    let failed = Daemon::builder()
        .config_dir(&cfg)
        .try_spawn()
        .expect_err("the daemon refuses to start");
    let text = failed.log.text();
    assert!(!text.contains(SECRET), "{text}");
    assert!(text.contains("line 9, column "), "{text}");
}

#[test]
fn config_set_keeps_a_byte_order_mark_and_crlf_line_ends() {
    let text = "\u{feff}# mine\r\nschema_version = 1\r\n\r\n[agents.echo]\r\nbackend = \"echo\"\r\nchunk_chars = 16\r\n";
    let env = start(text, |b| b);
    let mut c = env.client();
    set(&mut c, "agents.echo.chunk_chars", json!(4)).expect("config/set");
    let want = text.replace("chunk_chars = 16", "chunk_chars = 4");
    assert_eq!(
        String::from_utf8(config_bytes(&env.config_dir)).expect("UTF-8"),
        want
    );
    // The command a person types, a new key this time: a line of its own, CRLF too.
    let mut cmd = env.cli();
    cmd.args(["config", "set", "agents.echo.timeout_secs", "30"]);
    let (code, out, err) = common::run_cli_code(cmd);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let want = format!("{want}timeout_secs = 30\r\n");
    assert_eq!(config_bytes(&env.config_dir), want.as_bytes());
}
