//! `zeroclaw config edit` with `EDITOR` a script that rewrites the copy: committed
//! through the daemon (`config/replace`) when one runs, directly when none does; an invalid
//! text refused with every error and the file untouched; the copy private and removed.

// Unix only: $EDITOR is an executable shell script, and a pseudo-terminal under tmux.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::start::{start, write_config, Env, ECHO_ONLY};
use common::users::config_bytes;
use common::{hermetic_env, run_cli_code, TestDir, BIN};
use serde_json::{json, Value};

/// An editor script in `dir`: records the copy's path and mode in `<dir>/seen`, then runs
/// `body` with the copy as `$1`.
fn editor(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("editor.sh");
    let seen = dir.join("seen");
    let script = format!(
        "#!/bin/sh\nprintf '%s %s\\n' \"$1\" \"$(stat -c %a \"$1\")\" >> '{}'\n{body}\n",
        seen.display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `zeroclaw --config-dir CFG config edit ARGS…` with `EDITOR` = `script`: (status, out, err).
fn config_edit(cfg: &Path, script: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(BIN);
    hermetic_env(&mut cmd, cfg.parent().unwrap());
    cmd.env_remove("VISUAL")
        .env("EDITOR", script)
        .env("NO_COLOR", "1")
        .arg("--config-dir")
        .arg(cfg)
        .args(["config", "edit"])
        .args(args);
    run_cli_code(cmd)
}

/// The copies the editor saw: (path, mode); each must be gone now.
fn copies(dir: &Path) -> Vec<(String, String)> {
    let seen = std::fs::read_to_string(dir.join("seen")).unwrap_or_default();
    seen.lines()
        .map(|l| {
            let (p, m) = l.rsplit_once(' ').unwrap();
            assert!(!Path::new(p).exists(), "the copy {p} was left behind");
            (p.to_owned(), m.to_owned())
        })
        .collect()
}

fn get(env: &Env, prop: &str) -> Value {
    env.client().ok("config/get", json!({ "prop": prop }))["value"].clone()
}

#[test]
fn an_edit_is_committed_through_the_running_daemon() {
    let env = start(ECHO_ONLY);
    let script = editor(
        env.dir.path(),
        "printf '# mine\\n[daemon]\\nask_timeout_secs = 7\\n' >> \"$1\"",
    );
    let (code, out, err) = config_edit(&env.config_dir, &script, &[]);
    assert_eq!(code, Some(0), "{out} {err}");
    assert_eq!(out, "config.toml saved; the daemon runs it now\n");
    let want = format!("{ECHO_ONLY}# mine\n[daemon]\nask_timeout_secs = 7\n");
    assert_eq!(config_bytes(&env.config_dir), want.as_bytes());
    assert_eq!(get(&env, "daemon.ask_timeout_secs"), 7);
    let seen = copies(env.dir.path());
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1, "600", "the copy is private");
    assert!(!seen[0].0.starts_with(&*env.config_dir.to_string_lossy()));

    // --json: one document; an editor that changes nothing changes nothing.
    let script = editor(env.dir.path(), "sed -i 's/= 7/= 8/' \"$1\"");
    let (code, out, _) = config_edit(&env.config_dir, &script, &["--json"]);
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let text = want.replace("= 7", "= 8");
    assert_eq!(
        v,
        json!({"changed": true, "via": "daemon", "sha256": common::users::digest(&text)})
    );
    let script = editor(env.dir.path(), "true");
    let (code, out, _) = config_edit(&env.config_dir, &script, &[]);
    assert_eq!((code, out.as_str()), (Some(0), "config.toml unchanged\n"));
    assert_eq!(config_bytes(&env.config_dir), text.as_bytes());
}

#[test]
fn an_invalid_edit_is_refused_with_every_error_and_the_file_kept() {
    let env = start(ECHO_ONLY);
    let script = editor(
        env.dir.path(),
        "printf 'chunk_chars = 0\\nnope = 1\\n' >> \"$1\"",
    );
    let (code, out, err) = config_edit(&env.config_dir, &script, &[]);
    assert_eq!((code, out.as_str()), (Some(1), ""), "{err}");
    assert_eq!(
        err,
        "zeroclaw: config.toml not saved: 1 error\n  invalid configuration: agents.echo.nope: unknown key\n"
    );
    assert_eq!(config_bytes(&env.config_dir), ECHO_ONLY.as_bytes());

    let script = editor(
        env.dir.path(),
        "printf '[daemon]\\nask_timeout_secs = 0\\nupload_idle_secs = 0\\n' >> \"$1\"",
    );
    let (code, _, err) = config_edit(&env.config_dir, &script, &["--json"]);
    assert_eq!(code, Some(1));
    let e: Value = serde_json::from_str(err.trim()).unwrap();
    assert_eq!(
        e["data"]["errors"],
        json!([
            "invalid configuration: daemon.ask_timeout_secs: must be at least 1",
            "invalid configuration: daemon.upload_idle_secs: must be at least 1"
        ])
    );
    assert_eq!(config_bytes(&env.config_dir), ECHO_ONLY.as_bytes());

    // An editor that fails: nothing happens.
    let script = editor(env.dir.path(), "echo x >> \"$1\"; exit 3");
    let (code, _, err) = config_edit(&env.config_dir, &script, &[]);
    assert_eq!(code, Some(1));
    assert!(err.contains("exited with exit status: 3"), "{err}");
    assert_eq!(config_bytes(&env.config_dir), ECHO_ONLY.as_bytes());
    assert_eq!(copies(env.dir.path()).len(), 3);
}

#[test]
fn without_a_daemon_the_file_is_checked_and_replaced_here() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(&cfg, ECHO_ONLY);
    let script = editor(
        dir.path(),
        "sed -i 's/echo\"/echo\"\\nchunk_chars = 4/' \"$1\"",
    );
    let (code, out, err) = config_edit(&cfg, &script, &[]);
    assert_eq!(code, Some(0), "{out} {err}");
    assert_eq!(
        out,
        "config.toml saved; no daemon is running; it is read at the next start\n"
    );
    let want = format!("{ECHO_ONLY}chunk_chars = 4\n");
    assert_eq!(config_bytes(&cfg), want.as_bytes());
    let mode = std::fs::metadata(cfg.join("config.toml"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let script = editor(dir.path(), "sed -i 's/= 4/= 0/' \"$1\"");
    let (code, _, err) = config_edit(&cfg, &script, &[]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("invalid configuration: agents.echo.chunk_chars: must be at least 1"),
        "{err}"
    );
    assert_eq!(config_bytes(&cfg), want.as_bytes());
}

#[test]
fn on_a_terminal_an_invalid_edit_can_be_edited_again() {
    if !common::tty::available() {
        println!("SKIPPED on_a_terminal_an_invalid_edit_can_be_edited_again: no tmux");
        return;
    }
    let env = start(ECHO_ONLY);
    // First round: a mistake; second round: the copy still holds it, and it is fixed.
    let script = editor(
        env.dir.path(),
        "if grep -q 'chunk_chars = 0' \"$1\"; then sed -i 's/chunk_chars = 0/chunk_chars = 5/' \"$1\"; \
         else echo 'chunk_chars = 0' >> \"$1\"; fi",
    );
    let home = env.dir.path().to_string_lossy().into_owned();
    let cfg = env.config_dir.to_string_lossy().into_owned();
    let path = std::env::var("PATH").unwrap_or_default();
    let tty = common::tty::Tty::spawn(
        &[BIN, "--config-dir", &cfg, "config", "edit"],
        &[
            ("PATH", &path),
            ("HOME", &home),
            ("EDITOR", &script.to_string_lossy()),
        ],
        env.dir.path(),
    );
    tty.wait_for("Edit again? [Y/n]");
    let screen = tty.screen();
    assert!(
        screen.contains("config.toml not saved: 1 error")
            && screen
                .contains("invalid configuration: agents.echo.chunk_chars: must be at least 1"),
        "{screen}"
    );
    assert_eq!(config_bytes(&env.config_dir), ECHO_ONLY.as_bytes());
    tty.line("y");
    tty.wait_for("config.toml saved; the daemon runs it now");
    assert_eq!(tty.wait_exit(), 0);
    let want = format!("{ECHO_ONLY}chunk_chars = 5\n");
    assert_eq!(config_bytes(&env.config_dir), want.as_bytes());
    assert_eq!(get(&env, "agents.echo.chunk_chars"), 5);
    // One copy, edited twice, then removed.
    let seen = copies(env.dir.path());
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], seen[1]);
}
