//! The dashboard in a real browser: Debian's Chromium, headless, driven by
//! `tests/browser/dashboard.spec.mjs` (playwright-core, plain node). This
//! test starts the daemon with the gateway, prepares three sessions (a long
//! one for paging, a hostile one whose transcript must stay inert, a killed
//! one), runs
//! the script and asserts its exit status; when the script asks for a
//! daemon restart ("RESTART" on its stdout) it SIGKILLs the daemon and
//! starts it again on the same port and config ("RESTARTED" on its stdin).
//!
//! Skipped (printed `SKIPPED dashboard_browser: …`) when node, the browser
//! or the script's packages (`npm ci` in tests/browser) are missing, unless `CI=true`: then it
//! fails (`.ci/run` installs chromium and runs `npm ci`).
//! `ZC_SCREENSHOTS=1` makes the script write `docs/dashboard/*.png`.
//! The script also times a 100,000-chunk turn in the page against a bare
//! WebSocket reader and prints a `perf:` line (docs/gateway.md).

// Unix only: Chromium and Node.js (playwright-core), and SIGTERM to the daemon.

use crate::common;
use crate::gateway_support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::Daemon;
use gateway_support::start;

const HOSTILE: &str = "<script>alert(1)</script>\n<img src=x onerror=alert(2)>\n[click](javascript:alert(3)) <a href=\"javascript:alert(3)\">x</a>\n\u{202E}gnp.exe\n::tool x<svg/onload=alert(6)> {\"v\":\"<img src=x onerror=alert(7)>\"}";

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

/// Why the browser test cannot run here, if it cannot.
fn missing() -> Option<String> {
    let chromium = std::env::var("ZC_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !Path::new(&chromium).exists() {
        return Some(format!(
            "no browser at {chromium} (apt-get install chromium)"
        ));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Some("node is not installed".into());
    }
    if !browser_dir().join("node_modules/playwright-core").exists() {
        return Some(
            "tests/browser/node_modules is missing (npm ci --prefix tests/browser)".into(),
        );
    }
    None
}

#[test]
fn dashboard_browser() {
    if let Some(why) = missing() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("dashboard_browser cannot run under CI: {why}");
        }
        skip_test!("{why}");
    }
    let mut gw = start("", &[]);
    gw.pairing_code().expect("a pairing code at startup");
    // Streamed in small chunks, so a turn is visibly in progress.
    let config = gw.dir.config_dir().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let mut c = gw.daemon.client();
    c.initialize();
    c.new_session_of("echo", "s-hostile", "acp");
    c.prompt_ok("s-hostile", HOSTILE);
    c.new_session_of("echo", "s-long", "acp");
    for i in 0..30 {
        c.prompt_ok("s-long", &format!("message {i}"));
    }
    c.new_session_of("echo", "s-killed", "acp");
    c.prompt_ok("s-killed", "bye");
    let killed = c.call(
        "session/kill",
        serde_json::json!({"session_id": "s-killed"}),
        serde_json::json!(90),
    );
    assert_eq!(killed["result"]["killed"], true, "{killed}");
    drop(c);
    assert!(text.contains("[agents.echo]"), "{text}");
    std::fs::write(&config, format!("{text}chunk_chars = 4\n")).unwrap();
    gw.daemon.signal(libc::SIGTERM);
    gw.daemon
        .wait_exit(common::EXIT_TIMEOUT)
        .expect("the daemon did not stop");
    gw.daemon = Daemon::builder().config_dir(gw.dir.config_dir()).spawn();
    // The code of the first start was not used; the restarted daemon logs its own.
    let code = gw.pairing_code().expect("a pairing code after the restart");

    let mut node = Command::new("node")
        .arg(browser_dir().join("dashboard.spec.mjs"))
        .current_dir(browser_dir())
        .env("ZC_URL", format!("http://127.0.0.1:{}", gw.port))
        .env("ZC_CODE", &code)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawning node");
    let mut to_node = node.stdin.take().unwrap();
    let from_node = BufReader::new(node.stdout.take().unwrap());
    for line in from_node.lines() {
        let Ok(line) = line else { break };
        if line == "RESTART" {
            gw.daemon.kill9();
            gw.daemon = Daemon::builder().config_dir(gw.dir.config_dir()).spawn();
            writeln!(to_node, "RESTARTED").unwrap();
        } else {
            eprintln!("spec: {line}");
        }
    }
    let status = node.wait().expect("waiting for node");
    assert!(status.success(), "dashboard.spec.mjs failed: {status}");
    let log = gw.daemon.log.text();
    assert!(!log.contains("zc_"), "a token reached the log");
}
