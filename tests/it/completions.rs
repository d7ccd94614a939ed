//! `zeroclaw completions bash|zsh|fish` and `zeroclaw man` print what the
//! shells and man can read, generated from the real command line.

// Unix only: checks the scripts with bash, fish and groff, and one test stops the daemon with SIGTERM.

use crate::common;

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

/// Completes the last word of `words` (after `zeroclaw`) the way bash does:
/// the script sourced, `_zeroclaw` called with the command, the word and the
/// one before it; COMPREPLY one a line. `None` when bash is not installed.
fn bash_complete(script: &str, cwd: &std::path::Path, words: &[&str]) -> Option<Vec<String>> {
    bash_complete_as(common::BIN, script, cwd, words)
}

/// As [`bash_complete`], with `program` as the command word (what the script runs for
/// `__complete`).
fn bash_complete_as(
    program: &str,
    script: &str,
    cwd: &std::path::Path,
    words: &[&str],
) -> Option<Vec<String>> {
    let dir = common::TestDir::new();
    let file = dir.path().join("completion.bash");
    std::fs::write(&file, script).expect("writing the script");
    let mut all = vec![program.to_owned()];
    all.extend(words.iter().map(|w| (*w).to_owned()));
    let quoted: Vec<String> = all.iter().map(|w| format!("'{w}'")).collect();
    let n = all.len() - 1;
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={n}; \
         _zeroclaw \"${{COMP_WORDS[0]}}\" \"${{COMP_WORDS[{n}]}}\" \"${{COMP_WORDS[{}]}}\"; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        file.display(),
        quoted.join(" "),
        n - 1
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(program)
        .current_dir(cwd)
        .env("HOME", dir.path())
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    got.sort();
    Some(got)
}

/// `--agent` completes the daemon's agent aliases, `--session`, `--resume`
/// and `sessions show|kill|delete` its session ids; never a file name.
#[test]
fn bash_completes_agents_and_sessions_from_the_daemon() {
    use common::start::{config_with, start};
    let mut env = start(&config_with(
        "[agents.tool]\nbackend = \"command\"\ncommand = [\"cat\"]\n",
    ));
    let mut c = env.client();
    c.new_session("sess-one", "chat");
    c.new_session("sess-two", "acp");
    // A file that file-name completion would offer.
    std::fs::write(env.dir.path().join("echo-notes.txt"), "x").expect("a file");
    let cfg = env.config_dir.to_string_lossy().into_owned();
    let script = zeroclaw(&["completions", "bash"]);
    let cwd = env.dir.path().to_path_buf();
    let cwd = cwd.as_path();
    let Some(agents) = bash_complete(&script, cwd, &["--config-dir", &cfg, "chat", "--agent", ""])
    else {
        skip_test!("bash is not installed");
    };
    assert_eq!(agents, ["echo", "tool"]);
    let ask = |words: &[&str]| {
        let mut all = vec!["--config-dir", cfg.as_str()];
        all.extend_from_slice(words);
        bash_complete(&script, cwd, &all).expect("bash")
    };
    assert_eq!(ask(&["run", "--agent", "t"]), ["tool"]);
    assert_eq!(ask(&["chat", "--agent", "e"]), ["echo"]);
    assert_eq!(ask(&["doctor", "--agent", ""]), ["echo", "tool"]);
    for words in [
        &["chat", "--resume", ""][..],
        &["chat", "--session", "sess"],
        &["sessions", "show", ""],
        &["sessions", "kill", "s"],
        &["sessions", "delete", ""],
        &["run", "--session", ""],
    ] {
        assert_eq!(ask(words), ["sess-one", "sess-two"], "{words:?}");
    }
    assert_eq!(ask(&["sessions", "kill", "sess-t"]), ["sess-two"]);
    // The static part still works: subcommands, options.
    let plain = |words: &[&str]| bash_complete(&script, cwd, words).expect("bash");
    assert_eq!(plain(&["sessi"]), ["sessions"]);
    assert_eq!(plain(&["logs", "--fo"]), ["--follow"]);
    // The hidden helper is never offered.
    let all = plain(&[""]);
    assert!(all.contains(&"doctor".to_owned()), "{all:?}");
    assert!(!all.iter().any(|w| w.contains("__complete")), "{all:?}");
    // No daemon: agents from config.toml, no session ids, and no file names.
    drop(c);
    env.signal(libc::SIGTERM);
    assert!(env.daemon.wait_exit(common::EXIT_TIMEOUT).is_some());
    assert_eq!(ask(&["chat", "--agent", ""]), ["echo", "tool"]);
    assert_eq!(ask(&["chat", "--resume", ""]), Vec::<String>::new());
    assert_eq!(ask(&["chat", "--agent", "echo-"]), Vec::<String>::new());
}

/// The hidden helper the scripts call: one word a line, exit 0 even with no
/// daemon; zsh and fish scripts call it for the same arguments.
#[test]
fn the_completion_helper_and_the_other_shells() {
    let (env, mut c) = common::start::echo_client();
    c.new_session("helper-1", "chat");
    let mut cmd = env.cli();
    cmd.args(["__complete", "sessions"]);
    let (status, out, err) = run_cli(cmd);
    assert!(status.success(), "{err}");
    assert_eq!(out, "helper-1\n");
    let mut cmd = env.cli();
    cmd.args(["__complete", "agents"]);
    let (status, out, _) = run_cli(cmd);
    assert!(status.success());
    assert_eq!(out, "echo\n");
    let dir = common::TestDir::new();
    let mut cmd = Command::new(common::BIN);
    common::hermetic_env(&mut cmd, dir.path());
    cmd.arg("--config-dir")
        .arg(dir.config_dir())
        .args(["__complete", "sessions"]);
    let (status, out, err) = run_cli(cmd);
    assert!(status.success(), "{err}");
    assert_eq!((out.as_str(), err.as_str()), ("", ""));
    let zsh = zeroclaw(&["completions", "zsh"]);
    assert!(zsh.contains("]:ALIAS:_zeroclaw_dyn_agents' \\\n"), "{zsh}");
    assert!(zsh.contains("]:ID:_zeroclaw_dyn_sessions' \\\n"), "{zsh}");
    assert!(zsh.contains("':id -- The session id:_zeroclaw_dyn_sessions'"));
    assert!(zsh.contains("zeroclaw __complete agents"));
    assert!(!zsh.contains(":ALIAS:_default"), "{zsh}");
    let fish = zeroclaw(&["completions", "fish"]);
    for line in fish.lines().filter(|l| l.contains(" -l agent ")) {
        assert!(
            line.ends_with(" -r -f -a \"(zeroclaw __complete agents 2>/dev/null)\""),
            "{line}"
        );
    }
    assert!(fish.contains(
        "__fish_seen_subcommand_from show kill delete\" -f -a \"(zeroclaw __complete sessions"
    ));
    assert!(!fish.contains("-a \"__complete\""), "{fish}");
}

/// `zeroclaw man --dir DIR` writes the main page and one page for every
/// subcommand; every page a SUBCOMMANDS section names exists, and renders.
#[test]
fn man_pages_for_every_subcommand() {
    let dir = common::TestDir::new();
    let pages = dir.path().join("man1");
    let listed = zeroclaw(&["man", "--dir", &pages.to_string_lossy()]);
    let mut files: Vec<String> = std::fs::read_dir(&pages)
        .expect("the pages")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    files.sort();
    assert_eq!(listed.lines().count(), files.len(), "{listed}");
    for sub in [
        "zeroclaw.1",
        "zeroclaw-chat.1",
        "zeroclaw-logs.1",
        "zeroclaw-doctor.1",
        "zeroclaw-sessions.1",
        "zeroclaw-sessions-show.1",
        "zeroclaw-config-set.1",
        "zeroclaw-man.1",
    ] {
        assert!(files.contains(&sub.to_owned()), "{sub} missing: {files:?}");
    }
    assert!(
        !files
            .iter()
            .any(|f| f.contains("help") || f.contains("__complete")),
        "{files:?}"
    );
    let mut named = 0;
    for f in &files {
        let page = std::fs::read_to_string(pages.join(f)).expect("a page");
        // `zeroclaw\-sessions\-show(1)`: the pages SUBCOMMANDS names.
        for word in page.split_whitespace() {
            if let Some(name) = word
                .strip_suffix("(1)")
                .filter(|n| n.starts_with("zeroclaw"))
            {
                let file = format!("{}.1", name.replace("\\-", "-"));
                assert!(pages.join(&file).is_file(), "{f} names {file}, not written");
                named += 1;
            }
        }
    }
    assert_eq!(
        named,
        files.len() - 1,
        "every page but the main one is named once"
    );
    // The page on stdout is the one written.
    let main = std::fs::read_to_string(pages.join("zeroclaw.1")).expect("main page");
    assert_eq!(zeroclaw(&["man"]), main);
    for f in &files {
        let Ok(out) = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(pages.join(f))
            .output()
        else {
            skip_test!("groff is not installed");
        };
        assert!(out.status.success(), "{f}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{f}");
    }
}

/// fish completes the same values through the same helper (`complete -C`
/// asks fish what it would offer); the daemon is found by
/// `ZEROCLAW_CONFIG_DIR`, `zeroclaw` on PATH.
#[test]
fn fish_completes_agents_and_sessions_from_the_daemon() {
    let (env, mut c) = common::start::echo_client();
    c.new_session("fish-1", "chat");
    let script = zeroclaw(&["completions", "fish"]);
    let file = env.dir.path().join("zeroclaw.fish");
    std::fs::write(&file, script).expect("writing the script");
    let bin_dir = std::path::Path::new(common::BIN)
        .parent()
        .expect("the binary's directory");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let complete = |line: &str| -> Option<Vec<String>> {
        let program = format!("source '{}'; complete -C '{line}'", file.display());
        let out = Command::new("fish")
            .arg("--no-config")
            .arg("-c")
            .arg(program)
            .current_dir(env.dir.path())
            .env("PATH", &path)
            .env("HOME", env.dir.path())
            .env("ZEROCLAW_CONFIG_DIR", &env.config_dir)
            .output()
            .ok()?;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut words: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
            .collect();
        words.sort();
        Some(words)
    };
    let Some(agents) = complete("zeroclaw chat --agent ") else {
        skip_test!("fish is not installed");
    };
    assert_eq!(agents, ["echo"]);
    assert_eq!(
        complete("zeroclaw sessions kill ").expect("fish"),
        ["fish-1"]
    );
    assert_eq!(
        complete("zeroclaw chat --resume f").expect("fish"),
        ["fish-1"]
    );
    assert_eq!(complete("zeroclaw sessi").expect("fish"), ["sessions"]);
}

/// Files a glob, a brace or a tilde would turn a candidate into, in the directory Tab is
/// pressed in.
fn glob_bait(cwd: &std::path::Path) {
    for name in ["abc", "a-b", "x", "y"] {
        std::fs::write(cwd.join(name), "x").expect("a file");
    }
}

/// No daemon: the aliases come from `config.toml` as a person wrote it, and only those the
/// config's alias rule admits are offered, as they are (no glob, brace or tilde expansion).
#[test]
fn bash_offers_only_valid_aliases_from_config_toml_and_never_expands_them() {
    let dir = common::TestDir::new();
    let cfg = dir.config_dir();
    common::start::write_config(
        &cfg,
        "schema_version = 1\n[agents.echo]\nbackend = \"echo\"\n[agents.\"a*\"]\nbackend = \"echo\"\n\
         [agents.\"{x,y}\"]\nbackend = \"echo\"\n[agents.\"~root\"]\nbackend = \"echo\"\n\
         [agents.\"a?\"]\nbackend = \"echo\"\n",
    );
    let cwd = dir.path().join("work");
    std::fs::create_dir(&cwd).expect("a working directory");
    glob_bait(&cwd);
    let cfg = cfg.to_string_lossy().into_owned();
    let script = zeroclaw(&["completions", "bash"]);
    let ask = |cur: &str| {
        bash_complete(
            &script,
            &cwd,
            &["--config-dir", &cfg, "chat", "--agent", cur],
        )
    };
    let Some(all) = ask("") else {
        skip_test!("bash is not installed");
    };
    assert_eq!(all, ["echo"]);
    assert_eq!(ask("a").expect("bash"), Vec::<String>::new());
    assert_eq!(ask("~").expect("bash"), Vec::<String>::new());
    assert_eq!(ask("{").expect("bash"), Vec::<String>::new());
}

/// Whatever the helper prints (an older or a foreign `zeroclaw`), the script takes each line
/// literally: no glob, brace, tilde or command expansion, and nothing but plain words offered.
#[test]
fn the_bash_script_takes_candidates_literally() {
    let dir = common::TestDir::new();
    let helper = dir.path().join("fake-zeroclaw");
    std::fs::write(
        &helper,
        "#!/bin/sh\nprintf '%s\\n' 'a*' '{x,y}' '~root' '$(touch pwned)' '`touch pwned2`' 'plain-1' 'a-b'\n",
    )
    .expect("writing the helper");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755))
            .expect("chmod the helper");
    }
    let cwd = dir.path().join("work");
    std::fs::create_dir(&cwd).expect("a working directory");
    glob_bait(&cwd);
    let script = zeroclaw(&["completions", "bash"]);
    let helper = helper.to_string_lossy().into_owned();
    let ask = |words: &[&str]| bash_complete_as(&helper, &script, &cwd, words);
    let Some(all) = ask(&["chat", "--agent", ""]) else {
        skip_test!("bash is not installed");
    };
    assert_eq!(all, ["a-b", "plain-1"]);
    assert_eq!(ask(&["chat", "--agent", "a"]).expect("bash"), ["a-b"]);
    assert_eq!(
        ask(&["sessions", "show", ""]).expect("bash"),
        ["a-b", "plain-1"]
    );
    assert!(!cwd.join("pwned").exists() && !cwd.join("pwned2").exists());
}
