//! `zeroclaw completions bash|zsh|fish` and `zeroclaw man` print what the
//! shells and man can read, generated from the real command line.

// Not in the Windows suite (run on Unix; docs/operations.md lists what runs under Wine).
#![cfg(unix)]

#[macro_use]
mod common;

use std::process::Command;

use common::run_cli;

fn zeroclaw(args: &[&str]) -> String {
    let mut cmd = Command::new(common::BIN);
    cmd.args(args);
    let (status, out, err) = run_cli(cmd);
    assert!(status.success(), "{args:?}: {err}");
    out
}

/// Runs `shell -n` on `script`; `None` when the shell is not installed.
fn syntax_check(shell: &str, script: &str) -> Option<(bool, String)> {
    let dir = common::TestDir::new();
    let file = dir.path().join("completion");
    std::fs::write(&file, script).expect("writing the script");
    let out = Command::new(shell).arg("-n").arg(&file).output().ok()?;
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

#[test]
fn bash_completion_parses_and_knows_the_commands() {
    let script = zeroclaw(&["completions", "bash"]);
    for word in ["chat", "logs", "doctor", "daemon", "--agent", "--follow"] {
        assert!(script.contains(word), "{word} missing");
    }
    assert!(script.contains("complete -F _zeroclaw"), "{script}");
    match syntax_check("bash", &script) {
        Some((ok, err)) => assert!(ok, "bash -n: {err}"),
        None => skip_test!("bash is not installed"),
    }
}

#[test]
fn zsh_and_fish_completions() {
    let zsh = zeroclaw(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef zeroclaw\n"), "{zsh}");
    let fish = zeroclaw(&["completions", "fish"]);
    assert!(fish.contains("complete -c zeroclaw"), "{fish}");
    for (shell, script) in [("zsh", &zsh), ("fish", &fish)] {
        match syntax_check(shell, script) {
            Some((ok, err)) => assert!(ok, "{shell} -n: {err}"),
            None => common::skip(&format!("{shell} is not installed: syntax not checked")),
        }
    }
}

#[test]
fn man_page_renders() {
    let page = zeroclaw(&["man"]);
    assert!(page.contains(".TH zeroclaw 1"), "{page}");
    assert!(page.contains(".SH NAME") && page.contains("chat"), "{page}");
    // groff renders it without a warning where it is installed.
    let Ok(mut child) = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        skip_test!("groff is not installed");
    };
    use std::io::Write;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(page.as_bytes())
        .expect("feeding groff");
    let out = child.wait_with_output().expect("groff");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn the_everyday_commands_complete_and_are_in_the_man_page() {
    let bash = zeroclaw(&["completions", "bash"]);
    let fish = zeroclaw(&["completions", "fish"]);
    for word in ["stop", "sessions", "agents", "config", "run"] {
        assert!(bash.contains(word), "bash: {word} missing");
        assert!(fish.contains(word), "fish: {word} missing");
    }
    assert!(bash.contains("--approve"), "bash: run --approve missing");
    // The nested subcommands, as fish names them.
    for sub in ["show", "kill", "delete", "get", "set"] {
        assert!(
            fish.contains(&format!("-a \"{sub}\"")),
            "fish: {sub} missing"
        );
    }
    let page = zeroclaw(&["man"]);
    for word in ["stop", "sessions", "agents", "config", "run"] {
        assert!(
            page.contains(&format!("zeroclaw\\-{word}")),
            "man: {word} missing"
        );
    }
}
