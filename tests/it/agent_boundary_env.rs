//! The agent boundary, credentials: every process the
//! daemon starts gets its agent's `env` on top of the minimal base
//! (docs/agents.md "Environment"), never another agent's credential: not an
//! ACP agent, not its terminals, not the openai `shell` tool (nor through
//! `/proc/<daemon>/environ`: the daemon is non-dumpable), not a `command`
//! agent (which keeps the daemon's environment minus every credential);
//! and an `api_key_file` keeps a key out of the daemon's environment (and
//! is masked like any key).

// Unix only: reads /proc/<pid>/environ, checks geteuid, and runs POSIX sh commands in terminals and the shell tool.

use crate::common;

use serde_json::{json, Value};

use common::acp_agent::{acp_config, new_acp_session, toml_str};
use common::openai::{self, KEY, KEY_ENV};
use common::openai_server::{sse, OpenAiServer, Reply};
use common::start::write_config;
use common::{DaemonBuilder, TestDir};

/// What every child may get besides its own `env` (docs/agents.md).
fn in_base(name: &str) -> bool {
    const BASE: &[&str] = &[
        "HOME",
        "LANG",
        "LANGUAGE",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "TMPDIR",
        "TZ",
        "USER",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_RUNTIME_DIR",
        "XDG_STATE_HOME",
    ];
    BASE.contains(&name) || name.starts_with("LC_")
}

/// The test agent as `acp` (own `env`, terminals), the openai agent `m`
/// whose key is `KEY_ENV`, and the command agent `cmd` running `env`; the
/// daemon's environment holds the key, `ACP_OWN` and `ZC_PLAIN`.
fn daemon() -> (common::Daemon, TestDir) {
    let server = OpenAiServer::start();
    let config = format!(
        "{}\n[agents.m]\nbackend = \"openai\"\nmodel = \"x\"\nbase_url = {}\n\
         api_key_env = \"{KEY_ENV}\"\n\n[agents.cmd]\nbackend = \"command\"\n\
         command = [\"env\"]\n",
        // Shorter than 8 bytes: secrets that long are masked in every frame.
        acp_config("env = { ACP_OWN = \"own-val\" }\nterminal = true", ""),
        toml_str(&server.base_url()),
    );
    let dir = TestDir::new();
    write_config(&dir.config_dir(), &config);
    let d = DaemonBuilder::new()
        .config_dir(dir.config_dir())
        .env(KEY_ENV, KEY)
        .env("ACP_OWN", "daemon-value")
        .env("ZC_PLAIN", "plain")
        .spawn();
    (d, dir)
}

/// `NAME=VALUE` pairs of `env`-style text (space or newline separated).
fn names(text: &str) -> Vec<String> {
    text.split([' ', '\n'])
        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k.to_owned()))
        .collect()
}

#[test]
fn an_acp_agent_and_its_terminals_get_the_base_and_their_own_env_only() {
    let (d, _dir) = daemon();
    let mut rpc = d.client();
    new_acp_session(&mut rpc, "s-1", "chat");
    let said = rpc.prompt_ok("s-1", "env").text();
    let said = said.strip_prefix("env: ").expect("the agent's environment");
    assert!(!said.contains(KEY) && !said.contains(KEY_ENV), "{said}");
    assert!(said.contains("ACP_OWN=own-val"), "{said}");
    let own = ["ACP_OWN", "ZEROCLAW_SESSION_ID", "ZEROCLAW_AGENT_ALIAS"];
    for name in names(said) {
        assert!(
            in_base(&name) || own.contains(&name.as_str()),
            "{name} in {said}"
        );
    }
    // Its terminal: the base, the agent's `env`, the request's `env`.
    let create = json!({"command": "env", "env": [{"name": "REQ", "value": "r"}]});
    let out = rpc.prompt_ok("s-1", &format!("term {create}")).text();
    assert!(
        out.starts_with(r#"exit {"exitCode":0,"signal":null}"#),
        "{out}"
    );
    assert!(!out.contains(KEY) && !out.contains(KEY_ENV), "{out}");
    assert!(
        out.contains("ACP_OWN=own-val") && out.contains("REQ=r"),
        "{out}"
    );
    assert!(!out.contains("ZC_PLAIN"), "{out}");
}

#[test]
fn a_command_agent_keeps_the_daemons_environment_without_any_credential() {
    let (d, _dir) = daemon();
    let mut c = d.client();
    c.new_session_of("cmd", "s-2", "chat");
    let out = c.prompt_ok("s-2", "hi").text();
    // Version 1: the daemon's environment (§10.4) …
    assert!(out.contains("ZC_PLAIN=plain\n"), "{out}");
    assert!(out.contains("ZEROCLAW_AGENT_ALIAS=cmd\n"), "{out}");
    // … without the openai key nor the names of an ACP agent's `env`.
    assert!(!out.contains(KEY) && !out.contains(KEY_ENV), "{out}");
    assert!(!out.contains("ACP_OWN"), "{out}");
}

/// The model asks for one `shell` call running `script`, then answers; the
/// tool's output.
fn shell_output(server: &OpenAiServer, c: &mut common::Client, script: &str) -> String {
    let args = json!({ "command": script }).to_string();
    server.push(Reply::Stream(vec![
        sse::role(),
        sse::tool_start(0, "call_1", "shell"),
        sse::tool_args(0, &args),
        sse::finish("tool_calls"),
        sse::usage(5, 5),
        sse::done(),
    ]));
    server.push(Reply::Stream(sse::answer(&["done"])));
    let t = c.prompt_ok("s-1", "run it");
    let results: Vec<Value> = t
        .updates()
        .into_iter()
        .filter(|u| u["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 1, "{results:?}");
    results[0]["rawOutput"]
        .as_str()
        .expect("the output")
        .to_owned()
}

#[test]
fn the_shell_tool_sees_neither_the_key_variable_nor_the_daemons_environ() {
    let (server, _d, mut c, _ws) = openai::session("approval = \"never\"", "acp");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    // Root reads any process's environ (dumpable or not): then only `env`.
    let script = if root {
        "env"
    } else {
        "env; echo ---; cat /proc/$PPID/environ | tr '\\0' '\\n'"
    };
    let out = shell_output(&server, &mut c, script);
    assert!(out.starts_with("exit status "), "{out}");
    assert!(!out.contains(KEY) && !out.contains(KEY_ENV), "{out}");
    for name in names(out.split("--- stdout\n").nth(1).unwrap_or("")) {
        assert!(
            in_base(&name) || ["PWD", "SHLVL", "_"].contains(&name.as_str()),
            "{name}"
        );
    }
    if root {
        println!(
            "SKIPPED the_shell_tool_sees_neither_the_key_variable_nor_the_daemons_environ \
             (its /proc/<daemon>/environ part): root reads every process's environ"
        );
    } else {
        // The daemon is not dumpable: its environ is closed to its own uid.
        assert!(out.contains("environ: Permission denied"), "{out}");
    }
}

#[test]
fn an_api_key_file_keeps_the_key_out_of_the_daemons_environment() {
    const FILE_KEY: &str = "sk-from-a-file-0123";
    let server = OpenAiServer::start();
    let dir = TestDir::new();
    let key = dir.path().join("key");
    std::fs::write(&key, format!("{FILE_KEY}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = format!(
        "schema_version = 1\n\n[agents.m]\nbackend = \"openai\"\nmodel = \"x\"\n\
         base_url = {}\napi_key_file = {}\napproval = \"never\"\n",
        toml_str(&server.base_url()),
        toml_str(&key.to_string_lossy())
    );
    write_config(&dir.config_dir(), &config);
    let d = DaemonBuilder::new().config_dir(dir.config_dir()).spawn();
    let mut c = d.client();
    c.new_session_of("m", "s-1", "acp");
    // Even a reader that may read the daemon's environ does not find it.
    let out = shell_output(&server, &mut c, "cat /proc/$PPID/environ | tr '\\0' '\\n'");
    assert!(!out.contains(FILE_KEY), "{out}");
    let sent = server.wait_requests(2);
    assert_eq!(
        sent[0].header("authorization"),
        Some(format!("Bearer {FILE_KEY}").as_str())
    );
    // A model server that says the key back: the key from the file is a
    // secret like one from the environment, masked in every answer.
    server.push(Reply::Stream(sse::answer(&["the key is ", FILE_KEY])));
    let said = c.prompt_ok("s-1", "say it").text();
    assert_eq!(said, "the key is ****");
}
